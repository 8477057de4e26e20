#include "tfjob/core/pod_group.h"

#include <algorithm>
#include <vector>

#include "api/json_fields.h"
#include "api/pod_group.h"
#include "api/quantity.h"
#include "api/tfjob_json.h"
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/gang_scheduler.h"
#include "tfjob/core/naming.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

void AddResources(const json& resources, std::map<std::string, api::Quantity>* total) {
  if (!resources.is_object()) return;
  for (auto it = resources.begin(); it != resources.end(); ++it) {
    std::string text = it->is_string() ? it->get<std::string>() : it->is_number() ? it->dump() : "";
    auto q = api::Quantity::Parse(text);
    if (!q) continue;  // the API server would have refused the pod; nothing to add
    (*total)[it.key()].Add(*q);
  }
}

}  // namespace

int32_t PodGroupMinMember(const api::TfJob& job) {
  const auto& sp = job.spec.run_policy.scheduling_policy;
  if (sp && sp->min_available) return *sp->min_available;
  return static_cast<int32_t>(std::min<int64_t>(api::TotalReplicas(job.spec), INT32_MAX));
}

namespace {

// The value of the PriorityClass the template names, 0 when it names none or one that is missing.
int32_t TemplatePriority(const api::ReplicaSpec& spec, const std::map<std::string, int32_t>& priority_class_values) {
  const json& pod_spec = api::ObjectField(spec.pod_template, "spec");
  auto pc = pod_spec.find("priorityClassName");
  if (pc == pod_spec.end() || !pc->is_string()) return 0;
  auto v = priority_class_values.find(pc->get<std::string>());
  return v == priority_class_values.end() ? 0 : v->second;
}

// One pod's containers: their requests, or their limits when they have no requests.
void AddPodResources(const json& containers, std::map<std::string, api::Quantity>* total) {
  for (const json& c : containers) {
    if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
    const json& res = c["resources"];
    if (res.contains("requests") && !res["requests"].is_null())
      AddResources(res["requests"], total);
    else if (res.contains("limits"))
      AddResources(res["limits"], total);
  }
}

}  // namespace

const std::map<std::string, int32_t>& BuiltinPriorityClasses() {
  // scheduling.k8s.io/v1: system-cluster-critical is the highest user-visible critical value,
  // system-node-critical 1000 above it.
  static const auto* classes =
      new std::map<std::string, int32_t>{{"system-cluster-critical", 2000000000}, {"system-node-critical", 2000001000}};
  return *classes;
}

std::map<std::string, std::string> ComputeMinResources(const api::TfJob& job,
                                                       const std::map<std::string, int32_t>& priority_class_values) {
  struct Entry {
    int32_t priority;
    const api::ReplicaSpec* spec;
  };
  std::vector<Entry> entries;
  for (const auto& [type, spec] : api::ReplicaSpecsByType(job.spec))
    entries.push_back({TemplatePriority(*spec, priority_class_values), spec});
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.priority > b.priority; });
  std::map<std::string, api::Quantity> total;
  int32_t remaining = PodGroupMinMember(job);
  for (const Entry& e : entries) {
    const json& pod_spec = api::ObjectField(e.spec->pod_template, "spec");
    auto containers = pod_spec.find("containers");
    const bool has_containers = containers != pod_spec.end() && containers->is_array();
    for (int32_t i = 0; i < api::ReplicasOrDefault(*e.spec) && remaining > 0; ++i, --remaining)
      if (has_containers) AddPodResources(*containers, &total);
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, q] : total) out[k] = q.ToString();
  return out;
}

json CrdPodGroupMeta(const api::TfJob& job) {
  json meta = {{"name", job.metadata.name},
               {"namespace", job.metadata.ns},
               {"ownerReferences", json::array({api::EncodeOwnerReference(GenOwnerReference(job))})}};
  if (!job.metadata.annotations.empty()) meta["annotations"] = job.metadata.annotations;
  return meta;
}

std::map<std::string, std::string> PodGroupMinResources(const api::TfJob& job,
                                                        const std::map<std::string, int32_t>& priority_classes) {
  const auto& sp = job.spec.run_policy.scheduling_policy;
  return sp && !sp->min_resources.empty() ? sp->min_resources : ComputeMinResources(job, priority_classes);
}

