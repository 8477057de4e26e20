#include "operator/manager.h"

#include <unistd.h>

#include <random>

#include "api/exit_codes.h"
#include "controller/client_metrics.h"
#include "operator/admission.h"

namespace tfjob::operator_ {
namespace {

std::string Identity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::mt19937 rng{std::random_device{}()};
  return std::string(host) + "_" + std::to_string(rng() % 100000);
}

// One of the Manager's HTTP servers as a runnable: `serve` binds and starts it; a failure is
// logged as `what` with the address.
controller::Runnable ServerRunnable(std::string name, std::string address, std::string what,
                                    std::function<Status()> serve, std::function<int()> port,
                                    std::function<void()> stop, Logger log) {
  return controller::Runnable{
      .name = name,
      .start =
          [address, what, serve = std::move(serve), port = std::move(port), log] {
            if (Status s = serve(); !s.ok()) {
              log.Error("cannot serve " + what, {{"address", address}, {"error", s.message()}});
              return s;
            }
            log.Info("serving " + what, {{"address", address}, {"port", std::to_string(port())}});
            return OkStatus();
          },
      .stop = std::move(stop)};
}

}  // namespace

Manager::Manager(const OperatorOptions& options, ManagerConfig config, kube::HttpTransport& transport, Clock& clock,
                 controller::Registry& registry, Logger log)
    : options_(options),
      config_(std::move(config)),
      transport_(transport),
      clock_(clock),
      registry_(registry),
      log_(std::move(log)),
      webhook_(options.webhook_cert_dir, log_, &registry) {
  AddServers();
}

Manager::~Manager() {
  // Reverse of the members' start: the election first (it calls into the leader's runnables).
  if (election_.joinable()) {
    election_.request_stop();
    election_.join();
  }
  webhook_.Stop();
  health_.Stop();
  metrics_.Stop();
}

void Manager::Add(controller::Runnable runnable) {
  runnables_.push_back(std::move(runnable));
}

// Probes and metrics first, so a slow cache sync is visible as not-ready rather than dead. The
// webhook is stateless: it serves before the caches sync, and on every replica (leader or not).
void Manager::AddServers() {
  if (options_.metrics_bind_address != "0") {
    const std::string address = options_.metrics_bind_address;
    Add(ServerRunnable(
        "metrics-server", address, "metrics",
        [this, address] {
          metrics_.ServeMetrics(&registry_);
          metrics_.CountRefusedIn(&controller::RefusedConnectionsCounter(registry_, "metrics"));
          return metrics_.Start(address);
        },
        [this] { return metrics_.port(); }, [this] { metrics_.Stop(); }, log_));
  }
  health_.AddLivenessCheck("ping", [] { return OkStatus(); });
  if (config_.leader_elect) health_.AddReadinessCheck("leader-election", [this] { return LeaderElectionReady(); });
  if (options_.health_probe_bind_address != "0") {
    const std::string address = options_.health_probe_bind_address;
    Add(ServerRunnable(
        "health-server", address, "health probes",
        [this, address] {
          health_.CountRefusedIn(&controller::RefusedConnectionsCounter(registry_, "health"));
          return health_.Start(address);
        },
        [this] { return health_.port(); }, [this] { health_.Stop(); }, log_));
  }
  if (options_.webhook_port > 0) {
    const std::string address = options_.webhook_host + ":" + std::to_string(options_.webhook_port);
    Add(ServerRunnable(
        "webhook-server", address, "webhook",
        [this, address] {
          webhook_.Handle(kValidatePath, ServeTfJobReview);
          // Registered by a MutatingWebhookConfiguration only for --kueue-mode operator (docs/kueue.md).
          webhook_.Handle(kDefaultPath, ServeTfJobDefaulting);
          return webhook_.Start(address);
        },
        [this] { return webhook_.port(); }, [this] { webhook_.Stop(); }, log_));
  }
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

int Manager::StartOthers(std::stop_token stop) {
  for (size_t i = 0; i < runnables_.size(); ++i) {
    const controller::Runnable& r = runnables_[i];
    if (r.needs_leader) continue;
    if (Status s = r.start(); !s.ok()) return api::kExitUsage;
    started_others_.push_back(i);
    if (r.ready) {
      while (!stop.stop_requested() && !r.ready()) clock_.SleepFor(std::chrono::milliseconds(50), stop);
      if (stop.stop_requested()) return -1;
    }
  }
  return api::kExitOk;
}

void Manager::StartLeaders() {
  MutexLock lock(leaders_mu_);
  if (shutting_down_) return;  // the lease came after the stop: nothing to start
  for (size_t i = 0; i < runnables_.size(); ++i) {
    const controller::Runnable& r = runnables_[i];
    if (!r.needs_leader) continue;
    if (Status s = r.start(); !s.ok()) {
      log_.Error("cannot start " + r.name, {{"error", s.message()}});
      continue;
    }
    started_leaders_.push_back(i);
  }
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
  lc.on_started_leading = [this] { StartLeaders(); };
  lc.on_stopped_leading = [this] { OnStoppedLeading(); };
  elector_ = std::make_unique<controller::LeaderElector>(*lease_, clock_, lc, log_, &registry_);
  ElectionStarted();
  election_ = std::jthread([this](std::stop_token s) { elector_->Run(s); });
}

int Manager::Run(std::stop_token stop) {
  for (const controller::Runnable& r : runnables_)
    if (r.readiness) health_.AddReadinessCheck(r.check.empty() ? r.name : r.check, r.readiness);
  if (int code = StartOthers(stop); code != api::kExitOk) {
    StopStarted(false);
    return code < 0 ? api::kExitOk : code;
  }
  log_.Info("caches synced", {});  // every runnable on every replica is ready: the cache has synced
  for (const controller::Runnable& r : runnables_)
    if (r.liveness) health_.AddLivenessCheck(r.check.empty() ? r.name : r.check, r.liveness);
  if (config_.leader_elect)
    StartElection();
  else
    StartLeaders();
  return Shutdown(WaitForStopOrLoss(stop));
}

void Manager::StopStarted(bool leaders) {
  std::vector<size_t> started;
  if (leaders) {
    MutexLock lock(leaders_mu_);
    shutting_down_ = true;  // a late StartLeaders is a no-op
    started.swap(started_leaders_);
  } else {
    started.swap(started_others_);
  }
  for (auto it = started.rbegin(); it != started.rend(); ++it) runnables_[*it].stop();
}

int Manager::Shutdown(bool lost) {
  log_.Info(lost ? "leader election lost; exiting" : "stopping", {});
  config_.abort.request_stop();  // in-flight requests end at once, so the leader's runnables stop fast
  StopStarted(true);             // the controller: stop taking work; in-flight reconciles finish
  if (election_.joinable()) {
    election_.request_stop();  // releases the lease
    election_.join();
  }
  StopStarted(false);  // cache, events (flush), webhook, health, metrics
  log_.Info("stopped", {});
  return lost ? api::kExitFailed : api::kExitOk;
}

}  // namespace tfjob::operator_
