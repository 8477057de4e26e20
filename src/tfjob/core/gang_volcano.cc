// Volcano (scheduling.volcano.sh/v1beta1 PodGroup; docs/semantics.md 2.8): pods name their group
// in annotations and wait until the PodGroup is past Pending; an existing PodGroup's queue wins.
#include "api/json_fields.h"
#include "tfjob/core/gang_scheduler.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

class Volcano final : public GangSchedulerPolicy {
 public:
  std::string_view name() const override { return "volcano"; }
  GangCrdApi crd_api() const override { return {"scheduling.volcano.sh", "v1beta1", "gang scheduling by volcano"}; }
  void LabelPod(const api::TfJob& job, api::ReplicaType type, json& /*labels*/, json& annotations) const override {
    annotations["scheduling.k8s.io/group-name"] = job.metadata.name;
    annotations["volcano.sh/task-spec"] = std::string(api::ReplicaTypeLabel(type));
  }
  void SchedulePod(const api::TfJob&, api::ReplicaType, const RenderOptions& options, json& pod_spec) const override {
    if (api::StringField(pod_spec, "schedulerName").empty()) pod_spec["schedulerName"] = *SchedulerName(options);
  }
  std::optional<std::string> SchedulerName(const RenderOptions&) const override { return "volcano"; }
  std::optional<json> RenderPodGroup(const api::TfJob& job, const RenderOptions&, const std::string& existing_queue,
                                     const std::map<std::string, int32_t>& priority_classes) const override {
    const auto& sp = job.spec.run_policy.scheduling_policy;
    json spec = {{"minMember", PodGroupMinMember(job)}};
    // An existing PodGroup's queue wins, then the job's, then "default" (as upstream).
    spec["queue"] = !existing_queue.empty() ? existing_queue : sp && !sp->queue.empty() ? sp->queue : "default";
    if (sp && !sp->priority_class.empty()) spec["priorityClassName"] = sp->priority_class;
    auto min_resources = PodGroupMinResources(job, priority_classes);
    if (!min_resources.empty()) spec["minResources"] = min_resources;
    return json{{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                {"kind", "PodGroup"},
                {"metadata", CrdPodGroupMeta(job)},
                {"spec", std::move(spec)}};
  }
  GangPlan Plan(const api::TfJob& job, const ReconcileOptions& options, const ObservedState& observed) const override {
    GangPlan out = PlanCrdPodGroup(*this, job, options, observed);
    const auto& group = observed.pod_group;
    out.wait = !group || group->phase.empty() || group->phase == "Pending";
    return out;
  }
};

}  // namespace

const GangSchedulerPolicy& VolcanoGang() {
  static const Volcano* const policy = new Volcano();
  return *policy;
}

}  // namespace tfjob::core
