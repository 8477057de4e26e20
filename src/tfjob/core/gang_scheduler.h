#pragma once
// The pure core's side of a gang scheduler (docs/semantics.md 2.8, D27, D31, D33): one
// GangSchedulerPolicy per scheduler, each in its own file, registered once in
// gang_schedulers.cc (GangSchedulerFor). What differs between schedulers is behind this
// interface: the pod's labels, annotations and scheduling fields, the group objects (a CRD's
// PodGroup, or kube-scheduler's Workload and PodGroups), when they are created, updated or
// deleted, and whether pods wait for the group. The free functions of render.h, pod_group.h
// and reconcile_phases.h (RenderPodGroup, RenderWorkload, PlanGang, CleanUpGang,
// UsesCompositeGang) reach the policy through GangSchedulerFor.
//
// docs/architecture.md ("A gang scheduler") lists what a new scheduler adds: one file here and
// one line in gang_schedulers.cc (the operator's side is generic for a CRD's PodGroup).

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "tfjob/core/reconcile_phases.h"
#include "tfjob/core/render.h"

namespace tfjob::core {

// The API of a scheduler's PodGroup served by a CRD: the operator checks it at start-up and
// follows its version (docs/semantics.md D34).
struct GangCrdApi {
  std::string group;    // "scheduling.volcano.sh"
  std::string version;  // the one this program speaks: "v1beta1"
  std::string purpose;  // "gang scheduling by volcano"
};

class GangSchedulerPolicy {
 public:
  virtual ~GangSchedulerPolicy() = default;

  virtual std::string_view name() const = 0;
  // kube-scheduler's own gang scheduling (scheduling.k8s.io, version discovered: D27, D31, D33);
  // false: a CRD's PodGroup (crd_api).
  virtual bool native() const { return false; }
  virtual GangCrdApi crd_api() const { return {}; }

  // A pod's labels and annotations naming its group (`labels` and `annotations` are objects).
  virtual void LabelPod(const api::TfJob& /*job*/, api::ReplicaType /*type*/, nlohmann::json& /*labels*/,
                        nlohmann::json& /*annotations*/) const {}
  // A pod spec's scheduling fields (schedulerName, or the native scheduling group).
  virtual void SchedulePod(const api::TfJob& job, api::ReplicaType type, const RenderOptions& options,
                           nlohmann::json& pod_spec) const = 0;
  // The scheduler pods are given: a template naming another one gets the
  // SetPodTemplateSchedulerName warning; nullopt: no such warning.
  virtual std::optional<std::string> SchedulerName(const RenderOptions& /*options*/) const { return std::nullopt; }

  // The group objects (pod_group.h documents their contents). nullopt: none of that kind.
  virtual std::optional<nlohmann::json> RenderPodGroup(
      const api::TfJob& job, const RenderOptions& options, const std::string& existing_queue,
      const std::map<std::string, int32_t>& priority_classes) const = 0;
  virtual std::optional<nlohmann::json> RenderWorkload(const api::TfJob& /*job*/,
                                                       const RenderOptions& /*options*/) const {
    return std::nullopt;
  }
  // D33: the job is gang-scheduled by a CompositePodGroup with member PodGroups.
  virtual bool UsesCompositeGang(const api::TfJob& /*job*/, const RenderOptions& /*options*/) const { return false; }

  // PlanGang: what to create or update, and whether the pods wait for the group.
  virtual GangPlan Plan(const api::TfJob& job, const ReconcileOptions& options,
                        const ObservedState& observed) const = 0;
  // CleanUpGang beyond the PodGroup (which every scheduler deletes): the Workload, D33's objects.
  virtual void CleanUp(const ObservedState& /*observed*/, CleanUpPlan& /*out*/) const {}
};

// --gang-scheduler-name: "" or "None" -> nullptr (no gang scheduling); "volcano" (any case) ->
// Volcano; "kubernetes" (any case) -> kube-scheduler's own (D27); any other name ->
// scheduler-plugins, with that name as the pods' schedulerName. The one registration.
const GangSchedulerPolicy* GangSchedulerFor(const std::string& gang_scheduler_name);

// The policies, one file each.
const GangSchedulerPolicy& VolcanoGang();
const GangSchedulerPolicy& SchedulerPluginsGang();
const GangSchedulerPolicy& KubernetesGang();

// Shared by the CRD PodGroups: their metadata (name, namespace, owner, the job's annotations)
// and minResources (the scheduling policy's, else computed: ComputeMinResources).
nlohmann::json CrdPodGroupMeta(const api::TfJob& job);
std::map<std::string, std::string> PodGroupMinResources(const api::TfJob& job,
                                                        const std::map<std::string, int32_t>& priority_classes);
// A CRD PodGroup's plan: created when missing, updated when its spec differs; `wait` for Volcano.
GangPlan PlanCrdPodGroup(const GangSchedulerPolicy& policy, const api::TfJob& job, const ReconcileOptions& options,
                         const ObservedState& observed);

}  // namespace tfjob::core
