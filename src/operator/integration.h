#pragma once
// ReconcileIntegration: a part the TFJob controller calls at named points of each pass, so that
// what a gang scheduler or Kueue adds is not written into TfJobController
// (docs/architecture.md, "One reconcile"). The controller keeps a list of them (the gang
// scheduler's, operator/gang_integration.h; Kueue's operator mode, operator/kueue_mode.h) and
// calls each, in that order, at:
//
//   JobGone      the job is no longer in the cache (before the controller forgets it)
//   BeforeCore   after the expectations (D1), before Observe: may end the pass before the core
//   Observe      what its caches show, into the core's ObservedState
//   AdjustOptions the pass's ReconcileOptions (e.g. the Workload API version in use, D31)
//
// Its informers are registered on the process's one cache (Watch), their handlers enqueue jobs.
// Kueue's jobframework has the same shape: a GenericJob with optional capabilities.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "api/tfjob.h"
#include "api/time.h"
#include "common/status.h"
#include "controller/informer_factory.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::operator_ {

// BeforeCore's answer: whether the core may reconcile the job now.
struct PassGate {
  bool run_core = true;
  std::optional<std::chrono::nanoseconds> requeue_after;  // when run_core is false: look again then
  // The job is MultiKueue's proven copy for this cluster: the core runs it although its
  // runPolicy.managedBy names MultiKueue (ObservedState::multikueue_copy, docs/semantics.md D32).
  bool multikueue_copy = false;
};

class ReconcileIntegration {
 public:
  virtual ~ReconcileIntegration() = default;

  virtual std::string_view name() const = 0;
  // Registers its informers on `informers`; their handlers call `enqueue` with a job's key.
  virtual void Watch(controller::InformerFactory& informers, std::function<void(const std::string&)> enqueue) = 0;
  // Its informers have synced.
  virtual bool HasSynced() const = 0;
  // A deleted job is reconciled once more, so that JobGone runs for it.
  virtual bool ReconcilesDeletedJobs() const { return false; }

  // The named points. An error ends the pass (the key backs off).
  virtual Status JobGone(const std::string& /*key*/) { return OkStatus(); }
  // `live_pods`: the job's pods in the cache, whatever their phase (counted when asked).
  virtual StatusOr<PassGate> BeforeCore(const api::TfJob& /*job*/, api::Time /*now*/,
                                        const std::function<int64_t()>& /*live_pods*/) {
    return PassGate{};
  }
  virtual void Observe(const std::string& /*key*/, const api::TfJob& /*job*/, core::ObservedState& /*observed*/) const {
  }
  virtual void AdjustOptions(const std::string& /*key*/, core::ReconcileOptions& /*options*/) const {}
};

}  // namespace tfjob::operator_
