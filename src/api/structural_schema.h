#pragma once
// StructuralSchema: the OpenAPI v3 schema of a CustomResourceDefinition version, read as the API
// server reads a structural schema, and an object checked against it the way the API server
// checks a custom resource on create (README, "Input rules and limits"; docs/cli.md, validate):
//
//   - types (`object`, `array`, `string`, `integer`, `number`, `boolean`; an integral number is an
//     integer), `x-kubernetes-int-or-string` (an integer or a string);
//   - `enum`, `pattern` (api/schema_regex.h: RE2 in linear time), `format` (date-time),
//     `minLength`/`maxLength`, `minItems`/`maxItems`, `minimum`/`maximum`;
//   - `required`; `nullable` (a null is accepted where nullable; elsewhere a null object field
//     is pruned, as the API server prunes it before validating, so a required one is missing);
//   - `x-kubernetes-list-type: map` (the items' `x-kubernetes-list-map-keys`, with their
//     defaults, are unique) and `set` (unique items);
//   - unknown fields: a field of an object that neither its `properties`, its
//     `additionalProperties` nor `x-kubernetes-preserve-unknown-fields` admits. The API server
//     prunes them silently, or refuses them under strict field validation (kubectl's default):
//     they are reported apart, as "path: unknown field \"name\"", so the caller decides.
//
// What it does not read: CEL rules (`x-kubernetes-validations`; the CRD's one rule is about
// updates), `anyOf`/`oneOf`/`allOf` beyond the int-or-string form, `x-kubernetes-embedded-resource`
// (metadata at the root is Kubernetes' ObjectMeta, checked by the TFJob decoder).
//
// The one source of the TFJob's schema is the CRD the binary carries (api/crd.h): TfJobSchema().
// Pure: no I/O. Bounded: each value is visited at most once and the walk is only as deep as the
// schema (never deeper than the input), at most kMaxSchemaErrors errors and
// kMaxUnknownFieldMessages unknown fields are kept, and values in messages are cut short.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/field_error.h"
#include "api/schema_regex.h"
#include "common/status.h"

namespace tfjob::api {

// At most this many errors per object; one more says how many were left out.
inline constexpr size_t kMaxSchemaErrors = 100;

struct SchemaNode {
  // kNone: no `type` (int-or-string, or a node that admits anything).
  enum class Type { kNone, kObject, kArray, kString, kInteger, kNumber, kBoolean };
  Type type = Type::kNone;
  bool int_or_string = false;     // x-kubernetes-int-or-string
  bool nullable = false;          // nullable
  bool preserve_unknown = false;  // x-kubernetes-preserve-unknown-fields
  std::string format;
  std::optional<SchemaRegex> pattern;
  std::vector<nlohmann::json> enum_values;
  std::optional<int64_t> min_length, max_length, min_items, max_items;
  std::optional<double> minimum, maximum;
  std::optional<nlohmann::json> default_value;
  std::vector<std::string> required;
  std::map<std::string, std::unique_ptr<SchemaNode>, std::less<>> properties;
  std::unique_ptr<SchemaNode> additional_properties;  // the schema of every value of a map
  std::unique_ptr<SchemaNode> items;
  std::string list_type;  // "", "atomic", "set", "map"
  std::vector<std::string> list_map_keys;
};

// What an object breaks, in the order of its fields (keys sorted, as nlohmann::json keeps them).
struct SchemaFindings {
  FieldErrors errors;                // refused by the API server
  std::vector<std::string> unknown;  // "path: unknown field \"name\"" (pruned, or refused when strict)
  size_t errors_left_out = 0;        // beyond kMaxSchemaErrors
  size_t unknown_left_out = 0;       // beyond kMaxUnknownFieldMessages (api/known_fields.h)
};

class StructuralSchema {
 public:
  // Reads an openAPIV3Schema. kInvalidArgument naming the schema path when it is not one this
  // reader understands (a `type` it does not know, a `pattern` outside SchemaRegex's subset), so
  // a schema is never half-applied.
  static StatusOr<StructuralSchema> Parse(const nlohmann::json& open_api_v3_schema);

  const SchemaNode& root() const { return *root_; }

  // Checks `object` (the whole custom resource) against the schema. Fields of the root named in
  // `skip` are not checked (for a TFJob: metadata, which is ObjectMeta, and status, which the
  // API server drops on create).
  SchemaFindings Check(const nlohmann::json& object, const std::vector<std::string>& skip = {}) const;

 private:
  std::shared_ptr<const SchemaNode> root_;
};

// The schema of the TFJob CRD the binary carries (api/crd.h, config/crd/kubeflow.org_tfjobs.yaml),
// version v1, read once. The CRD is ours and its reading is tested: a CRD that cannot be read is a
// broken build, so this TFJOB_CHECKs.
const StructuralSchema& TfJobSchema();

// TfJobSchema().Check(tfjob) without metadata and status.
SchemaFindings CheckTfJobSchema(const nlohmann::json& tfjob);

}  // namespace tfjob::api
