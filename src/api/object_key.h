#pragma once
// ObjectKey: a namespaced object's "namespace/name", the one spelling of a job's key (the work
// queue's and the informers' stores' key, and how messages name a job or pod). client-go's
// MetaNamespaceKeyFunc and types.NamespacedName.

#include <string>

#include <nlohmann/json.hpp>

#include "api/json_fields.h"
#include "api/tfjob.h"

namespace tfjob::api {

struct ObjectKey {
  std::string ns;
  std::string name;

  static ObjectKey Of(const ObjectMeta& meta) { return {meta.ns, meta.name}; }
  // The key of an object read as JSON, from its metadata (empty parts where a field is missing or
  // not a string).
  static ObjectKey OfJson(const nlohmann::json& object) {
    const nlohmann::json& meta = ObjectField(object, "metadata");
    return {StringField(meta, "namespace"), StringField(meta, "name")};
  }
  // "namespace/name" ("/name" without a namespace).
  std::string String() const { return ns + "/" + name; }
  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
};

// The key of `job`: "namespace/name".
inline std::string JobKey(const TfJob& job) {
  return ObjectKey::Of(job.metadata).String();
}

}  // namespace tfjob::api
