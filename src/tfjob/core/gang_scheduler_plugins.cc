// scheduler-plugins' coscheduling (scheduling.x-k8s.io/v1alpha1 PodGroup; docs/semantics.md
// 2.8): pods carry the pod-group label and the scheduler's name as given by the flag.
#include "api/json_fields.h"
#include "tfjob/core/gang_scheduler.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

class SchedulerPlugins final : public GangSchedulerPolicy {
 public:
  std::string_view name() const override { return "scheduler-plugins"; }
  GangCrdApi crd_api() const override {
    return {"scheduling.x-k8s.io", "v1alpha1", "gang scheduling by scheduler-plugins"};
  }
  void LabelPod(const api::TfJob& job, api::ReplicaType, json& labels, json&) const override {
    labels["scheduling.x-k8s.io/pod-group"] = job.metadata.name;
  }
  void SchedulePod(const api::TfJob&, api::ReplicaType, const RenderOptions& options, json& pod_spec) const override {
    if (api::StringField(pod_spec, "schedulerName").empty()) pod_spec["schedulerName"] = *SchedulerName(options);
  }
  std::optional<std::string> SchedulerName(const RenderOptions& options) const override {
    return options.gang_scheduler_name;
  }
  std::optional<json> RenderPodGroup(const api::TfJob& job, const RenderOptions&, const std::string&,
                                     const std::map<std::string, int32_t>& priority_classes) const override {
    const auto& sp = job.spec.run_policy.scheduling_policy;
    json spec = {{"minMember", PodGroupMinMember(job)}};
    auto min_resources = PodGroupMinResources(job, priority_classes);
    if (!min_resources.empty()) spec["minResources"] = min_resources;
    if (sp && sp->schedule_timeout_seconds) spec["scheduleTimeoutSeconds"] = *sp->schedule_timeout_seconds;
    return json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                {"kind", "PodGroup"},
                {"metadata", CrdPodGroupMeta(job)},
                {"spec", std::move(spec)}};
  }
  GangPlan Plan(const api::TfJob& job, const ReconcileOptions& options, const ObservedState& observed) const override {
    return PlanCrdPodGroup(*this, job, options, observed);
  }
};

}  // namespace

const GangSchedulerPolicy& SchedulerPluginsGang() {
  static const SchedulerPlugins* const policy = new SchedulerPlugins();
  return *policy;
}

}  // namespace tfjob::core
