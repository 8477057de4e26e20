#pragma once
// GangIntegration: the operator's side of the gang scheduler in use (--gang-scheduler-name; its
// pure side is core::GangSchedulerPolicy, tfjob/core/gang_scheduler.h). At the named points of a
// pass (operator/integration.h) it observes the group objects of the job (PodGroups, Workloads,
// CompositePodGroups) and the PriorityClasses; for the PlanApplier it names the resources to
// write in the version in use, and follows that version when a call answers 404/406 (D31, D34).
//
// Two kinds, one file each: a CRD's PodGroup (gang_crd.cc: Volcano, scheduler-plugins and any
// scheduler whose policy names a crd_api), and kube-scheduler's own Workload API (gang_native.cc:
// v1alpha2 or v1beta1, with CompositePodGroups, D31, D33). MakeGangIntegration is the one
// registration.

#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "api/tfjob.h"
#include "common/logging.h"
#include "common/status.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"
#include "operator/integration.h"
#include "operator/options.h"
#include "tfjob/core/gang_scheduler.h"

namespace tfjob::operator_ {

class GangIntegration : public ReconcileIntegration {
 public:
  explicit GangIntegration(const core::GangSchedulerPolicy& policy) : policy_(policy) {}
  const core::GangSchedulerPolicy& policy() const { return policy_; }
  std::string_view name() const override { return policy_.name(); }

  // For the PlanApplier (PlanApplierHooks):
  // the Workload API version in use (kube-scheduler's gang; v1alpha2 otherwise);
  virtual core::NativeGangApi native_api() const { return core::NativeGangApi::kV1alpha2; }
  // a call of the gang's API failed: a 404/406 discovers its version again;
  virtual void CallFailed(const kube::GroupVersionResource& gvr, const Status& status) = 0;
  // why the gang's API of `gvr` is not served ("": served, or another group; D34).
  virtual std::string Unserved(const kube::GroupVersionResource& gvr) const = 0;

 protected:
  // PriorityClasses (the process's one informer), for the replica order of a computed
  // minResources (docs/semantics.md 2.8); no handlers: a job sees a changed class at its next pass.
  void WatchPriorityClasses(controller::InformerFactory& informers);
  bool PriorityClassesSynced() const { return priority_classes_ && priority_classes_->HasSynced(); }
  // The values of the PriorityClasses the job's templates name.
  void ObservePriorityClasses(const api::TfJob& job, core::ObservedState& observed) const;

 private:
  const core::GangSchedulerPolicy& policy_;
  controller::Informer<api::PriorityClass>* priority_classes_ = nullptr;
};

// The one registration: the integration of options.gang_scheduler_name; null without gang
// scheduling. Its informers are registered on `informers` with handlers that call `enqueue`.
std::unique_ptr<GangIntegration> MakeGangIntegration(kube::RestClient& client, const OperatorOptions& options,
                                                     Logger log);

// Start-up (docs/operator.md, section 2): the gang's API is served. For a CRD's PodGroup, its CRD
// serves the version spoken; for kube-scheduler's, discovery finds v1beta1 or v1alpha2 and sets
// options->native_gang_api and native_composite_pod_groups. Returns the exit code when the
// operator must not start (0 when stopped meanwhile); nullopt to go on.
std::optional<int> CheckGangApi(kube::RestClient& client, OperatorOptions* options, std::stop_token stop,
                                const Logger& log);

// One per kind: gang_crd.cc, gang_native.cc.
std::unique_ptr<GangIntegration> MakeCrdGang(const core::GangSchedulerPolicy& policy, kube::RestClient& client,
                                             const OperatorOptions& options, Logger log);
std::unique_ptr<GangIntegration> MakeNativeGang(const core::GangSchedulerPolicy& policy, kube::RestClient& client,
                                                const OperatorOptions& options, Logger log);
std::optional<int> CheckNativeGangApi(kube::RestClient& client, OperatorOptions* options, std::stop_token stop,
                                      const Logger& log);

// Shared by both kinds: the key of the job a gang object belongs to (the job of the same name;
// D33's member PodGroups "<job>.<member>"), and the enqueue handlers of a gang object's informer
// (T: a decoded gang object, api/pod_group.h).
std::string OwningJobKey(const api::ObjectMeta& meta);
template <typename T>
controller::InformerHandlers<T> EnqueueOwningJob(std::function<void(const std::string&)> enqueue) {
  auto on_event = [enqueue](const std::shared_ptr<const T>& object) { enqueue(OwningJobKey(object->metadata)); };
  return {on_event, [on_event](const auto&, const auto& n) { on_event(n); }, on_event};
}

}  // namespace tfjob::operator_
