#include "api/structural_schema.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "api/crd.h"
#include "api/known_fields.h"
#include "api/manifest.h"
#include "api/time.h"

namespace tfjob::api {
namespace {

using nlohmann::json;
using Type = SchemaNode::Type;

// Values in messages: at most this many bytes of a string, and objects or lists of at most this
// many nodes, so that a hostile 8 MiB value costs one short line.
constexpr size_t kMaxShownBytes = 64;
constexpr size_t kMaxShownNodes = 16;
// The schema's own nesting (the CRD has about 25 levels); deeper is not a schema we wrote.
constexpr int kMaxSchemaDepth = 64;

StatusOr<Type> ParseType(const json& s, const std::string& path) {
  auto t = s.find("type");
  if (t == s.end()) return Type::kNone;
  static const std::map<std::string, Type, std::less<>> kTypes = {
      {"object", Type::kObject},   {"array", Type::kArray},   {"string", Type::kString},
      {"integer", Type::kInteger}, {"number", Type::kNumber}, {"boolean", Type::kBoolean}};
  if (t->is_string())
    if (auto it = kTypes.find(t->get_ref<const std::string&>()); it != kTypes.end()) return it->second;
  return InvalidArgumentError(path + ".type: not a structural schema type: " + t->dump());
}

template <typename T>
std::optional<T> NumberAt(const json& s, const char* key) {
  auto it = s.find(key);
  if (it == s.end() || !it->is_number()) return std::nullopt;
  return it->get<T>();
}

bool FlagAt(const json& s, const char* key) {
  auto it = s.find(key);
  return it != s.end() && it->is_boolean() && it->get<bool>();
}

std::vector<std::string> StringsAt(const json& s, const char* key) {
  std::vector<std::string> out;
  auto it = s.find(key);
  if (it != s.end() && it->is_array())
    for (const json& v : *it)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

StatusOr<std::unique_ptr<SchemaNode>> ParseNode(const json& s, const std::string& path, int depth);

// properties, additionalProperties and items: the children of a node.
Status ParseChildren(const json& s, const std::string& path, int depth, SchemaNode& n) {
  if (auto p = s.find("properties"); p != s.end() && p->is_object()) {
    for (auto it = p->begin(); it != p->end(); ++it) {
      TFJOB_ASSIGN_OR_RETURN(n.properties[it.key()], ParseNode(*it, path + ".properties." + it.key(), depth + 1));
    }
  }
  if (auto a = s.find("additionalProperties"); a != s.end() && a->is_object()) {
    TFJOB_ASSIGN_OR_RETURN(n.additional_properties, ParseNode(*a, path + ".additionalProperties", depth + 1));
  }
  if (auto a = s.find("additionalProperties"); a != s.end() && a->is_boolean() && a->get<bool>())
    n.preserve_unknown = true;  // additionalProperties: true admits any field, as the API server reads it
  if (auto i = s.find("items"); i != s.end() && i->is_object()) {
    TFJOB_ASSIGN_OR_RETURN(n.items, ParseNode(*i, path + ".items", depth + 1));
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<SchemaNode>> ParseNode(const json& s, const std::string& path, int depth) {
  if (!s.is_object()) return InvalidArgumentError(path + ": a schema must be an object");
  if (depth > kMaxSchemaDepth) return InvalidArgumentError(path + ": the schema is nested too deeply");
  auto n = std::make_unique<SchemaNode>();
  TFJOB_ASSIGN_OR_RETURN(n->type, ParseType(s, path));
  n->int_or_string = FlagAt(s, "x-kubernetes-int-or-string");
  n->nullable = FlagAt(s, "nullable");
  n->preserve_unknown = FlagAt(s, "x-kubernetes-preserve-unknown-fields");
  if (auto f = s.find("format"); f != s.end() && f->is_string()) n->format = f->get<std::string>();
  if (auto p = s.find("pattern"); p != s.end() && p->is_string()) {
    n->pattern = SchemaRegex::Compile(p->get<std::string>());
    if (!n->pattern) return InvalidArgumentError(path + ".pattern: not understood: " + p->dump());
  }
  if (auto e = s.find("enum"); e != s.end() && e->is_array())
    for (const json& v : *e) n->enum_values.push_back(v);
  n->min_length = NumberAt<int64_t>(s, "minLength");
  n->max_length = NumberAt<int64_t>(s, "maxLength");
  n->min_items = NumberAt<int64_t>(s, "minItems");
  n->max_items = NumberAt<int64_t>(s, "maxItems");
  n->minimum = NumberAt<double>(s, "minimum");
  n->maximum = NumberAt<double>(s, "maximum");
  if (auto d = s.find("default"); d != s.end()) n->default_value = *d;
  n->required = StringsAt(s, "required");
  if (auto l = s.find("x-kubernetes-list-type"); l != s.end() && l->is_string()) n->list_type = l->get<std::string>();
  n->list_map_keys = StringsAt(s, "x-kubernetes-list-map-keys");
  TFJOB_RETURN_IF_ERROR(ParseChildren(s, path, depth, *n));
  return n;
}

// The JSON type of a value as the schema names it: an integral number is an integer.
const char* TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: {
      double d = v.get<double>();
      // Integral and within 2^53, as the API server's JSON reader counts an integer.
      return std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= 9007199254740992.0 ? "integer" : "number";
    }
    default: return "binary";
  }
}

const char* TypeName(Type t) {
  switch (t) {
    case Type::kObject: return "object";
    case Type::kArray: return "array";
    case Type::kString: return "string";
    case Type::kInteger: return "integer";
    case Type::kNumber: return "number";
    case Type::kBoolean: return "boolean";
    case Type::kNone: break;
  }
  return "any";
}

bool TypeMatches(const SchemaNode& n, const json& v) {
  std::string_view actual = TypeOf(v);
  if (n.int_or_string) return actual == "integer" || actual == "string";
  if (n.type == Type::kNone) return true;
  if (n.type == Type::kNumber) return actual == "number" || actual == "integer";
  return actual == TypeName(n.type);
}

// Whether `v` has at most `budget` nodes (counting down through it; stops early).
bool Small(const json& v, size_t& budget) {
  if (budget == 0) return false;
  --budget;
  if (v.is_structured())
    for (const json& c : v)
      if (!Small(c, budget)) return false;
  return true;
}

// A value for a message, cut short: "\"lots\"", "1.5", {"a":"b"}, or {...} for a big object.
std::string ShortValue(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() <= kMaxShownBytes) return QuoteValue(s);
    size_t cut = kMaxShownBytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;  // whole code points
    return QuoteValue(s.substr(0, cut)) + "... (" + std::to_string(s.size()) + " bytes)";
  }
  size_t budget = kMaxShownNodes;
  if (v.is_structured() && !Small(v, budget)) return v.is_object() ? "{...}" : "[...]";
  std::string out = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (out.size() > 4 * kMaxShownBytes) return v.is_object() ? "{...}" : "[...]";
  return EscapeNonPrintable(out);
}

size_t RuneCount(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

std::string Number(double d) {
  json j = d;
  if (std::trunc(d) == d && std::fabs(d) < 9e15) j = static_cast<int64_t>(d);
  return j.dump();
}

class Checker {
 public:
  // `skip`: fields of the root object that are not checked.
  explicit Checker(const std::vector<std::string>& skip) : skip_(skip) {}

  SchemaFindings Finish() && { return std::move(findings_); }

  void Walk(const SchemaNode& n, const json& v, const std::string& path) {
    if (v.is_null() && n.nullable) return;
    if (!TypeMatches(n, v)) {
      std::string expected = n.int_or_string ? "integer or string" : TypeName(n.type);
      Error(Invalid(path, ShortValue(v), "must be of type " + expected));
      return;
    }
    if (!n.enum_values.empty() && std::find(n.enum_values.begin(), n.enum_values.end(), v) == n.enum_values.end()) {
      std::vector<std::string> supported;
      for (const json& e : n.enum_values) supported.push_back(e.is_string() ? e.get<std::string>() : e.dump());
      Error(NotSupported(path, ShortValue(v), supported));
    }
    if (v.is_string()) CheckString(n, v.get_ref<const std::string&>(), path);
    if (v.is_number()) CheckNumber(n, v.get<double>(), path);
    if (v.is_object()) WalkObject(n, v, path);
    if (v.is_array()) WalkArray(n, v, path);
  }

 private:
  void Error(FieldError e) {
    if (findings_.errors.size() >= kMaxSchemaErrors) {
      ++findings_.errors_left_out;
      return;
    }
    findings_.errors.push_back(std::move(e));
  }
  void Unknown(const std::string& path, const std::string& key) {
    if (findings_.unknown.size() >= kMaxUnknownFieldMessages) {
      ++findings_.unknown_left_out;
      return;
    }
    findings_.unknown.push_back(EscapeNonPrintable(path) + ": unknown field " + QuoteValue(key));
  }

  void CheckString(const SchemaNode& n, const std::string& s, const std::string& path) {
    if (n.pattern && !n.pattern->Matches(s))
      Error(Invalid(path, ShortValue(s), "should match '" + n.pattern->pattern() + "'"));
    if (n.max_length && RuneCount(s) > static_cast<size_t>(*n.max_length))
      Error(Invalid(path, ShortValue(s), "may not be longer than " + std::to_string(*n.max_length)));
    if (n.min_length && RuneCount(s) < static_cast<size_t>(*n.min_length))
      Error(Invalid(path, ShortValue(s), "should be at least " + std::to_string(*n.min_length) + " chars long"));
    if (n.format == "date-time" && !ParseTime(s))
      Error(Invalid(path, ShortValue(s), "must be of type date-time (RFC 3339, 2006-01-02T15:04:05Z)"));
  }

  void CheckNumber(const SchemaNode& n, double d, const std::string& path) {
    if (n.minimum && d < *n.minimum)
      Error(Invalid(path, Number(d), "should be greater than or equal to " + Number(*n.minimum)));
    if (n.maximum && d > *n.maximum)
      Error(Invalid(path, Number(d), "should be less than or equal to " + Number(*n.maximum)));
  }

  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  bool Skipped(const std::string& path, const std::string& key) const {
    return path.empty() && std::find(skip_.begin(), skip_.end(), key) != skip_.end();
  }

  // A required field missing, or null where it may not be (the API server prunes that null), and
  // without a default (the API server defaults before it validates).
  void CheckRequired(const SchemaNode& n, const json& obj, const std::string& path) {
    for (const std::string& r : n.required) {
      if (Skipped(path, r)) continue;
      auto it = obj.find(r);
      auto child = n.properties.find(r);
      if (child != n.properties.end() && child->second->default_value) continue;  // defaulted first
      bool pruned = it != obj.end() && it->is_null() && (child == n.properties.end() || !child->second->nullable);
      if (it == obj.end() || pruned) Error(Required(Join(path, r), ""));
    }
  }

  void WalkObject(const SchemaNode& n, const json& obj, const std::string& path) {
    CheckRequired(n, obj, path);
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string& key = it.key();
      if (Skipped(path, key)) continue;
      if (auto p = n.properties.find(key); p != n.properties.end()) {
        if (!it->is_null() || p->second->nullable) Walk(*p->second, *it, Join(path, key));
      } else if (n.additional_properties) {
        // A null map value is pruned as a null field is.
        if (!it->is_null() || n.additional_properties->nullable)
          Walk(*n.additional_properties, *it, path + "[" + key + "]");
      } else if (!n.preserve_unknown) {
        Unknown(Join(path, key), key);
      }
    }
  }

  void WalkArray(const SchemaNode& n, const json& list, const std::string& path) {
    if (n.max_items && list.size() > static_cast<size_t>(*n.max_items))
      Error(Invalid(path, std::to_string(list.size()) + " items",
                    "must have at most " + std::to_string(*n.max_items) + " items"));
    if (n.min_items && list.size() < static_cast<size_t>(*n.min_items))
      Error(Invalid(path, std::to_string(list.size()) + " items",
                    "must have at least " + std::to_string(*n.min_items) + " items"));
    if (n.items)
      for (size_t i = 0; i < list.size(); ++i) Walk(*n.items, list[i], path + "[" + std::to_string(i) + "]");
    if (n.list_type == "map" && n.items) CheckListMap(*n.items, n.list_map_keys, list, path);
    if (n.list_type == "set") CheckListSet(list, path);
  }

  // Items of a list-type map are unique by their keys (a missing key takes its default).
  void CheckListMap(const SchemaNode& item, const std::vector<std::string>& keys, const json& list,
                    const std::string& path) {
    std::set<std::string> seen;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_object()) continue;
      json key = json::object();
      for (const std::string& k : keys) {
        auto it = list[i].find(k);
        auto p = item.properties.find(k);
        if (it != list[i].end() && !it->is_null()) {
          key[k] = *it;
        } else if (p != item.properties.end() && p->second->default_value) {
          key[k] = *p->second->default_value;
        }
      }
      if (key.empty()) continue;  // no key at all: Required reported it
      if (!seen.insert(key.dump(-1, ' ', false, json::error_handler_t::replace)).second)
        Error(Duplicate(path + "[" + std::to_string(i) + "]", ShortValue(key)));
    }
  }

  void CheckListSet(const json& list, const std::string& path) {
    std::set<std::string> seen;
    for (size_t i = 0; i < list.size(); ++i)
      if (!seen.insert(list[i].dump(-1, ' ', false, json::error_handler_t::replace)).second)
        Error(Duplicate(path + "[" + std::to_string(i) + "]", ShortValue(list[i])));
  }

  const std::vector<std::string>& skip_;
  SchemaFindings findings_;
};

}  // namespace

