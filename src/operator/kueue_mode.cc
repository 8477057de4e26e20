#include "operator/kueue_mode.h"

#include <algorithm>

#include "api/json_fields.h"
#include "api/object_key.h"
#include "operator/plan_applier.h"
#include "operator/resources.h"
#include "operator/versioned_apis.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/kueue_multikueue.h"
#include "tfjob/core/reconcile_phases.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;

// A pass that waits for something Kueue or a user must add looks again this late.
constexpr std::chrono::seconds kRetryAfter{5};

// The keys of the TFJobs a Workload's owner references name (Kueue lists a job's Workloads by
// owner reference).
std::vector<std::string> OwningJobs(const api::KueueWorkload& workload) {
  std::vector<std::string> out;
  for (const api::OwnerReference& ref : workload.metadata.owner_references)
    if (ref.kind == api::kKind && ref.api_version.starts_with(api::kGroup))
      out.push_back(api::ObjectKey{workload.metadata.ns, ref.name}.String());
  return out;
}

StatusOr<core::KueueFlavor> DecodeFlavor(const json& object) {
  const json& spec = api::ObjectField(object, "spec");
  core::KueueFlavor flavor;
  const json& labels = api::ObjectField(spec, "nodeLabels");
  for (auto it = labels.begin(); it != labels.end(); ++it)
    if (it->is_string()) flavor.node_labels[it.key()] = it->get<std::string>();
  auto tolerations = spec.find("tolerations");
  if (tolerations != spec.end() && tolerations->is_array()) flavor.tolerations = *tolerations;
  return flavor;
}

// Steps after which a running job may go on running: its Workload is admitted (or the job is done).
bool MayRun(core::KueueStep step) {
  switch (step) {
    case core::KueueStep::kRunning:
    case core::KueueStep::kReclaimablePods:
    case core::KueueStep::kPodsReady:
    case core::KueueStep::kFinishWorkload:
    case core::KueueStep::kJobFinished:
    case core::KueueStep::kWorkloadFinished: return true;
    default: return false;
  }
}

}  // namespace

KueueMode::KueueMode(kube::RestClient& client, controller::EventRecorder& events, const OperatorOptions& options,
                     std::function<void(const std::string&, const json&)> wrote, Logger log)
    : client_(client),
      events_(events),
      wrote_(std::move(wrote)),
      options_(options.kueue),
      ns_(options.ns),
      log_(log.With({{"component", "kueue-mode"}})),
      api_(client, KueueVersionedApi(), KueueVersionedApi().versions.front().version, log_) {}

void KueueMode::Watch(controller::InformerFactory& informers, std::function<void(const std::string&)> enqueue) {
  // Decoded once here: the core reads the typed Workload (api/kueue_workload.h).
  workloads_ = &informers.For<api::KueueWorkload>(controller::TrackedListWatch(api_, kKueueWorkloads.resource, ns_),
                                                  api::DecodeKueueWorkload, controller::NamespacedKey);
  workloads_->AddIndex("job", [](const api::KueueWorkload& w) { return OwningJobs(w); });
  auto on_event = [enqueue](const auto& w) {
    for (const std::string& key : OwningJobs(*w)) enqueue(key);
  };
  workloads_->AddHandlers({on_event, [on_event](const auto&, const auto& n) { on_event(n); }, on_event});
  // Flavours and classes: no handlers; a job sees a change at its next pass (a wait retries).
  flavors_ = &informers.For<core::KueueFlavor>(controller::TrackedListWatch(api_, kKueueResourceFlavors.resource, ""),
                                               DecodeFlavor, controller::ClusterScopedKey);
  workload_priority_classes_ =
      &informers.For<int32_t>(controller::TrackedListWatch(api_, kKueueWorkloadPriorityClasses.resource, ""),
                              api::DecodePriorityValue, controller::ClusterScopedKey);
  priority_classes_ = &controller::PriorityClassInformer(informers);
}

