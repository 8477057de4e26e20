#include "operator/tfjob_controller.h"

#include "api/json_fields.h"

#include <charconv>
#include <cstdint>
#include <future>

#include "api/object_key.h"
#include "api/pod_json.h"
#include "api/tfjob_json.h"
#include "operator/resources.h"
#include "tfjob/core/naming.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;
namespace core = ::tfjob::tfjob::core;

// A resourceVersion as a number (etcd's revision), for the mutation cache's "newer than" only,
// as client-go's MutationCache compares them; nullopt when it is not one.
std::optional<uint64_t> ResourceVersionNumber(const std::string& rv) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), v);
  if (rv.empty() || ec != std::errc() || ptr != rv.data() + rv.size()) return std::nullopt;
  return v;
}

std::string JobKeyOf(const api::ChildMeta& meta) {
  return meta.job_name.empty() ? "" : api::ObjectKey{meta.ns, meta.job_name}.String();
}

// The status as a merge patch: zero counters become null so they disappear (upstream's
// omitempty `{}`), instead of keeping their previous value.
json StatusPatch(const api::JobStatus& status) {
  json st = api::EncodeStatus(status);
  for (auto& [type, rs] : st["replicaStatuses"].items())
    for (const char* f : {"active", "succeeded", "failed", "restarts", "disruptions"})
      if (!rs.contains(f)) rs[f] = nullptr;
  return json{{"status", st}};
}

// A PriorityClass trimmed to its value (scheduling.k8s.io/v1: `value`, int32, required).
StatusOr<int32_t> DecodePriorityClassValue(const json& j) {
  auto v = j.find("value");
  bool fits =
      v != j.end() && (v->is_number_unsigned()  ? v->get<uint64_t>() <= INT32_MAX
                       : v->is_number_integer() ? v->get<int64_t>() >= INT32_MIN && v->get<int64_t>() <= INT32_MAX
                                                : false);
  if (!fits) return InvalidArgumentError("a PriorityClass without an int32 value");
  return static_cast<int32_t>(v->get<int64_t>());
}

const kube::GroupVersionResource& PodGroupResource(core::GangScheduler gang) {
  if (gang == core::GangScheduler::kKubernetes) return kNativePodGroups;
  return gang == core::GangScheduler::kVolcano ? kVolcanoPodGroups : kPluginsPodGroups;
}

// A native PodGroup being deleted waits for its pods (the PodGroupProtection finalizer of
// kube-controller-manager): it counts as gone, so the reconcile does not delete it again on every
// pass (D27).
bool Terminating(const json& object) {
  return api::ObjectField(object, "metadata").contains("deletionTimestamp");
}

}  // namespace

QueueAction QueueActionFor(const StatusOr<ReconcileResult>& outcome) {
  if (!outcome.ok()) return QueueAction::kAddRateLimited;
  if (outcome->requeue_after) return QueueAction::kForgetAndAddAfter;  // 0: due now (as before)
  return QueueAction::kForget;
}

