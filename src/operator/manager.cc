#include "operator/manager.h"

#include <unistd.h>

#include <random>

#include "controller/client_metrics.h"
#include "operator/admission.h"

namespace tfjob::operator_ {
namespace {

// How long queued events may take to be written at shutdown.
constexpr std::chrono::seconds kEventFlushLimit{2};

std::string Identity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::mt19937 rng{std::random_device{}()};
  return std::string(host) + "_" + std::to_string(rng() % 100000);
}

}  // namespace

Manager::Manager(const OperatorOptions& options, ManagerConfig config, kube::HttpTransport& transport, Clock& clock,
                 controller::Registry& registry, controller::InformerFactory& informers, TfJobController& controller,
                 controller::EventRecorder& events, Logger log)
    : options_(options),
      config_(std::move(config)),
      transport_(transport),
      clock_(clock),
      registry_(registry),
      informers_(informers),
      controller_(controller),
      events_(events),
      log_(std::move(log)),
      webhook_(options.webhook_cert_dir, log_, &registry) {}

Manager::~Manager() {
  // Reverse of the members' start: the election first (it calls into the controller).
  if (election_.joinable()) {
    election_.request_stop();
    election_.join();
  }
  webhook_.Stop();
  health_.Stop();
  metrics_.Stop();
}

Status Manager::LeaderElectionReady() const {
  MutexLock lock(mu_);
  return electing_ && !lost_ ? OkStatus() : UnavailableError("leader election stopped");
}

void Manager::ElectionStarted() {
  MutexLock lock(mu_);
  electing_ = true;
}

void Manager::OnStoppedLeading() {
  MutexLock lock(mu_);
  lost_ = true;
  cv_.notify_all();
}

bool Manager::WaitForStopOrLoss(std::stop_token stop) {
  // The stop callback notifies under mu_, as OnStoppedLeading does: a wake-up between the check
  // and the wait cannot be missed.
  std::stop_callback wake(stop, [this] {
    MutexLock lock(mu_);
    cv_.notify_all();
  });
  MutexLock lock(mu_);
  while (!lost_ && !stop.stop_requested()) cv_.wait(mu_);
  return lost_;
}

int Manager::StartServers() {
  // Probes and metrics first, so a slow cache sync is visible as not-ready rather than dead.
  if (options_.metrics_bind_address != "0") {
    metrics_.ServeMetrics(&registry_);
    metrics_.CountRefusedIn(&controller::RefusedConnectionsCounter(registry_, "metrics"));
    if (Status s = metrics_.Start(options_.metrics_bind_address); !s.ok()) {
      log_.Error("cannot serve metrics", {{"address", options_.metrics_bind_address}, {"error", s.message()}});
      return 2;
    }
    log_.Info("serving metrics",
              {{"address", options_.metrics_bind_address}, {"port", std::to_string(metrics_.port())}});
  }
  health_.AddLivenessCheck("ping", [] { return OkStatus(); });
  health_.AddReadinessCheck(
      "informers", [this] { return informers_.HasSynced() ? OkStatus() : UnavailableError("caches not synced"); });
  if (config_.leader_elect) health_.AddReadinessCheck("leader-election", [this] { return LeaderElectionReady(); });
  if (options_.health_probe_bind_address != "0") {
    health_.CountRefusedIn(&controller::RefusedConnectionsCounter(registry_, "health"));
    if (Status s = health_.Start(options_.health_probe_bind_address); !s.ok()) {
      log_.Error("cannot serve health probes",
                 {{"address", options_.health_probe_bind_address}, {"error", s.message()}});
      return 2;
    }
    log_.Info("serving health probes",
              {{"address", options_.health_probe_bind_address}, {"port", std::to_string(health_.port())}});
  }

  // The webhook is stateless: it serves before the caches sync, and on every replica (leader or not).
  if (options_.webhook_port > 0) {
    webhook_.Handle(kValidatePath, ServeTfJobReview);
    // Registered by a MutatingWebhookConfiguration only for --kueue-mode operator (docs/kueue.md).
    webhook_.Handle(kDefaultPath, ServeTfJobDefaulting);
    std::string address = options_.webhook_host + ":" + std::to_string(options_.webhook_port);
    if (Status s = webhook_.Start(address); !s.ok()) {
      log_.Error("cannot serve the webhook", {{"address", address}, {"error", s.message()}});
      return 2;
    }
    log_.Info("serving webhook",
              {{"address", address}, {"path", kValidatePath}, {"port", std::to_string(webhook_.port())}});
  }
  return 0;
}

void Manager::StartElection() {
  controller::LeaderElectionConfig lc;
  // Not aborted at shutdown, so that the lease can still be released; its requests are short
  // and never retried by the client (KubeLeaseLock::ClientOptions), which bounds the release.
  lease_client_ = std::make_unique<kube::RestClient>(
      transport_, clock_, controller::KubeLeaseLock::ClientOptions(lc.renew_deadline, config_.client_options));
  lease_client_->set_observer(controller::RestClientMetrics(registry_));
  lease_client_->set_logger(log_.With({{"client", "leader-election"}}));
  lease_ =
      std::make_unique<controller::KubeLeaseLock>(*lease_client_, config_.lease_namespace, options_.leader_election_id);
  lc.identity = Identity();
  lc.on_started_leading = [this] { controller_.StartWorkers(); };
  lc.on_stopped_leading = [this] { OnStoppedLeading(); };
  elector_ = std::make_unique<controller::LeaderElector>(*lease_, clock_, lc, log_, &registry_);
  ElectionStarted();
  election_ = std::jthread([this](std::stop_token s) { elector_->Run(s); });
}

int Manager::Run(std::stop_token stop) {
  if (int code = StartServers(); code != 0) return code;

  // Informers, cache sync, leadership, workers.
  informers_.Start();
  controller_.Start();
  while (!stop.stop_requested() && !informers_.HasSynced()) SleepFor(std::chrono::milliseconds(50), stop);
  if (stop.stop_requested()) {
    controller_.Stop();
    informers_.Stop();
    events_.Stop();
    return 0;
  }
  log_.Info("caches synced", {});
  health_.AddLivenessCheck("workers", [this] { return controller_.CheckWorkers(); });
  if (config_.leader_elect)
    StartElection();
  else
    controller_.StartWorkers();
  return Shutdown(WaitForStopOrLoss(stop));
}

int Manager::Shutdown(bool lost) {
  log_.Info(lost ? "leader election lost; exiting" : "stopping", {});
  config_.abort.request_stop();  // in-flight requests end at once, so the reconciles below finish fast
  controller_.Stop();            // stop taking work; in-flight reconciles finish; a late StartWorkers is a no-op
  informers_.Stop();             // the cache: every informer of the process
  if (election_.joinable()) {
    election_.request_stop();  // releases the lease
    election_.join();
  }
  if (!events_.Flush(kEventFlushLimit)) log_.Warning("events still queued at shutdown are dropped", {});
  config_.abort_events.request_stop();
  events_.Stop();
  webhook_.Stop();
  health_.Stop();
  metrics_.Stop();
  log_.Info("stopped", {});
  return lost ? 1 : 0;
}

}  // namespace tfjob::operator_