StatusOr<StructuralSchema> StructuralSchema::Parse(const json& open_api_v3_schema) {
  TFJOB_ASSIGN_OR_RETURN(std::unique_ptr<SchemaNode> root, ParseNode(open_api_v3_schema, "openAPIV3Schema", 0));
  StructuralSchema s;
  s.root_ = std::move(root);
  return s;
}

SchemaFindings StructuralSchema::Check(const json& object, const std::vector<std::string>& skip) const {
  Checker c(skip);
  c.Walk(*root_, object, "");
  return std::move(c).Finish();
}

const StructuralSchema& TfJobSchema() {
  static const StructuralSchema* schema = [] {
    auto docs = ParseManifest(CrdYaml());
    TFJOB_CHECK(docs.ok() && docs->size() == 1);
    const json& versions = (*docs)[0].object["spec"]["versions"];
    for (const json& v : versions) {
      if (v.value("name", "") != "v1") continue;
      auto parsed = StructuralSchema::Parse(v["schema"]["openAPIV3Schema"]);
      TFJOB_CHECK(parsed.ok());  // the CRD's own test reads it (structural_schema_test.cc)
      return new StructuralSchema(std::move(*parsed));
    }
    TFJOB_CHECK(false && "the CRD has a version v1");
    return static_cast<StructuralSchema*>(nullptr);
  }();
  return *schema;
}

SchemaFindings CheckTfJobSchema(const json& tfjob) {
  return TfJobSchema().Check(tfjob, {"metadata", "status"});
}

}  // namespace tfjob::api