TfJobController::TfJobController(kube::RestClient& client, Clock& clock, controller::Registry& registry,
                                 controller::EventRecorder& events, const OperatorOptions& options, Logger log)
    : client_(client),
      clock_(clock),
      registry_(registry),
      events_(events),
      options_(options),
      log_(log.With({{"controller", "tfjob-controller"}})),
      queue_(clock, "tfjob-controller", &registry),
      expectations_(clock) {
  reconcile_options_.render.gang_scheduler_name = options.gang_scheduler_name;
  reconcile_options_.render.tf_config.cluster_domain = options.cluster_domain;
  reconcile_options_.render.tf_config.evaluator_in_cluster = options.tf_config_evaluator_in_cluster;
  reconcile_options_.counters_in_annotation = options.counters_in_annotation;
  const std::vector<std::string> labels = {"job_namespace", "framework"};
  jobs_created_ = &registry.AddCounter("training_operator_jobs_created_total", "Counts number of jobs created", labels);
  jobs_deleted_ = &registry.AddCounter("training_operator_jobs_deleted_total", "Counts number of jobs deleted", labels);
  jobs_successful_ =
      &registry.AddCounter("training_operator_jobs_successful_total", "Counts number of jobs successful", labels);
  jobs_failed_ = &registry.AddCounter("training_operator_jobs_failed_total", "Counts number of jobs failed", labels);
  jobs_restarted_ =
      &registry.AddCounter("training_operator_jobs_restarted_total", "Counts number of jobs restarted", labels);
  reconcile_total_ = &registry.AddCounter("controller_runtime_reconcile_total",
                                          "Total number of reconciliations per controller", {"controller", "result"});
  reconcile_errors_ = &registry
                           .AddCounter("controller_runtime_reconcile_errors_total",
                                       "Total number of reconciliation errors per controller", {"controller"})
                           .With({"tfjob-controller"});
  reconcile_time_ = &registry
                         .AddHistogram("controller_runtime_reconcile_time_seconds",
                                       "Length of time per reconciliation per controller", {"controller"})
                         .With({"tfjob-controller"});
  auto latency_buckets = controller::ExponentialBuckets(0.05, 2, 14);
  pods_created_latency_ =
      &registry
           .AddHistogram("tfjob_job_pods_created_seconds", "Time from a TFJob's creation until all its pods exist", {},
                         latency_buckets)
           .With({});
  pods_running_latency_ = &registry
                               .AddHistogram("tfjob_job_pods_running_seconds",
                                             "Time from a TFJob's creation until all its pods run", {}, latency_buckets)
                               .With({});
  pod_disruptions_ =
      &registry.AddCounter("tfjob_pod_disruptions_total",
                           "Pods of TFJobs disrupted by others (evicted, preempted, deleted) and recreated, by reason",
                           {"job_namespace", "replica_type", "reason"});
  children_ =
      &registry.AddCounter("tfjob_children_total", "Pods and services created and deleted, by kind, action and result",
                           {"kind", "action", "result"});

  const std::string selector = std::string(core::kLabelOperatorName) + "=" + std::string(core::kControllerName);
  jobs_ = std::make_unique<controller::Informer<api::TfJob>>(client, controller::ListWatchSpec{kTfJobs, options.ns},
                                                             api::DecodeTfJobStrict, controller::NamespacedKey, log_);
  jobs_->AddHandlers({[this](const auto& j) {
                        jobs_created_->With({j->metadata.ns, "tensorflow"}).Inc();
                        Enqueue(api::JobKey(*j));
                      },
                      [this](const auto& o, const auto& n) {
                        if (o->metadata.resource_version != n->metadata.resource_version)
                          Enqueue(api::JobKey(*n));
                      },
                      [this](const auto& j) {
                        expectations_.Delete(api::JobKey(*j));
                        {
                          std::lock_guard lock(written_mu_);
                          written_.erase(api::JobKey(*j));
                        }
                        {
                          std::lock_guard lock(disruptions_mu_);
                          disruptions_.erase(api::JobKey(*j));
                        }
                        MutexLock lock(latency_mu_);
                        created_observed_.erase(j->metadata.uid);
                        running_observed_.erase(j->metadata.uid);
                      }});
  auto job_index = [](const api::ChildMeta& m) {
    std::string k = JobKeyOf(m);
    return k.empty() ? std::vector<std::string>{} : std::vector<std::string>{k};
  };
  pods_ = std::make_unique<controller::Informer<api::Pod>>(client,
                                                           controller::ListWatchSpec{kube::kPods, options.ns, selector},
                                                           api::DecodePod, controller::NamespacedKey, log_);
  pods_->AddIndex("job", [job_index](const api::Pod& p) { return job_index(p.meta); });
  pods_->AddHandlers({[this](const auto& p) { OnChildEvent(p->meta, 1, 0); },
                      [this](const auto& o, const auto& n) {
                        if (!o->meta.deletion_timestamp && n->meta.deletion_timestamp) NoteDisruption(*n);
                        if (o->meta.resource_version != n->meta.resource_version) OnChildEvent(n->meta, 0, 0);
                      },
                      [this](const auto& p) {
                        PodGone(*p);
                        OnChildEvent(p->meta, 0, 1);
                      }});
  services_ = std::make_unique<controller::Informer<api::Service>>(
      client, controller::ListWatchSpec{kube::kServices, options.ns, selector}, api::DecodeService,
      controller::NamespacedKey, log_);
  services_->AddIndex("job", [job_index](const api::Service& s) { return job_index(s.meta); });
  services_->AddHandlers({[this](const auto& s) { OnChildEvent(s->meta, 1, 0); }, nullptr,
                          [this](const auto& s) { OnChildEvent(s->meta, 0, 1); }});
  auto gang = core::GangSchedulerFor(options.gang_scheduler_name);
  if (gang != core::GangScheduler::kNone) {
    pod_groups_ = std::make_unique<controller::Informer<json>>(
        client, controller::ListWatchSpec{PodGroupResource(gang), options.ns},
        [](const json& j) -> StatusOr<json> { return j; }, controller::NamespacedKey, log_);
    auto enqueue = [this](const auto& pg) {
      const json& m = api::ObjectField(*pg, "metadata");
      Enqueue(api::ObjectKey{api::StringField(m, "namespace"), api::StringField(m, "name")}.String());
    };
    pod_groups_->AddHandlers({enqueue, [enqueue](const auto&, const auto& n) { enqueue(n); }, enqueue});
    // No handlers, as upstream: a job sees a changed class at its next reconcile.
    priority_classes_ = std::make_unique<controller::Informer<int32_t>>(
        client, controller::ListWatchSpec{kPriorityClasses, ""}, DecodePriorityClassValue,
        [](const json& j) { return api::StringField(api::ObjectField(j, "metadata"), "name"); }, log_);
    if (gang == core::GangScheduler::kKubernetes) {
      workloads_ = std::make_unique<controller::Informer<json>>(
          client, controller::ListWatchSpec{kNativeWorkloads, options.ns},
          [](const json& j) -> StatusOr<json> { return j; }, controller::NamespacedKey, log_);
      workloads_->AddHandlers({enqueue, [enqueue](const auto&, const auto& n) { enqueue(n); }, enqueue});
    }
  }
}

