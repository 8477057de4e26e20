#pragma once
// KueueMode: the operator's own Kueue Workloads (--kueue-mode operator; docs/kueue.md), for
// clusters where Kueue's kubeflow.org/tfjob integration is off. Informers on Kueue's Workloads
// (indexed by the TFJob that owns them), ResourceFlavors, WorkloadPriorityClasses and
// PriorityClasses; before each reconcile of a job, Sync runs the pure state machine
// (tfjob/core/kueue_sync.h) on what they show and carries out its step with the RestClient,
// synchronously on the worker: the job's suspend and templates (merge patch at its
// resourceVersion), the Workload's create, update, status (merge patch of /status at its
// resourceVersion), delete and finalizer. It plays the part of Kueue's jobframework reconciler for
// one kind, as controller-runtime would run it beside the job's own controller.
//
// MultiKueue (tfjob/core/kueue_multikueue.h): a manager's job for MultiKueue has its Workload
// here and never runs here; MultiKueue's proven copy on a worker is queued and run here.
//
// Not yet: Kueue's configuration read from the cluster (KueueOptions come from OperatorOptions).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/kueue_workload.h"
#include "api/tfjob.h"
#include "common/logging.h"
#include "common/status.h"
#include "controller/api_versions.h"
#include "controller/event_recorder.h"
#include "controller/informer.h"
#include "controller/informer_factory.h"
#include "kube/rest_client.h"
#include "operator/integration.h"
#include "operator/options.h"
#include "operator/resources.h"
#include "tfjob/core/kueue_sync.h"

namespace tfjob::operator_ {

// The Kueue side of one pass: whether the core may reconcile the job now. It may not while the
// job runs (suspend false) without an admitted Workload, nor right after this pass changed the
// job (the next pass sees the change).
struct KueueGate {
  bool run_core = true;
  std::optional<std::chrono::nanoseconds> requeue_after;
  core::KueueStep step = core::KueueStep::kNotQueued;
  // The job is MultiKueue's proven copy for this cluster: the core runs it although its
  // runPolicy.managedBy names MultiKueue (ObservedState::multikueue_copy, docs/semantics.md D32).
  bool multikueue_copy = false;
};

// The integration hooks the controller's passes (operator/integration.h): BeforeCore is Sync,
// JobGone releases the Workloads of a deleted job (which is reconciled once more for it).
class KueueMode final : public ReconcileIntegration {
 public:
  // `wrote` is called with the job's key and the object the server returned after each write of
  // the job (the controller's mutation cache, docs/semantics.md D28), on the caller's thread. All
  // references must outlive the KueueMode.
  KueueMode(kube::RestClient& client, controller::EventRecorder& events, const OperatorOptions& options,
            std::function<void(const std::string&, const nlohmann::json&)> wrote, Logger log);

  // ReconcileIntegration. Watch: Kueue's Workloads (their events enqueue the owning jobs),
  // ResourceFlavors, WorkloadPriorityClasses and the process's PriorityClasses.
  std::string_view name() const override { return "kueue"; }
  void Watch(controller::InformerFactory& informers, std::function<void(const std::string&)> enqueue) override;
  bool HasSynced() const override;
  bool ReconcilesDeletedJobs() const override { return true; }
  Status JobGone(const std::string& key) override;
  StatusOr<PassGate> BeforeCore(const api::TfJob& job, api::Time now,
                                const std::function<int64_t()>& live_pods) override;

  // The Kueue step for `job` (the cached job, as stored), its writes done. Errors: those of the
  // writes (kConflict: the job or Workload changed meanwhile; retry). Thread-safe: one call per
  // job at a time (the work queue's guarantee).
  // `live_pods`: the job's pods in the cache, whatever their phase.
  StatusOr<KueueGate> Sync(const api::TfJob& job, api::Time now, int64_t live_pods);
  // JobGone: the job `key` is gone: its Workloads lose Kueue's finalizer (garbage collection
  // deletes them).

 private:
  core::KueueObserved ObserveKueue(const api::TfJob& job, api::Time now, int64_t live_pods) const;
  // The plan's writes in its order (job, finalizers, deletes, create, update, status), then events.
  Status Apply(const api::TfJob& job, const core::KueuePlan& plan);
  Status ApplyToWorkloads(const api::TfJob& job, const core::KueuePlan& plan);
  // Workloads in the version of Kueue's API in use (a failed create is told to its tracker).
  kube::GroupVersionResource Workloads() const { return api_.Resource(kKueueWorkloads.resource); }
  Status RemoveFinalizer(const std::string& ns, const std::string& name);

  kube::RestClient& client_;
  controller::EventRecorder& events_;
  std::function<void(const std::string&, const nlohmann::json&)> wrote_;
  const core::KueueOptions options_;
  const std::string ns_;
  Logger log_;
  // Kueue's API version in use (docs/semantics.md D34), rediscovered when a call answers 404/406.
  controller::ApiVersionTracker api_;
  // The shared cache's informers.
  controller::Informer<api::KueueWorkload>* workloads_ = nullptr;  // index "job": the owning job's key
  controller::Informer<core::KueueFlavor>* flavors_ = nullptr;
  controller::Informer<int32_t>* workload_priority_classes_ = nullptr;
  controller::Informer<api::PriorityClass>* priority_classes_ = nullptr;
};

}  // namespace tfjob::operator_
