#include "operator/tfjob_controller.h"

#include "api/json_fields.h"

#include <algorithm>
#include <cstdint>

#include "api/object_key.h"
#include "api/pod_json.h"
#include "api/pod_proto.h"
#include "api/tfjob_json.h"
#include "operator/kueue_mode.h"
#include "operator/plan_applier.h"
#include "operator/resources.h"
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/naming.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;

std::string JobKeyOf(const api::ChildMeta& meta) {
  return meta.job_name.empty() ? "" : api::ObjectKey{meta.ns, meta.job_name}.String();
}

}  // namespace

QueueAction QueueActionFor(const StatusOr<ReconcileResult>& outcome) {
  if (!outcome.ok()) return QueueAction::kAddRateLimited;
  if (outcome->waiting) return outcome->requeue_after ? QueueAction::kAddAfter : QueueAction::kNone;
  if (outcome->pending) return QueueAction::kNone;
  if (outcome->requeue_after) return QueueAction::kForgetAndAddAfter;  // 0: due now (as before)
  return QueueAction::kForget;
}

TfJobController::TfJobController(kube::RestClient& client, Clock& clock, controller::Registry& registry,
                                 controller::EventRecorder& events, controller::InformerFactory& informers,
                                 const OperatorOptions& options, Logger log)
    : client_(client),
      clock_(clock),
      registry_(registry),
      events_(events),
      options_(options),
      log_(log.With({{"controller", "tfjob-controller"}})),
      queue_(clock, "tfjob-controller", &registry),
      expectations_(clock),
      busy_(clock, options.workers),
      write_pool_(options.write_concurrency),
      writer_(client),
      gang_(MakeGangIntegration(client, options, log_)),
      applier_(writer_, write_pool_, expectations_, events, registry, gang_ ? &gang_->policy() : nullptr,
               PlanApplierHooks{
                   [this](const std::string& key, const json& object) { written_.Wrote(key, object); },
                   [this](const std::string& key, const std::string& uid) { disruptions_.Deleting(key, uid); },
                   [this](const std::string& uid) { disruptions_.DeleteDone(uid); },
                   [this] { return gang_ ? gang_->native_api() : core::NativeGangApi{}; },
                   [this](const kube::GroupVersionResource& gvr, const Status& s) {
                     if (gang_) gang_->CallFailed(gvr, s);
                   },
                   [this](const kube::GroupVersionResource& gvr) { return gang_ ? gang_->Unserved(gvr) : ""; }}),
      status_throttle_(clock, options.status_count_interval),
      disruptions_(log_),
      latency_(registry) {
  reconcile_options_.render.gang_scheduler_name = options.gang_scheduler_name;
  reconcile_options_.render.tf_config.cluster_domain = options.cluster_domain;
  reconcile_options_.render.tf_config.evaluator_in_cluster = options.tf_config_evaluator_in_cluster;
  reconcile_options_.counters_in_annotation = options.counters_in_annotation;
  RegisterMetrics();
  WatchJobs(informers);
  WatchChildren(informers);
  AddIntegrations(client, events, informers);
}

void TfJobController::AddIntegrations(kube::RestClient& client, controller::EventRecorder& events,
                                      controller::InformerFactory& informers) {
  if (gang_) integrations_.push_back(gang_.get());
  if (options_.kueue_mode == "operator") {
    kueue_ = std::make_unique<KueueMode>(
        client, events, options_, [this](const std::string& k, const json& object) { written_.Wrote(k, object); },
        log_);
    integrations_.push_back(kueue_.get());
  }
  for (ReconcileIntegration* integration : integrations_) {
    integration->Watch(informers, [this](const std::string& key) { Enqueue(key); });
    reconcile_deleted_jobs_ |= integration->ReconcilesDeletedJobs();
  }
}