TfJobController::~TfJobController() {
  Stop();
}

void TfJobController::OnChildEvent(const api::ChildMeta& meta, int created, int deleted) {
  std::string key = JobKeyOf(meta);
  if (key.empty()) return;
  for (int i = 0; i < created; ++i) expectations_.CreationObserved(key);
  for (int i = 0; i < deleted; ++i) expectations_.DeletionObserved(key);
  Enqueue(key);
}

void TfJobController::NoteDisruption(const api::Pod& pod) {
  std::string key = JobKeyOf(pod.meta);
  // A standby replica notes nothing: the leader counts what it sees, and notes a standby kept
  // would count those disruptions again after a failover.
  if (key.empty() || !leading_.load()) return;
  // A pod that had already ended is not disrupted by its deletion (and a pod that a previous
  // operator process deleted to restart it is Failed): only a DisruptionTarget makes it one.
  if (pod.disruption_reason.empty() && (pod.phase == api::PodPhase::kSucceeded || pod.phase == api::PodPhase::kFailed))
    return;
  std::lock_guard lock(disruptions_mu_);
  if (own_deletes_.contains(pod.meta.uid)) return;
  core::PodDisruption d{pod.meta.name,          pod.meta.uid,          pod.meta.replica_type,
                        pod.meta.replica_index, pod.disruption_reason, pod.disruption_message};
  if (d.reason.empty()) {
    d.reason = std::string(core::kDeletedExternally);
    d.message = "deleted without the operator asking";
  }
  disruptions_[key].try_emplace(pod.meta.uid, std::move(d));
}

void TfJobController::PodGone(const api::Pod& pod) {
  bool own = false;
  {
    std::lock_guard lock(disruptions_mu_);
    own = own_deletes_.erase(pod.meta.uid) > 0;
  }
  // A pod last seen with a deletionTimestamp was noted then (or was ours).
  if (!own && !pod.meta.deletion_timestamp) NoteDisruption(pod);
}

void TfJobController::DeletingPod(const std::string& key, const std::string& uid) {
  std::lock_guard lock(disruptions_mu_);
  own_deletes_.insert(uid);
  // Someone else was quicker (e.g. the pod GC of a pod a disruption left Failed, which this pass
  // counted already): the note must not count it a second time.
  if (auto it = disruptions_.find(key); it != disruptions_.end()) it->second.erase(uid);
}

void TfJobController::DeleteDone(const std::string& uid) {
  std::lock_guard lock(disruptions_mu_);
  own_deletes_.erase(uid);
}

