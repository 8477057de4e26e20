#include "operator/plan_applier.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <map>
#include <set>

#include "api/json_fields.h"
#include "api/object_key.h"
#include "api/tfjob_json.h"
#include "operator/native_gang_api.h"
#include "operator/resources.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::operator_ {

using nlohmann::json;

StatusOr<json> RestObjectWriter::Create(const kube::GroupVersionResource& gvr, const std::string& ns,
                                        const json& object) {
  return client_.Create(gvr, ns, object);
}

Status RestObjectWriter::CreateChild(const kube::GroupVersionResource& gvr, const std::string& ns, const json& object) {
  return client_.CreateDiscardingResponse(gvr, ns, object);
}

Status RestObjectWriter::Delete(const kube::GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                const std::string& precondition_uid) {
  return client_.Delete(gvr, ns, name, {.precondition_uid = precondition_uid});
}

StatusOr<json> RestObjectWriter::MergePatch(const kube::GroupVersionResource& gvr, const std::string& ns,
                                            const std::string& name, const json& patch,
                                            const std::string& subresource) {
  return client_.Patch(gvr, ns, name, kube::PatchType::kMerge, patch, subresource);
}

kube::GroupVersionResource PodGroupResource(const core::GangSchedulerPolicy* gang, core::NativeGangApi native) {
  if (!gang) return kPluginsPodGroups;  // never written
  if (gang->native()) return NativePodGroups(native);
  const core::GangCrdApi api = gang->crd_api();
  return {api.group, api.version, "podgroups"};
}

controller::ObjectReference JobReference(const api::TfJob& job) {
  return {std::string(api::kApiVersion), std::string(api::kKind), job.metadata.ns, job.metadata.name, job.metadata.uid};
}

json StatusPatch(const api::JobStatus& status) {
  json st = api::EncodeStatus(status);
  for (auto& [type, rs] : st["replicaStatuses"].items())
    for (const char* f : {"active", "succeeded", "failed", "restarts", "disruptions"})
      if (!rs.contains(f)) rs[f] = nullptr;
  return json{{"status", st}};
}

PlanApplier::PlanApplier(ObjectWriter& writer, controller::WritePool& pool, controller::Expectations& expectations,
                         controller::EventRecorder& events, controller::Registry& registry,
                         const core::GangSchedulerPolicy* gang, PlanApplierHooks hooks)
    : writer_(writer),
      pool_(pool),
      expectations_(expectations),
      events_(events),
      gang_(gang),
      hooks_(std::move(hooks)) {
  const std::vector<std::string> labels = {"job_namespace", "framework"};
  jobs_deleted_ = &registry.AddCounter("training_operator_jobs_deleted_total", "Counts number of jobs deleted", labels);
  jobs_successful_ =
      &registry.AddCounter("training_operator_jobs_successful_total", "Counts number of jobs successful", labels);
  jobs_failed_ = &registry.AddCounter("training_operator_jobs_failed_total", "Counts number of jobs failed", labels);
  jobs_restarted_ =
      &registry.AddCounter("training_operator_jobs_restarted_total", "Counts number of jobs restarted", labels);
  children_ =
      &registry.AddCounter("tfjob_children_total", "Pods and services created and deleted, by kind, action and result",
                           {"kind", "action", "result"});
}

