#pragma once
// Manager: the operator process's long-running parts and their order (controller-runtime's
// Manager). Every part is a controller::Runnable that says whether it needs the leader; the
// Manager adds its own three servers (metrics, probes, webhook: each only when enabled) and the
// leader elector, and RunOperator adds the rest (the event recorder, the cache, the TFJob
// controller). A new part (a second controller, another server) is one more Add. Every piece of
// state that more than one thread touches (the probes' handlers, the elector's callbacks, the
// main thread) is a member guarded by a mutex; nothing is shared through RunOperator's locals.
//
// Start order (Run): the runnables that do not need the leader, in the order added, each
//                    waited for until ready (the cache: synced); then leader election, whose
//                    elector starts the leader's runnables in the order added when it leads (or
//                    they start at once when election is off). In the operator: metrics server,
//                    health server, webhook server, events, cache (informers, sync), elector,
//                    TFJob controller (delay driver, workers).
// Stop order (on `stop` or a lost lease): abort in-flight requests; the leader's runnables in
//                    reverse (in-flight reconciles finish before the lease is released, so a new
//                    leader never overlaps them); the elector (releases the lease); the other
//                    runnables in reverse: cache, events (flush), webhook, health, metrics.
// docs/operator.md describes the flags, probes and exit codes; src/operator/manager_test.cc
// checks the order against the FakeApiServer.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "controller/health_server.h"
#include "controller/kube_lease_lock.h"
#include "controller/leader_elector.h"
#include "controller/metrics.h"
#include "controller/runnable.h"
#include "controller/webhook_server.h"
#include "kube/http_transport.h"
#include "kube/rest_client.h"
#include "operator/options.h"

namespace tfjob::operator_ {

struct ManagerConfig {
  bool leader_elect = false;
  std::string lease_namespace;             // where the Lease lives (when leader_elect)
  kube::RestClientOptions client_options;  // the base of the lease client's options
  std::stop_source abort;                  // ends the controller's in-flight requests
};

class Manager {
 public:
  // Adds the metrics, health and webhook servers enabled by `options`.
  Manager(const OperatorOptions& options, ManagerConfig config, kube::HttpTransport& transport, Clock& clock,
          controller::Registry& registry, Logger log);
  ~Manager();

  // REQUIRES: before Run. What `runnable`'s functions reference must outlive the Manager's Run.
  void Add(controller::Runnable runnable);

  // Runs the start order, waits for `stop` or a lost lease, runs the stop order. Returns the exit
  // code: 0 after a clean stop, 1 when the lease was lost, 2 when a runnable cannot start.
  int Run(std::stop_token stop);

  // The "leader-election" readiness check: ok while the elector runs and has not lost the lease.
  Status LeaderElectionReady() const TFJOB_EXCLUDES(mu_);
  // The elector's on_stopped_leading: records the loss and wakes Run (under mu_: no lost wake-up).
  void OnStoppedLeading() TFJOB_EXCLUDES(mu_);
  // Marks the elector as running (Run calls it before starting the election thread).
  void ElectionStarted() TFJOB_EXCLUDES(mu_);
  // Blocks until `stop` or OnStoppedLeading; returns true when the lease was lost.
  bool WaitForStopOrLoss(std::stop_token stop) TFJOB_EXCLUDES(mu_);

 private:
  void AddServers();
  // Starts the runnables that do not need the leader, each waited for until ready. 0, 2 when one
  // cannot start, -1 when stopped meanwhile.
  int StartOthers(std::stop_token stop);
  // The elector's on_started_leading (or Run's, without election): starts the leader's runnables
  // unless the shutdown has begun.
  void StartLeaders() TFJOB_EXCLUDES(leaders_mu_);
  void StartElection();
  int Shutdown(bool lost);
  // Stops the started runnables of one kind, last started first.
  void StopStarted(bool leaders);

  const OperatorOptions& options_;
  ManagerConfig config_;
  kube::HttpTransport& transport_;
  Clock& clock_;
  controller::Registry& registry_;
  Logger log_;
  controller::HttpEndpoint metrics_, health_;
  controller::WebhookServer webhook_;
  std::vector<controller::Runnable> runnables_;  // fixed before Run
  std::vector<size_t> started_others_;           // the main thread's only
  // Set on the main thread before the election thread starts; read by it only.
  std::unique_ptr<kube::RestClient> lease_client_;
  std::unique_ptr<controller::KubeLeaseLock> lease_;
  std::unique_ptr<controller::LeaderElector> elector_;
  std::jthread election_;

  mutable Mutex leaders_mu_;  // the elector's StartLeaders vs the main thread's Shutdown
  bool shutting_down_ TFJOB_GUARDED_BY(leaders_mu_) = false;
  std::vector<size_t> started_leaders_ TFJOB_GUARDED_BY(leaders_mu_);

  mutable Mutex mu_;
  std::condition_variable_any cv_;  // lost_ became true, or the stop
  bool electing_ TFJOB_GUARDED_BY(mu_) = false;
  bool lost_ TFJOB_GUARDED_BY(mu_) = false;
};

}  // namespace tfjob::operator_