std::optional<json> RenderPodGroup(const api::TfJob& job, const RenderOptions& options,
                                   const std::string& existing_queue,
                                   const std::map<std::string, int32_t>& priority_class_values) {
  const GangSchedulerPolicy* gang = GangSchedulerFor(options.gang_scheduler_name);
  if (!gang) return std::nullopt;
  return gang->RenderPodGroup(job, options, existing_queue, priority_class_values);
}

namespace {

json NativeSchedulingPolicy(const api::TfJob& job) {
  const int32_t min_count = PodGroupMinMember(job);
  if (min_count <= 0) return {{"basic", json::object()}};
  return {{"gang", {{"minCount", min_count}}}};
}

json NativeMeta(const api::TfJob& job) {
  return {{"name", job.metadata.name},
          {"namespace", job.metadata.ns},
          {"ownerReferences", json::array({api::EncodeOwnerReference(GenOwnerReference(job))})}};
}

}  // namespace

std::string_view NativeGangApiVersion(NativeGangApi api) {
  return api == NativeGangApi::kV1beta1 ? "v1beta1" : "v1alpha2";
}

std::string NativeGangApiGroupVersion(NativeGangApi api) {
  return std::string(kNativeSchedulingGroup) + "/" + std::string(NativeGangApiVersion(api));
}

namespace {

// v1beta1 only (v1alpha2's disruptionMode is a string behind the alpha WorkloadAwarePreemption
// gate): a gang is preempted or evicted whole, never one pod of it (D31).
void AddDisruptionMode(NativeGangApi api, json* spec_or_template) {
  if (api == NativeGangApi::kV1beta1 && (*spec_or_template)["schedulingPolicy"].contains("gang"))
    (*spec_or_template)["disruptionMode"] = {{"all", json::object()}};
}

}  // namespace

std::optional<json> RenderWorkload(const api::TfJob& job, const RenderOptions& options) {
  const GangSchedulerPolicy* gang = GangSchedulerFor(options.gang_scheduler_name);
  if (!gang) return std::nullopt;
  return gang->RenderWorkload(job, options);
}

json RenderNativeWorkload(const api::TfJob& job, NativeGangApi api) {
  json tmpl = {{"name", std::string(kNativePodGroupTemplate)}, {"schedulingPolicy", NativeSchedulingPolicy(job)}};
  AddDisruptionMode(api, &tmpl);
  json spec = {
      {"controllerRef", {{"apiGroup", "kubeflow.org"}, {"kind", std::string(api::kKind)}, {"name", job.metadata.name}}},
      {"podGroupTemplates", json::array({std::move(tmpl)})}};
  return json{{"apiVersion", NativeGangApiGroupVersion(api)},
              {"kind", "Workload"},
              {"metadata", NativeMeta(job)},
              {"spec", std::move(spec)}};
}

json RenderNativePodGroup(const api::TfJob& job, NativeGangApi api) {
  json spec;
  if (api == NativeGangApi::kV1beta1)
    spec["workloadRef"] = {{"workloadName", job.metadata.name}, {"templateName", std::string(kNativePodGroupTemplate)}};
  else
    spec["podGroupTemplateRef"] = {
        {"workload",
         {{"workloadName", job.metadata.name}, {"podGroupTemplateName", std::string(kNativePodGroupTemplate)}}}};
  spec["schedulingPolicy"] = NativeSchedulingPolicy(job);
  AddDisruptionMode(api, &spec);
  return json{{"apiVersion", NativeGangApiGroupVersion(api)},
              {"kind", "PodGroup"},
              {"metadata", NativeMeta(job)},
              {"spec", std::move(spec)}};
}

std::optional<int64_t> NativeGangMinCount(const json& spec) {
  return api::GangMinCountOf(spec);
}

void SetNativeSchedulingGroup(const api::TfJob& job, json* pod_spec) {
  (*pod_spec)["schedulingGroup"] = {{"podGroupName", job.metadata.name}};
}

}  // namespace tfjob::core