namespace {

// One replica's creates: either may be absent (its pod or its service exists already).
struct ReplicaCreates {
  std::optional<core::ChildCreation> service;
  std::optional<core::ChildCreation> pod;  // rendered when sent
  int Creates() const { return (service ? 1 : 0) + (pod ? 1 : 0); }
};

// A pass's creates as replicas (D17): first the services whose pods exist already, then each pod
// with its service if that is missing too, in the plan's order of pods.
std::vector<ReplicaCreates> PairByReplica(std::vector<core::ChildCreation> services,
                                          std::vector<core::ChildCreation> pods) {
  using Replica = std::pair<api::ReplicaType, int32_t>;
  std::set<Replica> with_pod;
  for (const auto& p : pods) with_pod.insert({p.type, p.index});
  std::map<Replica, core::ChildCreation> service_of;
  std::vector<ReplicaCreates> items;
  for (auto& s : services) {
    if (with_pod.count({s.type, s.index}))
      service_of.emplace(Replica{s.type, s.index}, std::move(s));
    else
      items.push_back({std::move(s), std::nullopt});
  }
  for (auto& p : pods) {
    ReplicaCreates item;
    if (auto it = service_of.find({p.type, p.index}); it != service_of.end()) item.service = std::move(it->second);
    item.pod = std::move(p);
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace

// One pass's creates, each its own request: every service first, then the pods, each only once
// its own service exists (D17: no pod of ours is ever without its service). Services first
// because they measured best: the pods of a replica each after its own service, or before the
// services not yet sent, reached all Running no sooner for a 500-worker job and cost a burst of
// 200 small jobs a tenth more time and CPU (bench/README.md, "The order of creates"). They go
// under a slow-start window (D17): one first, and each that succeeds lets two more go (the
// window doubles with every round trip, as TCP's slow start), with no wait for a whole batch;
// the first failure stops new sends (a systematic one such as a quota costs one request, not N)
// and those in flight finish. They run on the shared write pool, in the job's lane.
struct PlanApplier::CreateRun {
  using Item = ReplicaCreates;
  std::string key;
  std::string ns;
  controller::ObjectReference job;
  Logger log;
  CreatesDone done;
  std::unique_ptr<const core::PodRenderer> renderer;  // the job's, for the pass's render options
  std::vector<Item> items;                            // each create is touched by the one task that sends it
  // The pass ends when both the creates and the rest of Start (the status write, which goes on
  // while the creates run) have ended: the last of the two calls `done`.
  std::atomic<int> parts{2};
  Status start_error;  // what Start did itself; written before its part ends
  Mutex mu;
  size_t next TFJOB_GUARDED_BY(mu) = 0;                // the first item none of whose creates was sent
  std::deque<size_t> ready_pods TFJOB_GUARDED_BY(mu);  // items whose service exists, their pod not sent
  size_t window TFJOB_GUARDED_BY(mu) = 1;              // creates that may be in flight
  size_t in_flight TFJOB_GUARDED_BY(mu) = 0;
  Status first_error TFJOB_GUARDED_BY(mu);  // of the creates: no more are sent after it

  // The creates the window lets go now, marked in flight: the next item's first create (its
  // service, or its pod when the service exists), then the pods whose service exists. The caller
  // sends them after unlocking (after Stop the pool runs a task on the caller's thread).
  std::vector<CreateSend> TakeSends(bool pool_stopping) TFJOB_REQUIRES(mu) {
    std::vector<CreateSend> out;
    while (first_error.ok() && (!ready_pods.empty() || next < items.size()) && in_flight < window) {
      if (pool_stopping) {
        first_error = CancelledError("the operator is stopping");
        break;
      }
      if (next < items.size()) {
        out.push_back({next, !items[next].service});
        ++next;
      } else {
        out.push_back({ready_pods.front(), true});
        ready_pods.pop_front();
      }
      ++in_flight;
    }
    return out;
  }
};

void PlanApplier::Send(const std::shared_ptr<CreateRun>& run, const std::vector<CreateSend>& sends) {
  for (CreateSend c : sends) pool_.Submit([this, run, c] { SendOne(run, c); }, run->key);
}

// A create's outcome: its metric, its event, and its expectation when no watch event will come.
void PlanApplier::RecordCreate(const CreateRun& run, bool pod, const core::ChildCreation& child, const Status& s) {
  const char* kind = pod ? "pod" : "service";
  if (s.ok()) {
    children_->With({kind, "create", "ok"}).Inc();
    events_.Record(run.job, "Normal", pod ? "SuccessfulCreatePod" : "SuccessfulCreateService",
                   std::string(pod ? "Created pod: " : "Created service: ") + child.name);
    return;
  }
  expectations_.CreationObserved(run.key);  // no watch event will come for this one
  if (IsAlreadyExists(s)) return;           // a deterministic name: ours already
  children_->With({kind, "create", "error"}).Inc();
  events_.Record(run.job, "Warning", pod ? "FailedCreatePod" : "FailedCreateService", "Error creating: " + s.message());
  run.log.Warning("create failed", {{"name", child.name}, {"error", s.message()}});
}

Status PlanApplier::CreateOne(const CreateRun& run, bool pod, const core::ChildCreation& child) {
  Status s = OkStatus();
  {
    // Rendered here, on the pool thread, and released once sent (D17).
    StatusOr<json> object = pod ? StatusOr<json>(run.renderer->Render(child.type, child.index))
                                : run.renderer->RenderService(child.type, child.index);
    s = object.ok() ? writer_.CreateChild(pod ? kube::kPods : kube::kServices, run.ns, *object) : object.status();
  }
  RecordCreate(run, pod, child, s);
  return s;
}

void PlanApplier::SendOne(const std::shared_ptr<CreateRun>& run, CreateSend c) {
  const CreateRun::Item& item = run->items[c.item];
  const Status s = CreateOne(*run, c.pod, c.pod ? *item.pod : *item.service);
  const bool created = s.ok() || IsAlreadyExists(s);
  if (!c.pod && item.pod && !created) expectations_.CreationObserved(run->key);  // its pod is never sent
  std::vector<CreateSend> sends;
  bool over = false;
  {
    MutexLock lock(run->mu);
    --run->in_flight;
    if (created) {
      ++run->window;  // its slot and one more go: the window doubles per round trip
      if (!c.pod && item.pod) run->ready_pods.push_back(c.item);
    } else if (run->first_error.ok()) {
      run->first_error = s;
    }
    sends = run->TakeSends(pool_.Stopping());
    over = sends.empty() && run->in_flight == 0;  // only the last one to finish sees this
  }
  Send(run, sends);
  if (over) FinishCreates(run);
}

// Nothing is in flight and nothing more will be sent: the creates' part of the pass ends.
void PlanApplier::FinishCreates(const std::shared_ptr<CreateRun>& run) {
  int unsent = 0;
  {
    MutexLock lock(run->mu);
    for (size_t k = run->next; k < run->items.size(); ++k) unsent += run->items[k].Creates();
    unsent += static_cast<int>(run->ready_pods.size());
    run->next = run->items.size();
    run->ready_pods.clear();
  }
  for (int k = 0; k < unsent; ++k) expectations_.CreationObserved(run->key);  // never sent
  EndPart(run);
}

void PlanApplier::EndPart(const std::shared_ptr<CreateRun>& run) {
  if (--run->parts > 0) return;
  Status creates;
  {
    MutexLock lock(run->mu);
    creates = run->first_error;
  }
  CreatesDone done = std::move(run->done);
  done(run->start_error.ok() ? creates : run->start_error);
}

// Restarts, scale-down, cleanup: every delete carries the uid the plan saw.
Status PlanApplier::DeleteChildren(const api::TfJob& job, const core::Plan& plan) {
  const std::string key = api::JobKey(job);
  Mutex mu;  // guards result: the deletes run on the pool's threads
  Status result = OkStatus();
  auto remove = [&](const kube::GroupVersionResource& gvr, const core::ChildDeletion& d, bool pod) {
    if (pod && hooks_.deleting_pod) hooks_.deleting_pod(key, d.uid);  // before: its events may come first
    Status s = writer_.Delete(gvr, job.metadata.ns, d.name, d.uid);
    const char* kind = pod ? "pod" : "service";
    // No delete event of ours will come.
    if (pod && (IsNotFound(s) || IsConflict(s)) && hooks_.pod_delete_done) hooks_.pod_delete_done(d.uid);
    if (s.ok()) {
      children_->With({kind, "delete", "ok"}).Inc();
      events_.Record(JobReference(job), "Normal", pod ? "SuccessfulDeletePod" : "SuccessfulDeleteService",
                     std::string(pod ? "Deleted pod: " : "Deleted service: ") + d.name);
      return;
    }
    expectations_.DeletionObserved(key);
    if (IsNotFound(s) || IsConflict(s)) return;  // already gone, or a namesake that is not ours
    children_->With({kind, "delete", "error"}).Inc();
    events_.Record(JobReference(job), "Warning", pod ? "FailedDeletePod" : "FailedDeleteService",
                   "Error deleting: " + s.message());
    MutexLock lock(mu);
    if (result.ok()) result = s;
  };
  // Concurrently on the write pool, in the job's lane: cleaning up a 500-worker job is not 500
  // round trips in a row (the hooks, expectations, metrics and events are thread-safe).
  std::vector<std::function<void()>> deletes;
  for (const auto& d : plan.delete_pods) deletes.push_back([&remove, &d] { remove(kube::kPods, d, true); });
  for (const auto& d : plan.delete_services) deletes.push_back([&remove, &d] { remove(kube::kServices, d, false); });
  pool_.RunAll(std::move(deletes), key);
  MutexLock lock(mu);
  return result;
}

namespace {

// D31: the version a native object was rendered for; `otherwise` (the version in use) for none.
core::NativeGangApi RenderedVersion(const std::optional<json>& object, core::NativeGangApi otherwise) {
  if (!object) return otherwise;
  return api::StringField(*object, "apiVersion") == core::NativeGangApiGroupVersion(core::NativeGangApi::kV1beta1)
             ? core::NativeGangApi::kV1beta1
             : core::NativeGangApi::kV1alpha2;
}

}  // namespace

// A Workload or PodGroup call failed: a 404 or 406 may be an upgrade, or the API turned off
// (D31, D34).
void PlanApplier::NativeCallDone(const kube::GroupVersionResource& gvr, const Status& s) {
  if (gang_ && !s.ok() && hooks_.native_gang_failed) hooks_.native_gang_failed(gvr, s);
}

std::string PlanApplier::CreateFailure(const kube::GroupVersionResource& gvr, const Status& s) const {
  std::string why = VersionNotServed(s) && hooks_.gang_api_unserved ? hooks_.gang_api_unserved(gvr) : "";
  return "Error creating: " + std::string(s.message()) + (why.empty() ? "" : " (" + why + ")");
}

// The Workload (D27) before the PodGroup, the PodGroup's update, and their deletion. Native
// (D31): a create goes to the version its object was rendered for, the rest to the version in use.
Status PlanApplier::ApplyGang(const api::TfJob& job, const core::Plan& plan) {
  const std::string& ns = job.metadata.ns;
  Status result = OkStatus();
  auto keep_first = [&result](const Status& s) {
    if (result.ok() && !s.ok()) result = s;
  };
  const core::NativeGangApi native = hooks_.native_gang_api ? hooks_.native_gang_api() : core::NativeGangApi::kV1alpha2;
  const auto pg_gvr = PodGroupResource(
      gang_, RenderedVersion(plan.create_pod_group ? plan.create_pod_group : plan.update_pod_group, native));
  bool workload_ready = true;  // v1.36's API server refuses a PodGroup whose Workload does not exist
  if (plan.create_workload) {
    const auto gvr = NativeWorkloads(RenderedVersion(plan.create_workload, native));
    auto r = writer_.Create(gvr, ns, *plan.create_workload);
    NativeCallDone(gvr, r.status());
    if (r.ok()) {
      events_.Record(JobReference(job), "Normal", "SuccessfulCreateWorkload", "Created Workload: " + job.metadata.name);
    } else if (!IsAlreadyExists(r.status())) {
      workload_ready = false;
      events_.Record(JobReference(job), "Warning", "FailedCreateWorkload", CreateFailure(gvr, r.status()));
      keep_first(r.status());
    }
  }
  if (plan.create_pod_group && workload_ready) {
    auto r = writer_.Create(pg_gvr, ns, *plan.create_pod_group);
    NativeCallDone(pg_gvr, r.status());
    if (!r.ok() && !IsAlreadyExists(r.status())) {
      events_.Record(JobReference(job), "Warning", "FailedCreatePodGroup", CreateFailure(pg_gvr, r.status()));
      keep_first(r.status());
    }
  }
  if (plan.update_pod_group) {
    auto r = writer_.MergePatch(pg_gvr, ns, job.metadata.name, json{{"spec", (*plan.update_pod_group)["spec"]}}, "");
    NativeCallDone(pg_gvr, r.status());
    keep_first(r.status());
  }
  if (workload_ready) keep_first(CreateCompositeGang(job, plan.composite));
  keep_first(DeleteGang(job, plan, pg_gvr, native));
  return result;
}

// The flat PodGroup, D33's members and CompositePodGroup, then the Workload (named as the job).
Status PlanApplier::DeleteGang(const api::TfJob& job, const core::Plan& plan, const kube::GroupVersionResource& pg_gvr,
                               core::NativeGangApi native) {
  Status result = plan.delete_pod_group ? DeleteNamed(job, pg_gvr, "PodGroup", job.metadata.name) : OkStatus();
  Status s = DeleteCompositeGang(job, plan.composite, native);
  if (result.ok()) result = s;
  s = plan.delete_workload ? DeleteNamed(job, NativeWorkloads(native), "Workload", job.metadata.name) : OkStatus();
  return result.ok() ? s : result;
}

// D33, after the Workload: the CompositePodGroup, then the PodGroups that name it as their
// parent (kube-scheduler holds a member's pods until its parent exists), then member updates.
Status PlanApplier::CreateCompositeGang(const api::TfJob& job, const core::CompositeGangPlan& plan) {
  const std::string& ns = job.metadata.ns;
  if (plan.create_composite) {
    const auto gvr = NativeCompositePodGroups();
    auto r = writer_.Create(gvr, ns, *plan.create_composite);
    NativeCallDone(gvr, r.status());
    if (r.ok()) {
      events_.Record(JobReference(job), "Normal", "SuccessfulCreateCompositePodGroup",
                     "Created CompositePodGroup: " + job.metadata.name);
    } else if (!IsAlreadyExists(r.status())) {
      events_.Record(JobReference(job), "Warning", "FailedCreateCompositePodGroup",
                     "Error creating: " + r.status().message());
      return r.status();  // its members would wait for it
    }
  }
  const auto pg_gvr = NativePodGroups(core::NativeGangApi::kV1beta1);
  Status result = OkStatus();
  for (const auto& member : plan.create_members) {
    auto r = writer_.Create(pg_gvr, ns, member);
    NativeCallDone(pg_gvr, r.status());
    if (!r.ok() && !IsAlreadyExists(r.status()) && result.ok()) result = r.status();
  }
  for (const auto& member : plan.update_members) {
    auto r = writer_.MergePatch(pg_gvr, ns, api::StringField(api::ObjectField(member, "metadata"), "name"),
                                json{{"spec", member["spec"]}}, "");
    NativeCallDone(pg_gvr, r.status());
    if (!r.ok() && result.ok()) result = r.status();
  }
  return result;
}

// D33: the member PodGroups, then the CompositePodGroup (the Workload after them, in ApplyGang).
Status PlanApplier::DeleteCompositeGang(const api::TfJob& job, const core::CompositeGangPlan& plan,
                                        core::NativeGangApi native) {
  Status result = OkStatus();
  for (const auto& name : plan.delete_members) {
    Status s = DeleteNamed(job, NativePodGroups(native), "PodGroup", name);
    if (result.ok()) result = s;
  }
  if (plan.delete_composite) {
    Status s = DeleteNamed(job, NativeCompositePodGroups(), "CompositePodGroup", job.metadata.name);
    if (result.ok()) result = s;
  }
  return result;
}

// One of the job's gang objects: gone already counts as deleted.
Status PlanApplier::DeleteNamed(const api::TfJob& job, const kube::GroupVersionResource& gvr, const std::string& kind,
                                const std::string& name) {
  Status s = writer_.Delete(gvr, job.metadata.ns, name, "");
  if (s.ok() || IsNotFound(s)) {
    events_.Record(JobReference(job), "Normal", "SuccessfulDelete" + kind, "Deleted " + kind + ": " + name);
    return OkStatus();
  }
  events_.Record(JobReference(job), "Warning", "FailedDelete" + kind, "Error deleting: " + s.message());
  return s;
}

// The plan's events, the status (merge patch on /status, D14), the job counters, the TTL delete.
Status PlanApplier::WriteStatus(const api::TfJob& job, const core::Plan& plan) {
  const std::string key = api::JobKey(job);
  for (const auto& e : plan.events)
    events_.Record(JobReference(job), std::string(api::EnumName(e.type)), e.reason, e.message);
  if (!plan.status) return OkStatus();
  auto r = writer_.MergePatch(kTfJobs, job.metadata.ns, job.metadata.name, StatusPatch(*plan.status), "status");
  if (r.ok()) {
    if (hooks_.wrote_job) hooks_.wrote_job(key, *r);
    return OkStatus();
  }
  return IsNotFound(r.status()) ? OkStatus() : r.status().WithContext("writing status");
}

Status PlanApplier::WriteCountersAndTtl(const api::TfJob& job, const core::Plan& plan) {
  const std::string& ns = job.metadata.ns;
  Status result = OkStatus();
  const std::vector<std::string> labels = {ns, "tensorflow"};
  if (plan.counters.successful) jobs_successful_->With(labels).Inc(plan.counters.successful);
  if (plan.counters.failed) jobs_failed_->With(labels).Inc(plan.counters.failed);
  if (plan.counters.restarted) jobs_restarted_->With(labels).Inc(plan.counters.restarted);
  if (plan.delete_job) {
    Status s = writer_.Delete(kTfJobs, ns, job.metadata.name, job.metadata.uid);
    if (s.ok()) {
      jobs_deleted_->With(labels).Inc();
      events_.Record(JobReference(job), "Normal", "SuccessfulDeleteJob", "Deleted job: " + job.metadata.name);
    } else if (!IsNotFound(s)) {
      events_.Record(JobReference(job), "Warning", "FailedDeleteJob", "Error deleting: " + s.message());
      if (result.ok()) result = s;
    }
  }
  return result;
}

std::shared_ptr<PlanApplier::CreateRun> PlanApplier::NewCreateRun(const api::TfJob& job, core::Plan&& plan,
                                                                  const core::RenderOptions& render, const Logger& log,
                                                                  CreatesDone done) {
  auto run = std::make_shared<CreateRun>();
  run->key = api::JobKey(job);
  run->ns = job.metadata.ns;
  run->job = JobReference(job);
  run->log = log;
  run->done = std::move(done);
  run->renderer = std::make_unique<const core::PodRenderer>(job, render);
  run->items = PairByReplica(std::move(plan.create_services), std::move(plan.create_pods));
  return run;
}

std::optional<Status> PlanApplier::WriteFirst(const api::TfJob& job, const core::Plan& plan) {
  // D29: the counts first, where the CRD keeps them: if this write fails, nothing else of the
  // plan happens (a restart's pod is not deleted before its count is kept), and the pass is retried.
  if (plan.counters_annotation) {
    json patch = {
        {"metadata", {{"annotations", {{std::string(core::kCountersAnnotation), *plan.counters_annotation}}}}}};
    auto r = writer_.MergePatch(kTfJobs, job.metadata.ns, job.metadata.name, patch, "");
    if (!r.ok()) return IsNotFound(r.status()) ? OkStatus() : r.status().WithContext("writing the counters annotation");
    if (hooks_.wrote_job) hooks_.wrote_job(api::JobKey(job), *r);
  }
  // The status that ends the job comes before its clean-up (Plan::ends_job): if this write
  // fails, nothing else happens (no child is deleted) and the pass is retried.
  if (plan.ends_job)
    if (Status s = WriteStatus(job, plan); !s.ok()) return s;
  return std::nullopt;
}

Status PlanApplier::WriteLast(const api::TfJob& job, const core::Plan& plan) {
  Status s = plan.ends_job ? OkStatus() : WriteStatus(job, plan);  // else written first
  Status t = WriteCountersAndTtl(job, plan);
  return s.ok() ? t : s;
}

StartOutcome PlanApplier::Start(const api::TfJob& job, core::Plan&& plan, const core::RenderOptions& render,
                                const Logger& log, CreatesDone done) {
  const std::string key = api::JobKey(job);
  if (std::optional<Status> stopped = WriteFirst(job, plan)) return {*stopped};
  // D1: this pass's totals, set once before any write whose watch event the caches will show
  // (they replace what an earlier pass left; each call whose event will never come lowers them).
  expectations_.Expect(key, static_cast<int>(plan.create_services.size() + plan.create_pods.size()),
                       static_cast<int>(plan.delete_pods.size() + plan.delete_services.size()));
  Status result = OkStatus();
  auto keep_first = [&result](const Status& s) {
    if (result.ok() && !s.ok()) result = s;
  };
  keep_first(DeleteChildren(job, plan));
  keep_first(ApplyGang(job, plan));
  if (!plan.create_pods.empty() || !plan.delete_pods.empty() || plan.status)
    log.Info("reconciled", {{"creating_pods", std::to_string(plan.create_pods.size())},
                            {"deleted_pods", std::to_string(plan.delete_pods.size())},
                            {"status_written", plan.status ? "true" : "false"}});
  if (plan.create_services.empty() && plan.create_pods.empty()) {
    keep_first(WriteLast(job, plan));
    return {result};
  }
  // The creates start first: they do not wait for the status write (a round trip per job).
  std::shared_ptr<CreateRun> run = NewCreateRun(job, std::move(plan), render, log, std::move(done));
  std::vector<CreateSend> first;
  {
    MutexLock lock(run->mu);
    first = run->TakeSends(pool_.Stopping());  // the first create
  }
  Send(run, first);
  if (first.empty()) FinishCreates(run);  // the pool is stopping: nothing was sent
  keep_first(WriteLast(job, plan));
  run->start_error = result;
  EndPart(run);
  return {result, true};
}

Status PlanApplier::Apply(const api::TfJob& job, const core::Plan& plan, const Logger& log,
                          const core::RenderOptions& render) {
  std::promise<Status> creates;
  StartOutcome started =
      Start(job, core::Plan(plan), render, log, [&creates](Status s) { creates.set_value(std::move(s)); });
  return started.creating ? creates.get_future().get() : started.status;
}

}  // namespace tfjob::operator_