void TfJobController::StartInformers() {
  jobs_->Start();
  pods_->Start();
  services_->Start();
  if (pod_groups_) pod_groups_->Start();
  if (priority_classes_) priority_classes_->Start();
  if (workloads_) workloads_->Start();
  queue_.StartDelayDriver();
}

bool TfJobController::HasSynced() const {
  return jobs_->HasSynced() && pods_->HasSynced() && services_->HasSynced() &&
         (!pod_groups_ || pod_groups_->HasSynced()) && (!priority_classes_ || priority_classes_->HasSynced()) &&
         (!workloads_ || workloads_->HasSynced());
}

void TfJobController::StartWorkers() {
  MutexLock lock(workers_mu_);
  if (stopped_) return;  // the lease came after the stop: nothing to start
  leading_ = true;
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this](std::stop_token stop) { Worker(stop); });
}

bool TfJobController::WorkersAlive() const {
  MutexLock lock(workers_mu_);
  return live_workers_.load() == static_cast<int>(workers_.size());
}

void TfJobController::Stop() {
  std::vector<std::jthread> workers;
  {
    MutexLock lock(workers_mu_);
    stopped_ = true;
    workers.swap(workers_);
  }
  queue_.ShutDown();
  workers.clear();  // joins (outside the lock): in-flight reconciles finish
  jobs_->Stop();
  pods_->Stop();
  services_->Stop();
  if (pod_groups_) pod_groups_->Stop();
  if (priority_classes_) priority_classes_->Stop();
  if (workloads_) workloads_->Stop();
}

void TfJobController::Worker(std::stop_token stop) {
  ++live_workers_;
  while (auto key = queue_.Get(stop)) {
    auto start = clock_.SteadyNow();
    StatusOr<ReconcileResult> outcome = ReconcileKey(*key);
    reconcile_time_->Observe(std::chrono::duration<double>(clock_.SteadyNow() - start).count());
    switch (QueueActionFor(outcome)) {
      case QueueAction::kAddRateLimited:
        reconcile_errors_->Inc();
        reconcile_total_->With({"tfjob-controller", "error"}).Inc();
        log_.Warning("reconcile failed; retrying with backoff",
                     {{"tfjob", *key}, {"error", outcome.status().message()}});
        queue_.AddRateLimited(*key);
        break;
      case QueueAction::kForgetAndAddAfter:
        reconcile_total_->With({"tfjob-controller", "success"}).Inc();
        queue_.Forget(*key);
        queue_.AddAfter(*key, *outcome->requeue_after);
        break;
      case QueueAction::kForget:
        reconcile_total_->With({"tfjob-controller", "success"}).Inc();
        queue_.Forget(*key);
        break;
    }
    queue_.Done(*key);
  }
  --live_workers_;
}

controller::ObjectReference TfJobController::Ref(const api::TfJob& job) const {
  return {std::string(api::kApiVersion), std::string(api::kKind), job.metadata.ns, job.metadata.name, job.metadata.uid};
}

