// kube-scheduler's own gang scheduling (--gang-scheduler-name kubernetes; docs/semantics.md D27,
// D31, D33): the job's Workload and PodGroup of scheduling.k8s.io in the version discovery finds
// (v1beta1, else v1alpha2; found again on a 404/406), and with v1beta1 and CompositePodGroups
// served at start-up, the hierarchical gang's CompositePodGroup and member PodGroups.
#include "api/object_key.h"
#include "api/pod_group.h"
#include "operator/gang_integration.h"
#include "operator/native_gang_api.h"
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::operator_ {
namespace {

class NativeGang final : public GangIntegration {
 public:
  NativeGang(const core::GangSchedulerPolicy& policy, kube::RestClient& client, const OperatorOptions& options,
             Logger log)
      : GangIntegration(policy),
        ns_(options.ns),
        composite_served_(options.native_composite_pod_groups),
        tracker_(client, options.native_gang_api, std::move(log), options.native_composite_pod_groups) {}

  void Watch(controller::InformerFactory& informers, std::function<void(const std::string&)> enqueue) override {
    controller::ApiVersionTracker& api = tracker_.tracker();
    // Decoded once here: the core reads the typed objects (api/pod_group.h).
    const auto handlers = EnqueueOwningJob<api::PodGroup>(enqueue);
    pod_groups_ = &informers.For<api::PodGroup>(controller::TrackedListWatch(api, "podgroups", ns_),
                                                api::DecodePodGroup, controller::NamespacedKey);
    pod_groups_->AddHandlers(handlers);
    WatchPriorityClasses(informers);
    workloads_ = &informers.For<api::SchedulingWorkload>(controller::TrackedListWatch(api, "workloads", ns_),
                                                         api::DecodeSchedulingWorkload, controller::NamespacedKey);
    workloads_->AddHandlers(EnqueueOwningJob<api::SchedulingWorkload>(std::move(enqueue)));
    // D33: only when served at start-up; a cluster that turns them on later needs a restart.
    if (composite_served_) {
      controller::ListWatchSpec spec{NativeCompositePodGroups(), ns_};
      spec.on_failure = [this](const kube::GroupVersionResource& gvr, const Status& s) { tracker_.CallFailed(gvr, s); };
      composite_pod_groups_ = &informers.For<api::PodGroup>(spec, api::DecodePodGroup, controller::NamespacedKey);
      composite_pod_groups_->AddHandlers(handlers);
    }
  }
  bool HasSynced() const override {
    return pod_groups_->HasSynced() && PriorityClassesSynced() && workloads_->HasSynced() &&
           (!composite_pod_groups_ || composite_pod_groups_->HasSynced());
  }

  // The PodGroup (a terminating one counts as gone), the PriorityClasses, whether the Workload
  // exists, and D33's objects whatever this pass renders (a suspend deletes what exists).
  void Observe(const std::string& key, const api::TfJob& job, core::ObservedState& observed) const override {
    auto pg = pod_groups_->store().Get(key);
    if (pg && !api::BeingDeleted(pg->metadata))
      observed.pod_group = core::PodGroupState{pg->phase, pg->queue, pg->spec, pg->gang_min_count};
    ObservePriorityClasses(job, observed);
    observed.workload_exists = workloads_->store().Get(key) != nullptr;
    if (composite_pod_groups_) {
      auto cpg = composite_pod_groups_->store().Get(key);
      observed.composite_pod_group_exists = cpg && !api::BeingDeleted(cpg->metadata);
    }
    for (core::CompositeMember m : core::kCompositeMembers) {
      const std::string name = core::CompositeMemberPodGroupName(job.metadata.name, m);
      auto member = pod_groups_->store().Get(api::ObjectKey{job.metadata.ns, name}.String());
      if (member && !api::BeingDeleted(member->metadata))
        observed.member_pod_groups[name] = core::PodGroupState{"", "", member->spec, member->gang_min_count};
    }
  }

  // The Workload API version in use (D31); D33: a job's Workload keeps its shape, a new one is
  // composite where the server serves CompositePodGroups and this operator watches them.
  void AdjustOptions(const std::string& key, core::ReconcileOptions& options) const override {
    options.render.native_gang_api = tracker_.current();
    std::optional<bool> existing;
    if (auto w = workloads_->store().Get(key)) existing = w->composite;
    options.render.composite_pod_groups =
        core::CompositeForJob(composite_pod_groups_ != nullptr && tracker_.composite_pod_groups(), existing);
  }

  core::NativeGangApi native_api() const override { return tracker_.current(); }
  void CallFailed(const kube::GroupVersionResource& gvr, const Status& status) override {
    tracker_.CallFailed(gvr, status);
  }
  std::string Unserved(const kube::GroupVersionResource& gvr) const override {
    const controller::ApiVersionTracker& tracker = tracker_.tracker();
    if (tracker.api().group != gvr.group) return "";
    std::optional<Status> error = tracker.last_error();
    return error ? std::string(error->message()) : "";
  }

 private:
  const std::string ns_;
  const bool composite_served_;
  NativeGangApiTracker tracker_;  // the version in use (D31), whether CompositePodGroups are served (D33)
  controller::Informer<api::PodGroup>* pod_groups_ = nullptr;
  controller::Informer<api::SchedulingWorkload>* workloads_ = nullptr;
  controller::Informer<api::PodGroup>* composite_pod_groups_ = nullptr;  // D33
};

}  // namespace

std::unique_ptr<GangIntegration> MakeNativeGang(const core::GangSchedulerPolicy& policy, kube::RestClient& client,
                                                const OperatorOptions& options, Logger log) {
  return std::make_unique<NativeGang>(policy, client, options, std::move(log));
}

// No CRD: the API is kube-apiserver's own, served only with feature gates and runtime-config
// (docs/operator.md). Discovery says which version (D31).
std::optional<int> CheckNativeGangApi(kube::RestClient& client, OperatorOptions* options, std::stop_token stop,
                                      const Logger& log) {
  NativeGangApiTracker tracker(client, options->native_gang_api, log);
  auto found = tracker.Discover();
  if (stop.stop_requested()) return 0;
  if (!found.ok()) {
    log.Error(IsNotFound(found.status()) ? std::string(found.status().message())
                                         : "cannot discover the served versions of scheduling.k8s.io",
              {{"error", found.status().message()}});
    return 2;
  }
  options->native_gang_api = *found;
  options->native_composite_pod_groups = tracker.composite_pod_groups();
  log.Info("gang scheduling by kubernetes",
           {{"api", core::NativeGangApiGroupVersion(*found)},
            {"composite_pod_groups", tracker.composite_pod_groups() ? "true" : "false"}});
  return std::nullopt;
}

}  // namespace tfjob::operator_
