// kube-scheduler's own gang scheduling (docs/semantics.md D27, D31, D33): a Workload and its
// PodGroup of scheduling.k8s.io, v1alpha2 or v1beta1 (RenderOptions::native_gang_api, found by
// the operator's discovery), or with v1beta1 and CompositePodGroups served the hierarchical gang
// (composite_gang.h). Pods name their group in spec.schedulingGroup; nothing waits for the group.
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/gang_scheduler.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

// D31: v1beta1's gang minCount is mutable (v1alpha2's whole policy is not; basic and gang never
// turn into each other): a changed minAvailable or replica count updates the PodGroup at once.
bool NativeMinCountChanged(const json& desired, const PodGroupState& group, const RenderOptions& options) {
  if (options.native_gang_api != NativeGangApi::kV1beta1) return false;
  auto want = NativeGangMinCount(desired.at("spec"));  // rendered
  const std::optional<int64_t>& have = group.gang_min_count;
  return want && have && *want != *have;
}

// D33: the Workload, the CompositePodGroup and each member PodGroup that does not exist; a
// member whose minCount changed is updated (as D31's flat PodGroup).
GangPlan PlanCompositeGang(const api::TfJob& job, const ReconcileOptions& options, const ObservedState& observed) {
  GangPlan out;
  if (!observed.workload_exists) out.create_workload = RenderCompositeWorkload(job);
  if (!observed.composite_pod_group_exists) out.composite.create_composite = RenderCompositePodGroup(job);
  for (CompositeMember m : kCompositeMembers) {
    json desired = RenderCompositeMemberPodGroup(job, m);
    auto found = observed.member_pod_groups.find(CompositeMemberPodGroupName(job.metadata.name, m));
    if (found == observed.member_pod_groups.end())
      out.composite.create_members.push_back(std::move(desired));
    else if (NativeMinCountChanged(desired, found->second, options.render))
      out.composite.update_members.push_back(std::move(desired));
  }
  return out;
}

class Kubernetes final : public GangSchedulerPolicy {
 public:
  std::string_view name() const override { return "kubernetes"; }
  bool native() const override { return true; }
  void SchedulePod(const api::TfJob& job, api::ReplicaType type, const RenderOptions& options,
                   json& pod_spec) const override {
    if (UsesCompositeGang(job, options))
      SetCompositeSchedulingGroup(job, type, &pod_spec);  // D33
    else
      SetNativeSchedulingGroup(job, &pod_spec);
  }
  std::optional<json> RenderPodGroup(const api::TfJob& job, const RenderOptions& options, const std::string&,
                                     const std::map<std::string, int32_t>&) const override {
    if (UsesCompositeGang(job, options)) return std::nullopt;  // D33: the members instead (composite_gang.h)
    return RenderNativePodGroup(job, options.native_gang_api);
  }
  std::optional<json> RenderWorkload(const api::TfJob& job, const RenderOptions& options) const override {
    if (UsesCompositeGang(job, options)) return RenderCompositeWorkload(job);  // D33
    return RenderNativeWorkload(job, options.native_gang_api);
  }
  bool UsesCompositeGang(const api::TfJob& job, const RenderOptions& options) const override {
    return CompositeGangFits(job, options);
  }
  GangPlan Plan(const api::TfJob& job, const ReconcileOptions& options, const ObservedState& observed) const override {
    if (UsesCompositeGang(job, options.render)) return PlanCompositeGang(job, options, observed);
    GangPlan out;
    const auto& group = observed.pod_group;
    auto desired = RenderPodGroup(job, options.render, "", observed.priority_classes);
    if (!group)
      out.create_pod_group = desired;
    else if (NativeMinCountChanged(*desired, *group, options.render))
      out.update_pod_group = desired;
    if (!observed.workload_exists) out.create_workload = RenderWorkload(job, options.render);
    return out;
  }
  void CleanUp(const ObservedState& observed, CleanUpPlan& out) const override {
    out.delete_workload = observed.workload_exists;
    out.composite.delete_composite = observed.composite_pod_group_exists;
  }
};

}  // namespace

const GangSchedulerPolicy& KubernetesGang() {
  static const Kubernetes* const policy = new Kubernetes();
  return *policy;
}

}  // namespace tfjob::core