std::shared_ptr<const api::TfJob> TfJobController::Newest(const std::string& key,
                                                          std::shared_ptr<const api::TfJob> cached) {
  std::lock_guard lock(written_mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  auto mine = ResourceVersionNumber(it->second->metadata.resource_version);
  auto seen = ResourceVersionNumber(cached->metadata.resource_version);
  if (mine && seen && *mine > *seen && it->second->metadata.uid == cached->metadata.uid) return it->second;
  written_.erase(it);  // the informer caught up (or the job was replaced)
  return cached;
}

void TfJobController::Wrote(const std::string& key, const json& object) {
  auto decoded = api::DecodeTfJobStrict(object);
  std::lock_guard lock(written_mu_);
  if (decoded.ok())
    written_[key] = std::make_shared<const api::TfJob>(std::move(decoded).value());
  else
    written_.erase(key);
}

StatusOr<ReconcileResult> TfJobController::ReconcileKey(const std::string& key) {
  auto job = jobs_->store().Get(key);
  if (!job) {
    expectations_.Delete(key);
    {
      std::lock_guard lock(disruptions_mu_);
      disruptions_.erase(key);
    }
    std::lock_guard lock(written_mu_);
    written_.erase(key);
    return ReconcileResult{};  // deleted: its children go with it (owner references)
  }
  job = Newest(key, std::move(job));
  // Wait for the cache to show every create and delete we issued (D1).
  if (!expectations_.Satisfied(key)) return ReconcileResult{};
  Logger log = log_.With({{"tfjob", key}, {"reconcile_id", std::to_string(++reconcile_ids_)}});
  core::ObservedState observed{*job, {}, {}, std::nullopt, clock_.Now(), {}};
  {
    // Before the pods: a note is made after the pod cache changed, so the pods read next show it.
    std::lock_guard lock(disruptions_mu_);
    if (auto it = disruptions_.find(key); it != disruptions_.end())
      for (const auto& [uid, d] : it->second) observed.disruptions.push_back(d);
  }
  for (const auto& p : pods_->store().ByIndex("job", key)) observed.pods.push_back(*p);
  for (const auto& s : services_->store().ByIndex("job", key)) observed.services.push_back(*s);
  if (pod_groups_) {
    auto pg = pod_groups_->store().Get(key);
    if (pg && workloads_ && Terminating(*pg)) pg = nullptr;
    if (pg) {
      observed.pod_group =
          core::PodGroupState{api::StringField(api::ObjectField(*pg, "status"), "phase"),
                              api::StringField(api::ObjectField(*pg, "spec"), "queue"), api::ObjectField(*pg, "spec")};
    }
  }
  if (priority_classes_) {
    for (const auto& [type, spec] : job->spec.replica_specs) {
      if (!spec) continue;
      std::string name = api::StringField(api::ObjectField(spec->pod_template, "spec"), "priorityClassName");
      if (name.empty()) continue;
      if (auto value = priority_classes_->store().Get(name)) observed.priority_classes[name] = *value;
    }
  }
  if (workloads_) observed.workload_exists = workloads_->store().Get(key) != nullptr;
  core::Plan plan = core::Reconcile(observed, reconcile_options_);
  auto consume_notes = [this, &key, &observed] {
    std::lock_guard lock(disruptions_mu_);
    auto it = disruptions_.find(key);
    if (it == disruptions_.end()) return;
    for (const auto& d : observed.disruptions) it->second.erase(d.uid);
    if (it->second.empty()) disruptions_.erase(it);
  };
  if (plan.skip) {
    consume_notes();  // never counted: another controller's job, or one being deleted
    return ReconcileResult{};
  }
  Status applied = Apply(*job, plan, log);
  if (applied.ok()) {
    consume_notes();
    for (const auto& d : plan.disruptions)
      pod_disruptions_
          ->With(
              {job->metadata.ns, d.replica_type ? std::string(api::ReplicaTypeLabel(*d.replica_type)) : "", d.reason})
          .Inc();
    ObserveLatencies(*job, observed.pods, plan.create_pods.size());
  }
  if (!applied.ok()) return applied;  // the Worker backs off; the requeue_after waits for a success
  return ReconcileResult{plan.requeue_after};
}

void TfJobController::ObserveLatencies(const api::TfJob& job, const std::vector<api::Pod>& pods, size_t created_now) {
  if (!job.metadata.creation_timestamp) return;
  const int64_t total = api::TotalReplicas(job.spec);  // the job as cached: ReplicaSpecsByType reads it as defaulted
  int64_t existing = 0, running = 0;
  for (const auto& p : pods) {
    if (p.meta.controller_uid != job.metadata.uid || p.meta.deletion_timestamp) continue;
    ++existing;
    if (p.phase == api::PodPhase::kRunning) ++running;
  }
  double age = std::chrono::duration<double>(clock_.Now() - *job.metadata.creation_timestamp).count();
  MutexLock lock(latency_mu_);
  if (total > 0 && existing + static_cast<int64_t>(created_now) >= total &&
      created_observed_.insert(job.metadata.uid).second)
    pods_created_latency_->Observe(age);
  if (total > 0 && running >= total && running_observed_.insert(job.metadata.uid).second)
    pods_running_latency_->Observe(age);
}

Status TfJobController::CreateChildren(const api::TfJob& job, const core::Plan& plan, const Logger& log) {
  struct Item {
    bool pod;
    std::string name;
    const json* object;
  };
  std::vector<Item> items;
  for (const auto& s : plan.create_services) items.push_back({false, s.name, &s.object});
  for (const auto& p : plan.create_pods) items.push_back({true, p.name, &p.object});
  const std::string key = job.metadata.ns + "/" + job.metadata.name;
  expectations_.Raise(key, static_cast<int>(items.size()), 0);
  // Slow start (1, 2, 4, ...): a systematic failure (quota, admission) costs one request, not N.
  size_t next = 0;
  Status first_error = OkStatus();
  for (size_t batch = 1; next < items.size() && first_error.ok(); batch *= 2) {
    size_t end = std::min(items.size(), next + batch);
    std::vector<std::future<Status>> results;
    for (size_t i = next; i < end; ++i) {
      const Item& item = items[i];
      results.push_back(std::async(std::launch::async, [this, &job, &item] {
        return client_.Create(item.pod ? kube::kPods : kube::kServices, job.metadata.ns, *item.object).status();
      }));
    }
    for (size_t i = next; i < end; ++i) {
      Status s = results[i - next].get();
      const Item& item = items[i];
      const char* kind = item.pod ? "pod" : "service";
      if (s.ok()) {
        children_->With({kind, "create", "ok"}).Inc();
        events_.Record(Ref(job), "Normal", item.pod ? "SuccessfulCreatePod" : "SuccessfulCreateService",
                       std::string(item.pod ? "Created pod: " : "Created service: ") + item.name);
        continue;
      }
      expectations_.CreationObserved(key);  // no watch event will come for this one
      if (IsAlreadyExists(s)) continue;     // deterministic name: it is ours already
      children_->With({kind, "create", "error"}).Inc();
      events_.Record(Ref(job), "Warning", item.pod ? "FailedCreatePod" : "FailedCreateService",
                     "Error creating: " + s.message());
      log.Warning("create failed", {{"name", item.name}, {"error", s.message()}});
      if (first_error.ok()) first_error = s;
    }
    next = end;
  }
  for (size_t i = next; i < items.size(); ++i) expectations_.CreationObserved(key);  // never sent
  return first_error;
}

Status TfJobController::Apply(const api::TfJob& job, const core::Plan& plan, const Logger& log) {
  const std::string key = job.metadata.ns + "/" + job.metadata.name;
  const std::string& ns = job.metadata.ns;
  Status result = OkStatus();
  auto keep_first = [&result](const Status& s) {
    if (result.ok() && !s.ok()) result = s;
  };
  // D29: the counts first, where the CRD keeps them: if this write fails, nothing else of the
  // plan happens (a restart's pod is not deleted before its count is kept), and the pass is retried.
  if (plan.counters_annotation) {
    json patch = {
        {"metadata", {{"annotations", {{std::string(core::kCountersAnnotation), *plan.counters_annotation}}}}}};
    auto r = client_.Patch(kTfJobs, ns, job.metadata.name, kube::PatchType::kMerge, patch);
    if (!r.ok()) return IsNotFound(r.status()) ? OkStatus() : r.status().WithContext("writing the counters annotation");
    Wrote(key, *r);
  }
  // Deletes first (restarts, scale-down, cleanup).
  expectations_.Raise(key, 0, static_cast<int>(plan.delete_pods.size() + plan.delete_services.size()));
  auto remove = [&](const kube::GroupVersionResource& gvr, const core::ChildDeletion& d, bool pod) {
    if (pod) DeletingPod(key, d.uid);  // before the request: its watch events may come first
    Status s = client_.Delete(gvr, ns, d.name, {.precondition_uid = d.uid});
    const char* kind = pod ? "pod" : "service";
    if (pod && (IsNotFound(s) || IsConflict(s))) DeleteDone(d.uid);  // no delete event of ours will come
    if (s.ok()) {
      children_->With({kind, "delete", "ok"}).Inc();
      events_.Record(Ref(job), "Normal", pod ? "SuccessfulDeletePod" : "SuccessfulDeleteService",
                     std::string(pod ? "Deleted pod: " : "Deleted service: ") + d.name);
      return;
    }
    expectations_.DeletionObserved(key);
    if (IsNotFound(s) || IsConflict(s)) return;  // already gone, or a namesake that is not ours
    children_->With({kind, "delete", "error"}).Inc();
    events_.Record(Ref(job), "Warning", pod ? "FailedDeletePod" : "FailedDeleteService",
                   "Error deleting: " + s.message());
    keep_first(s);
  };
  for (const auto& d : plan.delete_pods) remove(kube::kPods, d, true);
  for (const auto& d : plan.delete_services) remove(kube::kServices, d, false);

  const auto& pg_gvr = PodGroupResource(core::GangSchedulerFor(options_.gang_scheduler_name));
  bool workload_ready = true;  // the API server refuses a PodGroup whose Workload does not exist
  if (plan.create_workload) {
    auto r = client_.Create(kNativeWorkloads, ns, *plan.create_workload);
    if (r.ok()) {
      events_.Record(Ref(job), "Normal", "SuccessfulCreateWorkload", "Created Workload: " + job.metadata.name);
    } else if (!IsAlreadyExists(r.status())) {
      workload_ready = false;
      events_.Record(Ref(job), "Warning", "FailedCreateWorkload", "Error creating: " + r.status().message());
      keep_first(r.status());
    }
  }
  if (plan.create_pod_group && workload_ready) {
    auto r = client_.Create(pg_gvr, ns, *plan.create_pod_group);
    if (!r.ok() && !IsAlreadyExists(r.status())) keep_first(r.status());
  }
  if (plan.update_pod_group) {
    auto r = client_.Patch(pg_gvr, ns, job.metadata.name, kube::PatchType::kMerge,
                           json{{"spec", (*plan.update_pod_group)["spec"]}});
    keep_first(r.status());
  }
  // The job's PodGroup or Workload (named as the job): gone already counts as deleted.
  auto delete_named_as_job = [&](const kube::GroupVersionResource& gvr, const std::string& kind) {
    Status s = client_.Delete(gvr, ns, job.metadata.name);
    if (s.ok() || IsNotFound(s)) {
      events_.Record(Ref(job), "Normal", "SuccessfulDelete" + kind, "Deleted " + kind + ": " + job.metadata.name);
    } else {
      events_.Record(Ref(job), "Warning", "FailedDelete" + kind, "Error deleting: " + s.message());
      keep_first(s);
    }
  };
  if (plan.delete_pod_group) delete_named_as_job(pg_gvr, "PodGroup");
  if (plan.delete_workload) delete_named_as_job(kNativeWorkloads, "Workload");
  keep_first(CreateChildren(job, plan, log));

  // Events of the plan, then the status (merge patch on /status, D14).
  for (const auto& e : plan.events) events_.Record(Ref(job), std::string(api::EnumName(e.type)), e.reason, e.message);
  if (plan.status) {
    auto r =
        client_.Patch(kTfJobs, ns, job.metadata.name, kube::PatchType::kMerge, StatusPatch(*plan.status), "status");
    if (r.ok())
      Wrote(key, *r);
    else if (!IsNotFound(r.status()))
      keep_first(r.status().WithContext("writing status"));
  }
  const std::vector<std::string> labels = {ns, "tensorflow"};
  if (plan.counters.successful) jobs_successful_->With(labels).Inc(plan.counters.successful);
  if (plan.counters.failed) jobs_failed_->With(labels).Inc(plan.counters.failed);
  if (plan.counters.restarted) jobs_restarted_->With(labels).Inc(plan.counters.restarted);
  if (plan.delete_job) {
    Status s = client_.Delete(kTfJobs, ns, job.metadata.name, {.precondition_uid = job.metadata.uid});
    if (s.ok()) {
      jobs_deleted_->With(labels).Inc();
      events_.Record(Ref(job), "Normal", "SuccessfulDeleteJob", "Deleted job: " + job.metadata.name);
    } else if (!IsNotFound(s)) {
      events_.Record(Ref(job), "Warning", "FailedDeleteJob", "Error deleting: " + s.message());
      keep_first(s);
    }
  }
  if (!plan.create_pods.empty() || !plan.delete_pods.empty() || plan.status)
    log.Info("reconciled", {{"created_pods", std::to_string(plan.create_pods.size())},
                            {"deleted_pods", std::to_string(plan.delete_pods.size())},
                            {"status_written", plan.status ? "true" : "false"}});
  return result;
}

}  // namespace tfjob::operator_
