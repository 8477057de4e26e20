#pragma once
// TfJobController: the glue between the cluster and the pure core. Informers on TFJobs (full
// model) and on the pods and services labelled operator-name=tfjob-controller (trimmed),
// handlers that record expectations and enqueue the owning job, N workers that run
// core::Reconcile on a snapshot and hand its Plan to the PlanApplier (operator/plan_applier.h:
// creates with slow start on the shared write pool, deletes with a uid precondition, status by
// merge patch on /status, events, TTL deletion); the outcome maps to one queue operation.
// controller-runtime's Reconciler + Controller, for one kind.

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/pod.h"
#include "api/tfjob.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "controller/busy_workers.h"
#include "controller/event_recorder.h"
#include "controller/expectations.h"
#include "controller/informer.h"
#include "controller/informer_factory.h"
#include "controller/metrics.h"
#include "controller/runnable.h"
#include "controller/work_queue.h"
#include "controller/write_pool.h"
#include "kube/rest_client.h"
#include "operator/disruption_notes.h"
#include "operator/gang_integration.h"
#include "operator/integration.h"
#include "operator/job_latency.h"
#include "operator/mutation_cache.h"
#include "operator/options.h"
#include "operator/plan_applier.h"
#include "operator/status_write_throttle.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::operator_ {

// What one reconcile asks of the queue when it succeeded (controller-runtime's reconcile.Result).
struct ReconcileResult {
  std::optional<std::chrono::nanoseconds> requeue_after;  // look again then (deadline, TTL)
  // The pass's creates are still running on the write pool: their outcome, not this return,
  // decides between Forget and AddRateLimited (Settle, when they end).
  bool pending = false;
  // The pass did not run: the expectations of an earlier one are not met yet (D1). It looks
  // again at requeue_after (their TTL's end, or a deadline or TTL of the job coming due sooner)
  // without forgetting the key's backoff.
  bool waiting = false;
};

// The ONE queue operation for a reconcile's outcome (controller-runtime's reconcileHandler):
// an error -> AddRateLimited (per-key backoff; a requeue_after is not honoured); a requeue_after
// -> Forget the backoff, then AddAfter (0 = due now: the core clamps a past due time to 0);
// else Forget. A waiting pass: AddAfter alone. A pending pass: nothing (the end of its creates
// settles it with one of the above). Pure.
enum class QueueAction { kAddRateLimited, kForgetAndAddAfter, kForget, kAddAfter, kNone };
QueueAction QueueActionFor(const StatusOr<ReconcileResult>& outcome);

class TfJobController {
 public:
  // Registers the informers it reads, with their indexes and handlers, on `informers` (the
  // process's one cache, which starts and stops them). REQUIRES: `informers` is stopped before
  // the controller is destroyed.
  TfJobController(kube::RestClient& client, Clock& clock, controller::Registry& registry,
                  controller::EventRecorder& events, controller::InformerFactory& informers,
                  const OperatorOptions& options, Logger log);
  ~TfJobController();

  // Starts the queue's delay driver (before leadership, with the cache).
  void Start();
  // The informers this controller reads have synced (client-go's cache-sync functions).
  bool HasSynced() const;
  // Starts the reconcile workers. REQUIRES: HasSynced(). Thread-safe against Stop() (the elector's
  // thread calls it): once Stop() has begun, it starts nothing.
  void StartWorkers();
  // Stops taking work, lets in-flight reconciles finish, stops the write pool. Idempotent. The
  // informers are the factory's: stopped by its owner.
  void Stop();
  // The liveness check `workers`: kUnavailable when a worker has been on a single pass for longer
  // than kStuckPassLimit (docs/operator.md). A worker thread does not end otherwise: it returns
  // only on Stop, and an exception out of a pass ends the process.
  Status CheckWorkers() const;
  static constexpr std::chrono::minutes kStuckPassLimit{10};

  // The controller as a Manager's runnable "tfjob-controller", which needs the leader: Start and
  // StartWorkers when this process leads; Stop; the liveness check `workers` (CheckWorkers).
  controller::Runnable AsRunnable();

  // One reconcile of `key` ("ns/name"); exposed for tests. It never touches the queue: Worker
  // maps the outcome to one queue operation (QueueActionFor).
  StatusOr<ReconcileResult> ReconcileKey(const std::string& key);