void TfJobController::RegisterMetrics() {
  const std::vector<std::string> labels = {"job_namespace", "framework"};
  jobs_created_ =
      &registry_.AddCounter("training_operator_jobs_created_total", "Counts number of jobs created", labels);
  reconcile_total_ = &registry_.AddCounter("controller_runtime_reconcile_total",
                                           "Total number of reconciliations per controller", {"controller", "result"});
  reconcile_errors_ = &registry_
                           .AddCounter("controller_runtime_reconcile_errors_total",
                                       "Total number of reconciliation errors per controller", {"controller"})
                           .With({"tfjob-controller"});
  reconcile_time_ = &registry_
                         .AddHistogram("controller_runtime_reconcile_time_seconds",
                                       "Length of time per reconciliation per controller", {"controller"})
                         .With({"tfjob-controller"});
  pod_disruptions_ =
      &registry_.AddCounter("tfjob_pod_disruptions_total",
                            "Pods of TFJobs disrupted by others (evicted, preempted, deleted) and recreated, by reason",
                            {"job_namespace", "replica_type", "reason"});
}

void TfJobController::WatchJobs(controller::InformerFactory& informers) {
  jobs_ = &informers.For<api::TfJob>(controller::ListWatchSpec{kTfJobs, options_.ns}, api::DecodeTfJobStrict,
                                     controller::NamespacedKey);
  jobs_->AddHandlers({[this](const auto& j) {
                        jobs_created_->With({j->metadata.ns, "tensorflow"}).Inc();
                        Enqueue(api::JobKey(*j));
                      },
                      [this](const auto& o, const auto& n) {
                        if (o->metadata.resource_version != n->metadata.resource_version) Enqueue(api::JobKey(*n));
                      },
                      [this](const auto& j) {
                        ForgetJob(api::JobKey(*j));  // a job gone with no child left is never reconciled again
                        // Kueue's Workloads lose their finalizer (JobGone) in one more pass.
                        if (reconcile_deleted_jobs_) Enqueue(api::JobKey(*j));
                      }});
}

