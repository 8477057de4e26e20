#pragma once
// Rendering of the children of a TFJob: one Pod and one headless Service per replica
// (docs/semantics.md 2.5, 2.7 with D15), as full JSON objects ready to POST. Pure functions of
// the defaulted job and the options; `tfjob render` prints exactly what the operator creates.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/event_type.h"
#include "api/tfjob.h"
#include "common/status.h"
#include "tfjob/core/tf_config.h"

namespace tfjob::core {

// The gang scheduler of --gang-scheduler-name is a GangSchedulerPolicy (gang_scheduler.h).

// The version of scheduling.k8s.io's Workload API that kube-scheduler's gang (`kubernetes`) speaks: v1alpha2
// (Kubernetes v1.36) or v1beta1 (v1.37). The operator finds it by discovery (docs/semantics.md D31).
enum class NativeGangApi { kV1alpha2, kV1beta1 };

struct RenderOptions {
  TfConfigOptions tf_config;
  std::string gang_scheduler_name;
  // Only with `kubernetes`. `tfjob render`, which has no cluster, keeps the default.
  NativeGangApi native_gang_api = NativeGangApi::kV1alpha2;
  // v1beta1 only: the hierarchical gang (CompositePodGroup) may be used for this job
  // (docs/semantics.md D33; composite_gang.h: CompositeForJob, UsesCompositeGang).
  bool composite_pod_groups = false;
};

// An event the operator records while creating a child (e.g. SetPodTemplateRestartPolicy).
struct RenderEvent {
  api::EventType type;
  std::string reason;
  std::string message;
  friend bool operator==(const RenderEvent&, const RenderEvent&) = default;
};

struct RenderedPod {
  nlohmann::json object;
  std::vector<RenderEvent> events;
};

// REQUIRES: job defaulted and valid; `type` present in the spec.
RenderedPod RenderPod(const api::TfJob& job, api::ReplicaType type, int32_t index, const RenderOptions& options);
// Same, reusing a generator built once for the job (for rendering many pods).
RenderedPod RenderPod(const api::TfJob& job, api::ReplicaType type, int32_t index, const RenderOptions& options,
                      const TfConfigGenerator& tf_config);
// The events rendering any pod of `type` records (the template's warnings), as RenderPod's.
std::vector<RenderEvent> PodTemplateEvents(const api::TfJob& job, api::ReplicaType type, const RenderOptions& options);

// The one renderer of a job's children, used where a plan is applied: the operator's PlanApplier
// (each pod as it sends it: a 500-worker job's pods, each with the whole cluster in its
// TF_CONFIG, are then never all in memory at once, docs/semantics.md D17), `tfjob run`'s runner
// and `tfjob render` (RenderJob). It keeps its own copy of the job, defaulted as Reconcile
// defaults it, so a plan's ChildCreation renders to what the core planned from the same job and
// options. Neither copyable nor movable (the generator refers to the members). Thread-safe (const).
class PodRenderer {
 public:
  // REQUIRES: `job` valid (as cached, or already defaulted: defaulting twice changes nothing).
  PodRenderer(api::TfJob job, RenderOptions options);
  PodRenderer(const PodRenderer&) = delete;
  PodRenderer& operator=(const PodRenderer&) = delete;
  // REQUIRES: `type` present in the spec.
  nlohmann::json Render(api::ReplicaType type, int32_t index) const;
  // The pod with the events rendering it records (RenderPod's).
  RenderedPod RenderWithEvents(api::ReplicaType type, int32_t index) const;
  // RenderService of the job.
  StatusOr<nlohmann::json> RenderService(api::ReplicaType type, int32_t index) const;
  const api::TfJob& job() const { return job_; }  // defaulted
  const RenderOptions& options() const { return options_; }

 private:
  const api::TfJob job_;
  const RenderOptions options_;
  const TfConfigGenerator tf_config_;
};

// Whether the replicas of `type` get a service: only with a tensorflow container, whose ports
// the service names. RenderService refuses the others; a plan asks this before it names a service to create.
bool HasService(const api::TfJob& job, api::ReplicaType type);

// kInvalidArgument "failed to find the port" when !HasService(job, type).
StatusOr<nlohmann::json> RenderService(const api::TfJob& job, api::ReplicaType type, int32_t index);

// Every pod, service and (with gang scheduling) the PodGroup, in a stable order: replica types
// in spec key order, indices ascending, pods before services, PodGroup first (with
// --gang-scheduler-name kubernetes: the Workload, then the PodGroup).
struct RenderedJob {
  std::vector<nlohmann::json> objects;
  std::vector<RenderEvent> events;
};
StatusOr<RenderedJob> RenderJob(const api::TfJob& job, const RenderOptions& options);

}  // namespace tfjob::core
