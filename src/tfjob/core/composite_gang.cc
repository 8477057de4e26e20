#include "tfjob/core/composite_gang.h"

#include "tfjob/core/gang_scheduler.h"

#include <algorithm>

#include "api/json_fields.h"
#include "api/tfjob_json.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::core {

using nlohmann::json;

namespace {

// The Chief, Master and PS pods, and the Worker pods, of the job.
int64_t LeaderPods(const api::TfJob& job) {
  int64_t n = 0;
  for (const auto& [type, spec] : api::ReplicaSpecsByType(job.spec))
    if (CompositeMemberOf(type) == CompositeMember::kLeaders) n += api::ReplicasOrDefault(*spec);
  return n;
}

int64_t WorkerPods(const api::TfJob& job) {
  int64_t n = 0;
  for (const auto& [type, spec] : api::ReplicaSpecsByType(job.spec))
    if (CompositeMemberOf(type) == CompositeMember::kWorkers) n += api::ReplicasOrDefault(*spec);
  return n;
}

int32_t Clamp32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, 0, INT32_MAX));
}

json Meta(const api::TfJob& job, const std::string& name) {
  return {{"name", name},
          {"namespace", job.metadata.ns},
          {"ownerReferences", json::array({api::EncodeOwnerReference(GenOwnerReference(job))})}};
}

const json& AllDisruption() {
  static const json* all = new json{{"all", json::object()}};
  return *all;
}

json MemberPolicy(const api::TfJob& job, CompositeMember member) {
  return {{"gang", {{"minCount", CompositeMinCount(job, member)}}}};
}

json CompositePolicy() {
  return {{"gang", {{"minGroupCount", static_cast<int32_t>(kCompositeMembers.size())}}}};
}

}  // namespace

std::string_view CompositeMemberName(CompositeMember member) {
  return member == CompositeMember::kLeaders ? "leaders" : "workers";
}

std::string CompositeMemberPodGroupName(const std::string& job_name, CompositeMember member) {
  return job_name + "." + std::string(CompositeMemberName(member));
}

std::optional<CompositeMember> CompositeMemberOf(api::ReplicaType type) {
  switch (type) {
    case api::ReplicaType::kChief:
    case api::ReplicaType::kMaster:
    case api::ReplicaType::kPS: return CompositeMember::kLeaders;
    case api::ReplicaType::kWorker: return CompositeMember::kWorkers;
    case api::ReplicaType::kEvaluator: return std::nullopt;
  }
  return std::nullopt;
}

std::string JobNameOfGangObject(const std::string& object_name) {
  return object_name.substr(0, object_name.find('.'));
}

bool UsesCompositeGang(const api::TfJob& job, const RenderOptions& options) {
  const GangSchedulerPolicy* gang = GangSchedulerFor(options.gang_scheduler_name);
  return gang && gang->UsesCompositeGang(job, options);
}

bool CompositeGangFits(const api::TfJob& job, const RenderOptions& options) {
  if (options.native_gang_api != NativeGangApi::kV1beta1 || !options.composite_pod_groups) return false;
  return LeaderPods(job) > 0 && WorkerPods(job) > 0 && PodGroupMinMember(job) > 0;
}

bool CompositeForJob(bool served, std::optional<bool> existing_workload_composite) {
  return existing_workload_composite.value_or(served);
}

int32_t LeaderMinCount(const api::TfJob& job) {
  return Clamp32(LeaderPods(job));
}

int32_t WorkerMinCount(const api::TfJob& job) {
  const int64_t workers = WorkerPods(job);
  const auto& sp = job.spec.run_policy.scheduling_policy;
  if (!sp || !sp->min_available) return Clamp32(workers);
  return Clamp32(std::clamp<int64_t>(int64_t{*sp->min_available} - LeaderPods(job), 1, std::max<int64_t>(workers, 1)));
}

int32_t CompositeMinCount(const api::TfJob& job, CompositeMember member) {
  return member == CompositeMember::kLeaders ? LeaderMinCount(job) : WorkerMinCount(job);
}

json RenderCompositeWorkload(const api::TfJob& job) {
  json members = json::array();
  for (CompositeMember m : kCompositeMembers)
    members.push_back({{"name", std::string(CompositeMemberName(m))},
                       {"schedulingPolicy", MemberPolicy(job, m)},
                       {"disruptionMode", AllDisruption()}});
  json composite = {{"name", std::string(kCompositeTemplate)},
                    {"schedulingPolicy", CompositePolicy()},
                    {"disruptionMode", AllDisruption()},
                    {"podGroupTemplates", std::move(members)}};
  json spec = {
      {"controllerRef", {{"apiGroup", "kubeflow.org"}, {"kind", std::string(api::kKind)}, {"name", job.metadata.name}}},
      {"compositePodGroupTemplates", json::array({std::move(composite)})}};
  return json{{"apiVersion", NativeGangApiGroupVersion(NativeGangApi::kV1beta1)},
              {"kind", "Workload"},
              {"metadata", Meta(job, job.metadata.name)},
              {"spec", std::move(spec)}};
}

json RenderCompositePodGroup(const api::TfJob& job) {
  json spec = {
      {"workloadRef", {{"workloadName", job.metadata.name}, {"templateName", std::string(kCompositeTemplate)}}},
      {"schedulingPolicy", CompositePolicy()},
      {"disruptionMode", AllDisruption()}};
  return json{{"apiVersion", std::string(kNativeSchedulingGroup) + "/" + std::string(kCompositePodGroupVersion)},
              {"kind", "CompositePodGroup"},
              {"metadata", Meta(job, job.metadata.name)},
              {"spec", std::move(spec)}};
}

json RenderCompositeMemberPodGroup(const api::TfJob& job, CompositeMember member) {
  json spec = {{"parentCompositePodGroupName", job.metadata.name},
               {"workloadRef",
                {{"workloadName", job.metadata.name}, {"templateName", std::string(CompositeMemberName(member))}}},
               {"schedulingPolicy", MemberPolicy(job, member)},
               {"disruptionMode", AllDisruption()}};
  return json{{"apiVersion", NativeGangApiGroupVersion(NativeGangApi::kV1beta1)},
              {"kind", "PodGroup"},
              {"metadata", Meta(job, CompositeMemberPodGroupName(job.metadata.name, member))},
              {"spec", std::move(spec)}};
}

void SetCompositeSchedulingGroup(const api::TfJob& job, api::ReplicaType type, json* pod_spec) {
  if (auto member = CompositeMemberOf(type))
    (*pod_spec)["schedulingGroup"] = {{"podGroupName", CompositeMemberPodGroupName(job.metadata.name, *member)}};
  else
    pod_spec->erase("schedulingGroup");
}

}  // namespace tfjob::core