// Pods and services carrying this operator's label, indexed by their job.
void TfJobController::WatchChildren(controller::InformerFactory& informers) {
  const std::string selector = std::string(core::kLabelOperatorName) + "=" + std::string(core::kControllerName);
  auto job_index = [](const api::ChildMeta& m) {
    std::string k = JobKeyOf(m);
    return k.empty() ? std::vector<std::string>{} : std::vector<std::string>{k};
  };
  // DecodePod reads only spec.nodeName of a pod's spec, which holds nearly all of a big job's
  // pod (its TF_CONFIG names every replica). Pods are listed and watched in protobuf, of which
  // only DecodePod's fields are read (the API server then encodes each pod change once for every
  // protobuf watcher, the scheduler's and the kubelets' too, instead of once more in JSON for
  // ours); a JSON answer has the spec cut before parsing (D35).
  controller::ListWatchSpec pod_spec{kube::kPods, options_.ns, selector};
  pod_spec.watch_prune = kube::WatchPrune{.field = "spec", .keep = {"nodeName"}};
  pod_spec.protobuf = kube::ProtobufView{.name = "pod", .to_json = api::PodProtoToJson};
  pods_ = &informers.For<api::Pod>(std::move(pod_spec), api::DecodePod, controller::NamespacedKey);
  pods_->AddIndex("job", [job_index](const api::Pod& p) { return job_index(p.meta); });
  pods_->AddHandlers({[this](const auto& p) { OnChildEvent(p->meta, 1, 0); },
                      [this](const auto& o, const auto& n) {
                        if (!o->meta.deletion_timestamp && n->meta.deletion_timestamp)
                          disruptions_.DeletionStarted(JobKeyOf(n->meta), *n);
                        if (o->meta.resource_version != n->meta.resource_version) OnPodChange(n->meta);
                      },
                      [this](const auto& p) {
                        disruptions_.PodGone(JobKeyOf(p->meta), *p);
                        OnChildEvent(p->meta, 0, 1);
                      }});
  services_ = &informers.For<api::Service>(controller::ListWatchSpec{kube::kServices, options_.ns, selector},
                                           api::DecodeService, controller::NamespacedKey);
  services_->AddIndex("job", [job_index](const api::Service& s) { return job_index(s.meta); });
  services_->AddHandlers({[this](const auto& s) { OnChildEvent(s->meta, 1, 0); }, nullptr,
                          [this](const auto& s) { OnChildEvent(s->meta, 0, 1); }});
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

void TfJobController::OnPodChange(const api::ChildMeta& meta) {
  std::string key = JobKeyOf(meta);
  if (key.empty()) return;
  // D35: the job's pass waits the batch period, so that the changes of its other pods in that
  // time join it (the queue keeps one due time per key, the earliest; a zero period adds at once).
  queue_.AddAfter(key, options_.pod_update_batch_period);
}

void TfJobController::Start() {
  queue_.StartDelayDriver();
}

bool TfJobController::HasSynced() const {
  if (!jobs_->HasSynced() || !pods_->HasSynced() || !services_->HasSynced()) return false;
  for (const ReconcileIntegration* integration : integrations_)
    if (!integration->HasSynced()) return false;
  return true;
}

void TfJobController::StartWorkers() {
  MutexLock lock(workers_mu_);
  if (stopped_) return;  // the lease came after the stop: nothing to start
  disruptions_.Lead();
  for (int i = 0; i < options_.workers; ++i)
    workers_.emplace_back([this, i](std::stop_token stop) { Worker(stop, i); });
}

controller::Runnable TfJobController::AsRunnable() {
  return controller::Runnable{.name = "tfjob-controller",
                              .needs_leader = true,
                              .start =
                                  [this] {
                                    Start();
                                    StartWorkers();
                                    return OkStatus();
                                  },
                              .stop = [this] { Stop(); },
                              .check = "workers",
                              .liveness = [this] { return CheckWorkers(); }};
}

Status TfJobController::CheckWorkers() const {
  return busy_.Check(kStuckPassLimit);
}

void TfJobController::Stop() {
  std::vector<std::jthread> workers;
  {
    MutexLock lock(workers_mu_);
    stopped_ = true;
    workers.swap(workers_);
  }
  queue_.ShutDown();
  workers.clear();     // joins (outside the lock): in-flight reconciles finish
  write_pool_.Stop();  // their queued creates run (failing fast once aborted); no further batch starts
}

void TfJobController::Worker(std::stop_token stop, int index) {
  while (auto key = queue_.Get(stop)) {
    auto start = clock_.SteadyNow();
    busy_.Begin(index, *key);
    StatusOr<ReconcileResult> outcome = ReconcileKey(*key);
    busy_.End(index);
    reconcile_time_->Observe(std::chrono::duration<double>(clock_.SteadyNow() - start).count());
    Settle(*key, outcome);
    queue_.Done(*key);
  }
}

void TfJobController::Settle(const std::string& key, const StatusOr<ReconcileResult>& outcome) {
  const QueueAction action = QueueActionFor(outcome);
  if (action == QueueAction::kNone) return;  // a pending pass: the end of its creates settles it
  if (action == QueueAction::kAddRateLimited) {
    reconcile_errors_->Inc();
    reconcile_total_->With({"tfjob-controller", "error"}).Inc();
    log_.Warning("reconcile failed; retrying with backoff", {{"tfjob", key}, {"error", outcome.status().message()}});
    queue_.AddRateLimited(key);
    return;
  }
  reconcile_total_->With({"tfjob-controller", "success"}).Inc();
  switch (action) {
    case QueueAction::kForgetAndAddAfter:
      queue_.Forget(key);
      queue_.AddAfter(key, *outcome->requeue_after);
      break;
    case QueueAction::kForget: queue_.Forget(key); break;
    case QueueAction::kAddAfter: queue_.AddAfter(key, *outcome->requeue_after); break;
    case QueueAction::kAddRateLimited:
    case QueueAction::kNone: break;
  }
}

// The job is gone: forget what was kept under its key (its children go with it: owner references).
// The one forget path: the informer's delete handler and a pass that finds no job both call it.
void TfJobController::ForgetJob(const std::string& key) {
  expectations_.Delete(key);
  disruptions_.Forget(key);
  status_throttle_.Forget(key);
  written_.Forget(key);
  latency_.Forget(key);
}

// What the caches show of the job's world, for the core.
core::ObservedState TfJobController::Observe(const std::string& key, const api::TfJob& job) {
  core::ObservedState observed{job, {}, {}, std::nullopt, clock_.Now(), {}};
  // Before the pods: a note is made after the pod cache changed, so the pods read next show it.
  observed.disruptions = disruptions_.For(key);
  for (const auto& p : pods_->store().ByIndex("job", key)) observed.pods.push_back(*p);
  for (const auto& s : services_->store().ByIndex("job", key)) observed.services.push_back(*s);
  for (const ReconcileIntegration* integration : integrations_) integration->Observe(key, job, observed);
  return observed;
}

core::ReconcileOptions TfJobController::PassOptions(const std::string& key) const {
  core::ReconcileOptions options = reconcile_options_;
  for (const ReconcileIntegration* integration : integrations_) integration->AdjustOptions(key, options);
  return options;
}

StatusOr<ReconcileResult> TfJobController::ReconcileKey(const std::string& key) {
  auto job = jobs_->store().Get(key);
  if (!job) {
    for (ReconcileIntegration* integration : integrations_) TFJOB_RETURN_IF_ERROR(integration->JobGone(key));
    ForgetJob(key);
    return ReconcileResult{};
  }
  job = written_.Newest(key, std::move(job));
  if (auto wait = WaitForExpectations(key, *job)) return *wait;
  // The integrations' part before the core (Kueue: a job that runs without an admitted Workload
  // is suspended before the core could create a pod for it). After the expectations: the pod
  // cache shows this operator's own creates, so an evicted job's quota is not released under its
  // pods.
  bool multikueue_copy = false;
  const auto live_pods = [this, &key] { return static_cast<int64_t>(pods_->store().ByIndex("job", key).size()); };
  for (ReconcileIntegration* integration : integrations_) {
    StatusOr<PassGate> gate = integration->BeforeCore(*job, clock_.Now(), live_pods);
    if (!gate.ok()) return gate.status();
    if (!gate->run_core) return ReconcileResult{gate->requeue_after};
    multikueue_copy = multikueue_copy || gate->multikueue_copy;
  }
  Logger log = log_.With({{"tfjob", key}, {"reconcile_id", std::to_string(++reconcile_ids_)}});
  core::ObservedState observed = Observe(key, *job);
  observed.multikueue_copy = multikueue_copy;  // D32
  const core::ReconcileOptions options = PassOptions(key);
  core::Plan plan = core::Reconcile(observed, options);
  if (plan.skip) {
    disruptions_.Consume(key, observed.disruptions);  // never counted: another controller's job, or one being deleted
    return ReconcileResult{};
  }
  status_throttle_.Apply(key, *job, plan);
  const size_t creating_pods = plan.create_pods.size();
  const auto requeue_after = plan.requeue_after;
  const std::vector<core::PodDisruption> disruptions = std::move(plan.disruptions);
  StartOutcome applied =
      applier_.Start(*job, std::move(plan), options.render, log, [this, key, requeue_after](const Status& s) {
        Settle(key, s.ok() ? StatusOr<ReconcileResult>(ReconcileResult{requeue_after}) : StatusOr<ReconcileResult>(s));
      });
  // The Worker backs off (a requeue_after waits for a success); with creates running, their end does.
  if (!applied.status.ok() && !applied.creating) return applied.status;
  disruptions_.Consume(key, observed.disruptions);
  for (const auto& d : disruptions)
    pod_disruptions_
        ->With({job->metadata.ns, d.replica_type ? std::string(api::ReplicaTypeLabel(*d.replica_type)) : "", d.reason})
        .Inc();
  latency_.Observe(key, *job, observed.pods, creating_pods, clock_.Now());
  return ReconcileResult{requeue_after, applied.creating};
}

// D1: wait for the cache to show every create and delete of the last pass, but not past the
// expectations' TTL, nor past the job's deadline or TTL: a pass that comes due by the clock runs
// (it creates nothing: a job past its deadline or finished is cleaned up, never recreated).
std::optional<ReconcileResult> TfJobController::WaitForExpectations(const std::string& key, const api::TfJob& job) {
  const std::optional<std::chrono::nanoseconds> left = expectations_.TimeLeft(key);
  if (!left) return std::nullopt;
  const std::optional<std::chrono::nanoseconds> due = core::TimeUntilDue(job, clock_.Now());
  if (due && *due <= std::chrono::nanoseconds(0)) return std::nullopt;
  return ReconcileResult{.requeue_after = due ? std::min(*left, *due) : *left, .waiting = true};
}

}  // namespace tfjob::operator_
