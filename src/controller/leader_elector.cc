#include "controller/leader_elector.h"

#include <condition_variable>
#include <mutex>

namespace tfjob::controller {

LeaderElector::LeaderElector(LeaseLock& lock, Clock& clock, LeaderElectionConfig config, Logger log, Registry* registry)
    : lock_(lock), clock_(clock), config_(std::move(config)), log_(log.With({{"lease", lock.Describe()}})) {
  if (registry != nullptr)
    master_status_ =
        &registry->AddGauge("leader_election_master_status", "1 while this process leads, 0 otherwise", {"name"})
             .With({lock.Describe()});
}

void LeaderElector::SetLeading(bool leading) {
  leading_ = leading;
  if (master_status_) master_status_->Set(leading ? 1 : 0);
}

bool LeaderElector::TryOnce() {
  auto now = clock_.Now();
  auto steady = clock_.SteadyNow();
  LeaderRecord desired{config_.identity, static_cast<int>(config_.lease_duration.count()), now, now, 0, ""};
  StatusOr<LeaderRecord> current = lock_.Get();
  if (!current.ok()) {
    if (!IsNotFound(current.status())) {
      log_.Warning("reading the lease failed", {{"error", current.status().message()}});
      return false;
    }
    if (Status s = lock_.Create(desired); !s.ok()) {
      if (!IsAlreadyExists(s)) log_.Warning("creating the lease failed", {{"error", s.message()}});
      return false;
    }
    return Held(desired, steady);
  }
  // A changed record restarts our view of its expiry, measured on our own clock (clocks of
  // different machines are not compared).
  if (!(current->holder_identity == observed_.holder_identity && current->renew_time == observed_.renew_time &&
        current->resource_version == observed_.resource_version)) {
    observed_ = *current;
    observed_at_ = steady;
  }
  bool held_by_us = current->holder_identity == config_.identity;
  bool expired =
      current->holder_identity.empty() || steady - observed_at_ > std::chrono::seconds(current->lease_duration_seconds);
  if (!held_by_us && !expired) return false;
  if (held_by_us) {
    desired.acquire_time = current->acquire_time;
    desired.leader_transitions = current->leader_transitions;
  } else {
    desired.leader_transitions = current->leader_transitions + 1;
  }
  desired.resource_version = current->resource_version;
  if (Status s = lock_.Update(desired); !s.ok()) {
    if (!IsConflict(s)) log_.Warning("updating the lease failed", {{"error", s.message()}});
    return false;
  }
  return Held(desired, steady);
}

bool LeaderElector::Held(const LeaderRecord& written, Clock::SteadyTime steady) {
  observed_ = written;
  observed_at_ = steady;
  last_renew_ = steady;
  return true;
}

void LeaderElector::Run(std::stop_token stop) {
  auto sleep = [&](std::chrono::nanoseconds d) { clock_.SleepFor(d, stop); };  // the injected clock
  log_.Info("waiting to acquire the lease", {{"identity", config_.identity}});
  while (!stop.stop_requested() && !TryOnce()) sleep(config_.retry_period);
  if (stop.stop_requested()) return;
  SetLeading(true);
  log_.Info("acquired the lease; leading", {{"identity", config_.identity}});
  if (config_.on_started_leading) config_.on_started_leading();
  while (!stop.stop_requested()) {
    sleep(config_.retry_period);
    if (stop.stop_requested()) break;
    if (TryOnce()) continue;
    if (clock_.SteadyNow() - last_renew_ > config_.renew_deadline) {
      SetLeading(false);
      log_.Error("leader election lost", {{"identity", config_.identity}});
      if (config_.on_stopped_leading) config_.on_stopped_leading();
      return;
    }
  }
  Release();
}

void LeaderElector::Release() {
  if (!leading_.load()) return;
  SetLeading(false);
  StatusOr<LeaderRecord> current = lock_.Get();
  if (!current.ok() || current->holder_identity != config_.identity) return;
  LeaderRecord released = *current;
  released.holder_identity = "";
  released.lease_duration_seconds = 1;
  released.renew_time = clock_.Now();
  if (Status s = lock_.Update(released); !s.ok())
    log_.Warning("releasing the lease failed", {{"error", s.message()}});
  else
    log_.Info("released the lease", {});
}

}  // namespace tfjob::controller