StatusOr<PassGate> KueueMode::BeforeCore(const api::TfJob& job, api::Time now,
                                         const std::function<int64_t()>& live_pods) {
  StatusOr<KueueGate> gate = Sync(job, now, live_pods());
  if (!gate.ok()) return gate.status();
  return PassGate{gate->run_core, gate->requeue_after, gate->multikueue_copy};
}

bool KueueMode::HasSynced() const {
  return workloads_->HasSynced() && flavors_->HasSynced() && workload_priority_classes_->HasSynced() &&
         priority_classes_->HasSynced();
}

core::KueueObserved KueueMode::ObserveKueue(const api::TfJob& job, api::Time now, int64_t live_pods) const {
  core::KueueObserved o{.job = &job, .live_pods = live_pods, .now = now};
  for (const auto& w : workloads_->store().ByIndex("job", api::JobKey(job))) o.workloads.push_back(*w);
  if (auto prebuilt = core::KueuePrebuiltWorkloadName(job))
    if (auto w = workloads_->store().Get(api::ObjectKey{job.metadata.ns, *prebuilt}.String())) o.prebuilt = *w;
  for (const auto& key : flavors_->store().Keys())
    if (auto f = flavors_->store().Get(key)) o.flavors[key] = *f;
  for (const auto& key : workload_priority_classes_->store().Keys())
    if (auto v = workload_priority_classes_->store().Get(key)) o.priority_classes.workload_priority_classes[key] = *v;
  for (const auto& key : priority_classes_->store().Keys()) {
    auto pc = priority_classes_->store().Get(key);
    if (!pc) continue;
    o.priority_classes.priority_classes[key] = pc->value;
    auto& dflt = o.priority_classes.global_default;
    if (pc->global_default && (!dflt || pc->value < dflt->second)) dflt = {key, pc->value};
  }
  return o;
}

StatusOr<KueueGate> KueueMode::Sync(const api::TfJob& job, api::Time now, int64_t live_pods) {
  if (core::KueueQueueName(job).empty()) return KueueGate{};
  core::KueueObserved observed = ObserveKueue(job, now, live_pods);
  // D32: a job for MultiKueue is queued here whether it is the manager's (the core skips it) or
  // MultiKueue's proven copy (the core runs it); any other controller's job is not ours to queue.
  const core::MultiKueueRole role = core::MultiKueueRoleOf(job, observed.prebuilt);
  if (!job.metadata.deletion_timestamp) {
    if (role == core::MultiKueueRole::kUnproven) {
      // Its Workload may not be in the cache yet: look again (an unowned Workload's events name
      // no job).
      log_.Debug("kueue: a job labelled as MultiKueue's copy without the proof; left alone",
                 {{"tfjob", api::JobKey(job)}});
      return KueueGate{.run_core = false, .requeue_after = kRetryAfter};
    }
    if (role == core::MultiKueueRole::kNone && core::ShouldSkip(job)) return KueueGate{};
  }
  const core::KueuePlan plan = core::PlanKueueWorkload(observed, options_);
  TFJOB_RETURN_IF_ERROR(Apply(job, plan));
  KueueGate gate{.step = plan.step, .multikueue_copy = role == core::MultiKueueRole::kCopy};
  gate.run_core = !plan.job_update && (core::IsJobSuspended(job) || MayRun(plan.step));
  if (plan.retry || plan.step == core::KueueStep::kWaitPrebuilt || plan.step == core::KueueStep::kWaitPodsGone)
    gate.requeue_after = kRetryAfter;
  return gate;
}

Status KueueMode::Apply(const api::TfJob& job, const core::KueuePlan& plan) {
  const std::string& ns = job.metadata.ns;
  if (plan.job_update) {
    auto written = client_.Patch(kTfJobs, ns, job.metadata.name, kube::PatchType::kMerge,
                                 core::KueueJobMergePatch(job, *plan.job_update));
    if (!written.ok()) return written.status().WithContext("kueue: updating the job");
    // A CRD without spec.managedBy (upstream's, D29) prunes it: say so instead of writing again
    // at every pass (the error backs off).
    if (plan.job_update->spec_managed_by &&
        api::StringField(api::ObjectField(*written, "spec"), "managedBy") != *plan.job_update->spec_managed_by)
      return InvalidError(
          "kueue: the installed TFJob CRD has no spec.managedBy (upstream's?): MultiKueue cannot dispatch this job "
          "(docs/kueue.md)");
    // A pass woken before the informer shows this write must not plan it again on the old job.
    if (wrote_) wrote_(api::JobKey(job), *written);
  }
  TFJOB_RETURN_IF_ERROR(ApplyToWorkloads(job, plan));
  for (const core::RenderEvent& e : plan.events)
    events_.Record(JobReference(job), std::string(api::EnumName(e.type)), e.reason, e.message);
  return OkStatus();
}

