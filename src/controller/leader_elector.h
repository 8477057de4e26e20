#pragma once
// LeaderElector: one leader among replicas of the operator, by a Lease (client-go's
// leaderelection). Every retry period a candidate reads the lease and takes it if it is free
// or expired; the leader renews it and must succeed within the renew deadline or it stops
// leading. Defaults: lease 15 s, renew deadline 10 s, retry 2 s. On a clean stop the leader
// releases the lease so a successor takes over at once. Time is the injected Clock; TryOnce()
// lets tests step the state machine without threads.

#include <atomic>
#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/logging.h"
#include "controller/lease_lock.h"
#include "controller/metrics.h"

namespace tfjob::controller {

struct LeaderElectionConfig {
  std::string identity;
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;  // the operator exits here (never carries on)
};

class LeaderElector {
 public:
  // `registry` (may be null) gets leader_election_master_status{name} = 1 while leading.
  LeaderElector(LeaseLock& lock, Clock& clock, LeaderElectionConfig config, Logger log, Registry* registry = nullptr);

  // One acquire-or-renew attempt at clock.Now(). Returns true if we hold the lease after it.
  bool TryOnce();
  // Blocks: acquires, then renews until `stop` or a lost lease. Calls the callbacks.
  void Run(std::stop_token stop);
  // Gives the lease up if we hold it (holder "" and a 1 s duration).
  void Release();
  bool IsLeader() const { return leading_.load(); }

 private:
  LeaseLock& lock_;
  Clock& clock_;
  LeaderElectionConfig config_;
  Logger log_;
  void SetLeading(bool leading);
  // Records that `written` is now the lease, held by us since `steady`; returns true.
  bool Held(const LeaderRecord& written, Clock::SteadyTime steady);

  std::atomic<bool> leading_{false};
  Gauge* master_status_ = nullptr;
  LeaderRecord observed_;
  Clock::SteadyTime observed_at_{};
  Clock::SteadyTime last_renew_{};
};

}  // namespace tfjob::controller
