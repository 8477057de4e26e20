#include "api/known_fields.h"

#include <set>
#include <string_view>

#include "api/field_error.h"
#include "api/structural_schema.h"

namespace tfjob::api {
namespace {

using nlohmann::json;
using Names = std::set<std::string, std::less<>>;

// ObjectMeta (meta/v1) of Kubernetes v1.36 (scripts/versions.env pins the control plane the tests run).
const Names kObjectMeta = {"name",
                           "generateName",
                           "namespace",
                           "selfLink",
                           "uid",
                           "resourceVersion",
                           "generation",
                           "creationTimestamp",
                           "deletionTimestamp",
                           "deletionGracePeriodSeconds",
                           "labels",
                           "annotations",
                           "ownerReferences",
                           "finalizers",
                           "managedFields"};

// ObjectMeta's fields at the object's root (which the CRD leaves to the API server) and in each
// pod template (which the CRD lists only in part, keeping the rest).
void MetadataKeys(const json* obj, const std::string& path, std::vector<std::string>* out, size_t* left_out) {
  if (obj == nullptr || !obj->is_object()) return;
  for (auto it = obj->begin(); it != obj->end(); ++it) {
    if (kObjectMeta.contains(it.key())) continue;
    if (out->size() >= kMaxUnknownFieldMessages) {
      ++*left_out;
      continue;
    }
    out->push_back(EscapeNonPrintable(path + "." + it.key()) + ": unknown field " + QuoteValue(it.key()));
  }
}

const json* Field(const json* obj, std::string_view key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

}  // namespace

std::vector<std::string> UnknownFieldWarnings(const json& tfjob, const SchemaFindings& findings) {
  std::vector<std::string> out;
  size_t left_out = 0;
  MetadataKeys(Field(&tfjob, "metadata"), "metadata", &out, &left_out);
  for (const auto& u : findings.unknown) {
    if (out.size() < kMaxUnknownFieldMessages) {
      out.push_back(u);
    } else {
      ++left_out;
    }
  }
  left_out += findings.unknown_left_out;
  const json* specs = Field(Field(&tfjob, "spec"), "tfReplicaSpecs");
  if (specs != nullptr && specs->is_object())
    for (auto it = specs->begin(); it != specs->end(); ++it)
      MetadataKeys(Field(Field(&*it, "template"), "metadata"),
                   "spec.tfReplicaSpecs[" + it.key() + "].template.metadata", &out, &left_out);
  if (left_out > 0)
    out.push_back(std::to_string(left_out) + " more unknown field" + (left_out == 1 ? "" : "s") + " not shown");
  return out;
}

std::vector<std::string> UnknownFieldWarnings(const json& tfjob) {
  return UnknownFieldWarnings(tfjob, CheckTfJobSchema(tfjob));
}

}  // namespace tfjob::api
