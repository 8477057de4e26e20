#pragma once
// Manager: the operator process's long-running parts and their order (controller-runtime's
// Manager). It owns the probes and metrics servers, the webhook server and the leader elector
// (with its lease client), and drives the TfJobController's informers and workers. Every piece of
// state that more than one thread touches (the probes' handlers, the elector's callbacks, the
// main thread) is a member guarded by mu_; nothing is shared through RunOperator's locals.
//
// Start order (Run):  metrics server, health server, webhook server, informers, cache sync,
//                     leader election (or the workers at once when it is off); the elector
//                     starts the workers when it leads.
// Stop order (reverse, on `stop` or a lost lease): abort in-flight requests, workers and
//                     informers (in-flight reconciles finish before the lease is released, so a
//                     new leader never overlaps them), the elector (releases the lease), the
//                     event flush, webhook, health, metrics.
// docs/operator.md describes the flags, probes and exit codes.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "controller/event_recorder.h"
#include "controller/health_server.h"
#include "controller/informer_factory.h"
#include "controller/kube_lease_lock.h"
#include "controller/leader_elector.h"
#include "controller/metrics.h"
#include "controller/webhook_server.h"
#include "kube/http_transport.h"
#include "kube/rest_client.h"
#include "operator/options.h"
#include "operator/tfjob_controller.h"

namespace tfjob::operator_ {

struct ManagerConfig {
  bool leader_elect = false;
  std::string lease_namespace;             // where the Lease lives (when leader_elect)
  kube::RestClientOptions client_options;  // the base of the lease client's options
  std::stop_source abort;                  // ends the controller's in-flight requests
  std::stop_source abort_events;           // ends the event client's requests (after the flush)
};

class Manager {
 public:
  Manager(const OperatorOptions& options, ManagerConfig config, kube::HttpTransport& transport, Clock& clock,
          controller::Registry& registry, controller::InformerFactory& informers, TfJobController& controller,
          controller::EventRecorder& events, Logger log);
  ~Manager();

  // Runs the start order, waits for `stop` or a lost lease, runs the stop order. Returns the exit
  // code: 0 after a clean stop, 1 when the lease was lost, 2 when a server cannot start.
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
  int StartServers();  // 0, or the exit code of a failed start
  void StartElection();
  int Shutdown(bool lost);

  const OperatorOptions& options_;
  ManagerConfig config_;
  kube::HttpTransport& transport_;
  Clock& clock_;
  controller::Registry& registry_;
  controller::InformerFactory& informers_;  // the process's one cache
  TfJobController& controller_;
  controller::EventRecorder& events_;
  Logger log_;
  controller::HttpEndpoint metrics_, health_;
  controller::WebhookServer webhook_;
  // Set on the main thread before the election thread starts; read by it only.
  std::unique_ptr<kube::RestClient> lease_client_;
  std::unique_ptr<controller::KubeLeaseLock> lease_;
  std::unique_ptr<controller::LeaderElector> elector_;
  std::jthread election_;

  mutable Mutex mu_;
  std::condition_variable_any cv_;  // lost_ became true, or the stop
  bool electing_ TFJOB_GUARDED_BY(mu_) = false;
  bool lost_ TFJOB_GUARDED_BY(mu_) = false;
};

}  // namespace tfjob::operator_
