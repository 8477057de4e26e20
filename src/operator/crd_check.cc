#include "operator/crd_check.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;

const json* Child(const json* node, const char* key) {
  if (node == nullptr || !node->is_object()) return nullptr;
  auto it = node->find(key);
  return it == node->end() ? nullptr : &*it;
}

bool PreservesUnknown(const json* node) {
  const json* p = Child(node, "x-kubernetes-preserve-unknown-fields");
  return p != nullptr && p->is_boolean() && p->get<bool>();
}

}  // namespace

CrdStatusSchema CheckCrdStatusSchema(const json& crd) {
  const std::vector<std::string> ours = {"restarts", "disruptions"};
  const json* schema = nullptr;
  if (const json* versions = Child(Child(&crd, "spec"), "versions"); versions != nullptr && versions->is_array())
    for (const json& v : *versions)
      if (const json* name = Child(&v, "name"); name != nullptr && *name == "v1")
        schema = Child(Child(&v, "schema"), "openAPIV3Schema");
  if (schema == nullptr) return {ours};
  // Down the path root -> status -> replicaStatuses -> (each type) -> field: a level that keeps
  // unknown fields keeps everything below it.
  const json* node = schema;
  for (const char* step : {"status", "replicaStatuses"}) {
    if (PreservesUnknown(node)) return {};
    node = Child(Child(node, "properties"), step);
    if (node == nullptr) return {ours};
  }
  if (PreservesUnknown(node)) return {};
  node = Child(node, "additionalProperties");
  if (node == nullptr) return {ours};
  if (PreservesUnknown(node)) return {};
  CrdStatusSchema out;
  const json* props = Child(node, "properties");
  for (const auto& f : ours) {
    const json* field = Child(props, f.c_str());
    const json* type = Child(field, "type");
    if (field == nullptr || type == nullptr || *type != "integer") out.pruned.push_back(f);
  }
  return out;
}

}  // namespace tfjob::operator_
