#include "api/defaults.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

json* Containers(json& pod_template) {
  if (!pod_template.is_object()) return nullptr;
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return nullptr;
  auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array()) return nullptr;
  return &*containers;
}

// Upstream moves only the first key naming the type in other case over the canonical one
// (ReplicaSpecKey says which).
void NormaliseKeys(TfJobSpec& spec) {
  for (ReplicaType t : kAllReplicaTypes) {
    const std::string canonical(ReplicaTypeName(t));
    const std::string* key = ReplicaSpecKey(spec, t);
    if (key == nullptr || *key == canonical) continue;
    auto it = spec.replica_specs.find(*key);
    auto value = std::move(it->second);
    spec.replica_specs.erase(it);
    spec.replica_specs[canonical] = std::move(value);
  }
}

void AddDefaultPort(json& pod_template) {
  json* containers = Containers(pod_template);
  if (containers == nullptr || containers->empty()) return;
  json* target = FindTensorflowContainer(pod_template);
  if (target == nullptr) target = &(*containers)[0];
  if (!target->is_object()) return;
  json& ports = (*target)["ports"];
  if (ports.is_null()) ports = json::array();
  if (!ports.is_array()) return;
  for (const json& p : ports)
    if (p.is_object() && p.value("name", json()) == kDefaultPortName) return;
  ports.push_back({{"name", kDefaultPortName}, {"containerPort", kDefaultPort}});
}

}  // namespace

const json* FindTensorflowContainer(const json& pod_template) {
  return FindTensorflowContainer(const_cast<json&>(pod_template));
}

json* FindTensorflowContainer(json& pod_template) {
  json* containers = Containers(pod_template);
  if (containers == nullptr) return nullptr;
  for (json& c : *containers)
    if (c.is_object() && c.value("name", json()) == kDefaultContainerName) return &c;
  return nullptr;
}

int32_t TfJobPort(const ReplicaSpec& spec) {
  const json* c = FindTensorflowContainer(spec.pod_template);
  if (c == nullptr) return kDefaultPort;
  auto ports = c->find("ports");
  if (ports == c->end() || !ports->is_array()) return kDefaultPort;
  for (const json& p : *ports) {
    if (p.is_object() && p.value("name", json()) == kDefaultPortName) {
      auto cp = p.find("containerPort");
      if (cp != p.end() && cp->is_number_integer()) return cp->get<int32_t>();
    }
  }
  return kDefaultPort;
}

void SetDefaults(TfJob& job) {
  RunPolicy& rp = job.spec.run_policy;
  if (!rp.clean_pod_policy) rp.clean_pod_policy = CleanPodPolicy::kNone;
  // Upstream's clean-up keeps pods only for exactly "None" (all of them) or "Running" (the
  // finished ones), and deletes every pod otherwise: any other value, "" included, acts as "All"
  // (docs/semantics.md 3.11, D22; validation warns about it).
  if (*rp.clean_pod_policy != CleanPodPolicy::kNone && *rp.clean_pod_policy != CleanPodPolicy::kRunning)
    rp.clean_pod_policy = CleanPodPolicy::kAll;
  if (!job.spec.success_policy) job.spec.success_policy = SuccessPolicy::kDefault;
  NormaliseKeys(job.spec);
  for (auto& [key, spec] : job.spec.replica_specs) {
    if (!spec) continue;
    if (!spec->replicas) spec->replicas = 1;
    if (spec->restart_policy.empty()) spec->restart_policy = RestartPolicy::kNever;
    AddDefaultPort(spec->pod_template);
  }
}

}  // namespace tfjob::api