Status KueueMode::ApplyToWorkloads(const api::TfJob& job, const core::KueuePlan& plan) {
  const std::string& ns = job.metadata.ns;
  for (const std::string& name : plan.remove_finalizer) TFJOB_RETURN_IF_ERROR(RemoveFinalizer(ns, name));
  const kube::GroupVersionResource workloads = Workloads();
  for (const std::string& name : plan.delete_workloads)
    if (Status s = client_.Delete(workloads, ns, name); !s.ok() && !IsNotFound(s))
      return s.WithContext("kueue: deleting Workload " + name);
  if (plan.create_workload) {
    auto created = client_.Create(workloads, ns, *plan.create_workload);
    // The name is Kueue's deterministic one: an existing Workload is this job's (or Kueue's own
    // integration's, if it is on too); the next pass reads it from the cache.
    if (!created.ok() && !IsAlreadyExists(created.status())) {
      // A 404 of a create is Kueue's API not served (any more): the tracker discovers again and the
      // job shows it (D34). (A 404 of a named Workload's write is that Workload gone: not told.)
      api_.CallFailed(workloads, created.status());
      Status s = created.status().WithContext("kueue: creating Workload " + plan.workload_name);
      std::optional<Status> unserved = controller::VersionNotServed(s) ? api_.last_error() : std::nullopt;
      events_.Record(JobReference(job), "Warning", "FailedCreateWorkload",
                     "Error creating: " + std::string(s.message()) +
                         (unserved ? " (" + std::string(unserved->message()) + ")" : ""));
      return s;
    }
  }
  if (plan.update_workload) {
    auto updated = client_.Update(workloads, ns, plan.workload_name, *plan.update_workload);
    if (!updated.ok()) return updated.status().WithContext("kueue: updating Workload " + plan.workload_name);
  }
  if (plan.workload_status) {
    auto written =
        client_.Patch(workloads, ns, plan.workload_name, kube::PatchType::kMerge, *plan.workload_status, "status");
    if (!written.ok())
      return written.status().WithContext("kueue: writing the status of Workload " + plan.workload_name);
  }
  return OkStatus();
}

Status KueueMode::RemoveFinalizer(const std::string& ns, const std::string& name) {
  auto cached = workloads_->store().Get(api::ObjectKey{ns, name}.String());
  if (!cached) return OkStatus();
  json finalizers = json::array();
  for (const std::string& f : cached->finalizers)
    if (f != core::kKueueResourceInUseFinalizer) finalizers.push_back(f);
  if (finalizers.size() == cached->finalizers.size()) return OkStatus();
  // At the version read, so that a finalizer someone added meanwhile is not dropped.
  json patch = {{"metadata",
                 {{"finalizers", finalizers.empty() ? json(nullptr) : finalizers},
                  {"resourceVersion", cached->metadata.resource_version}}}};
  auto written = client_.Patch(Workloads(), ns, name, kube::PatchType::kMerge, patch);
  if (!written.ok() && !IsNotFound(written.status()))
    return written.status().WithContext("kueue: removing the finalizer of Workload " + name);
  return OkStatus();
}

Status KueueMode::JobGone(const std::string& key) {
  for (const auto& w : workloads_->store().ByIndex("job", key))
    TFJOB_RETURN_IF_ERROR(RemoveFinalizer(w->metadata.ns, w->metadata.name));
  return OkStatus();
}

}  // namespace tfjob::operator_
