// A gang scheduler whose PodGroup is a custom resource (Volcano, scheduler-plugins; any policy
// with a crd_api): one PodGroup per job, named as the job, in the version its CRD serves, found
// again when a call answers 404/406 (docs/semantics.md 2.8, D34).
#include "api/pod_group.h"
#include "operator/gang_integration.h"
#include "operator/native_gang_api.h"
#include "operator/versioned_apis.h"

namespace tfjob::operator_ {
namespace {

class CrdGang final : public GangIntegration {
 public:
  CrdGang(const core::GangSchedulerPolicy& policy, kube::RestClient& client, const OperatorOptions& options, Logger log)
      : GangIntegration(policy),
        ns_(options.ns),
        api_(client, PodGroupVersionedApi(policy), policy.crd_api().version, std::move(log)) {}

  void Watch(controller::InformerFactory& informers, std::function<void(const std::string&)> enqueue) override {
    pod_groups_ = &informers.For<api::PodGroup>(controller::TrackedListWatch(api_, "podgroups", ns_),
                                                api::DecodePodGroup, controller::NamespacedKey);
    pod_groups_->AddHandlers(EnqueueOwningJob<api::PodGroup>(std::move(enqueue)));
    WatchPriorityClasses(informers);
  }
  bool HasSynced() const override { return pod_groups_->HasSynced() && PriorityClassesSynced(); }

  // The PodGroup (its phase, queue and spec) and the PriorityClasses the templates name.
  void Observe(const std::string& key, const api::TfJob& job, core::ObservedState& observed) const override {
    if (auto pg = pod_groups_->store().Get(key))
      observed.pod_group = core::PodGroupState{pg->phase, pg->queue, pg->spec, pg->gang_min_count};
    ObservePriorityClasses(job, observed);
  }

  void CallFailed(const kube::GroupVersionResource& gvr, const Status& status) override {
    api_.CallFailed(gvr, status);
  }
  std::string Unserved(const kube::GroupVersionResource& gvr) const override {
    if (api_.api().group != gvr.group) return "";
    std::optional<Status> error = api_.last_error();
    return error ? std::string(error->message()) : "";
  }

 private:
  const std::string ns_;
  // The PodGroup API's version in use, rediscovered on 404/406 (D34).
  controller::ApiVersionTracker api_;
  controller::Informer<api::PodGroup>* pod_groups_ = nullptr;
};

}  // namespace

std::unique_ptr<GangIntegration> MakeCrdGang(const core::GangSchedulerPolicy& policy, kube::RestClient& client,
                                             const OperatorOptions& options, Logger log) {
  return std::make_unique<CrdGang>(policy, client, options, std::move(log));
}

}  // namespace tfjob::operator_