 private:
  friend class TfJobControllerTestPeer;
  friend class FakeApiControllerPeer;  // tfjob_controller_fake_api_test.cc
  // The constructor's steps: the controller's metrics, then the informers and their handlers.
  void RegisterMetrics();
  void WatchJobs(controller::InformerFactory& informers);
  void WatchChildren(controller::InformerFactory& informers);
  // The integrations (the gang scheduler's, then Kueue's operator mode) and their informers.
  void AddIntegrations(kube::RestClient& client, controller::EventRecorder& events,
                       controller::InformerFactory& informers);
  void Enqueue(const std::string& key) { queue_.Add(key); }
  // ReconcileKey's steps.
  void ForgetJob(const std::string& key);
  core::ObservedState Observe(const std::string& key, const api::TfJob& job);
  // reconcile_options_, with the Workload API version in use when gang scheduling is native (D31).
  // The pass's options; `key`: the job's, for the shape of its existing Workload (D33).
  core::ReconcileOptions PassOptions(const std::string& key) const;
  void ObserveGang(const std::string& key, const api::TfJob& job, core::ObservedState& observed);
  void ObserveCompositeGang(const std::string& key, const api::TfJob& job, core::ObservedState& observed);
  void OnChildEvent(const api::ChildMeta& meta, int created, int deleted);
  // A pod already observed changed: its job is enqueued after the batch period (D35).
  void OnPodChange(const api::ChildMeta& meta);
  // D1: a pass waits while the expectations of the last one are not met; nullopt: it runs (none
  // pending, or the job's deadline or TTL is due now).
  std::optional<ReconcileResult> WaitForExpectations(const std::string& key, const api::TfJob& job);
  // The one place a pass's outcome becomes its metrics and its queue operation: called by the
  // worker, and by the end of a pass's creates (on a write-pool thread) for a pending pass.
  void Settle(const std::string& key, const StatusOr<ReconcileResult>& outcome);
  void Worker(std::stop_token stop, int index);

  kube::RestClient& client_;
  Clock& clock_;
  controller::Registry& registry_;
  controller::EventRecorder& events_;
  const OperatorOptions options_;
  Logger log_;
  core::ReconcileOptions reconcile_options_;
  controller::WorkQueue queue_;
  controller::Expectations expectations_;
  controller::BusyWorkers busy_;      // which worker is on which job since when
  controller::WritePool write_pool_;  // --write-concurrency threads, shared by the workers (D17)
  RestObjectWriter writer_;
  // --gang-scheduler-name: the operator's side of the gang scheduler (its informers, the version
  // of its API in use); null without gang scheduling. Also in integrations_.
  std::unique_ptr<GangIntegration> gang_;
  PlanApplier applier_;  // the write side: carries out each reconcile's Plan
  // The informers read, all the factory's (none owned here); null when not watched.
  controller::Informer<api::TfJob>* jobs_ = nullptr;
  controller::Informer<api::Pod>* pods_ = nullptr;
  controller::Informer<api::Service>* services_ = nullptr;
  // Called at the named points of each pass (operator/integration.h), in this order: the gang
  // scheduler's (gang_), Kueue's operator mode (--kueue-mode operator, docs/kueue.md).
  std::unique_ptr<ReconcileIntegration> kueue_;
  std::vector<ReconcileIntegration*> integrations_;
  bool reconcile_deleted_jobs_ = false;  // an integration's ReconcilesDeletedJobs
  // D30: a status change of `active` counts alone waits --status-count-interval after the last write.
  StatusWriteThrottle status_throttle_;
  mutable Mutex workers_mu_;  // StartWorkers (the elector's thread) vs Stop and WorkersAlive
  std::vector<std::jthread> workers_ TFJOB_GUARDED_BY(workers_mu_);
  bool stopped_ TFJOB_GUARDED_BY(workers_mu_) = false;
  std::atomic<uint64_t> reconcile_ids_{0};
  JobMutationCache written_;     // D28: the job as our last write of it returned it
  DisruptionNotes disruptions_;  // D21: pods deleted by others, until a pass counted them
  controller::Family<controller::Counter>* pod_disruptions_;

  controller::Family<controller::Counter>* jobs_created_;
  controller::Family<controller::Counter>* reconcile_total_;
  controller::Counter* reconcile_errors_;
  controller::Histogram* reconcile_time_;
  JobLatency latency_;  // D12: the per-job latency metrics
};

}  // namespace tfjob::operator_
