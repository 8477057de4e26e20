#pragma once
// BusyWorkers: which reconcile worker is on which key since when, so the liveness probe can see a
// worker that never comes back from one pass (a deadlock, a call without a time-out): the one
// failure of a worker thread that the process survives. A worker that throws ends the process;
// one that returns has been stopped. docs/operator.md, "Health and readiness".

#include <chrono>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/thread_annotations.h"

namespace tfjob::controller {

class BusyWorkers {
 public:
  // `workers`: the number of worker slots (index 0 .. workers-1). Thread-safe.
  BusyWorkers(const Clock& clock, int workers);

  // Worker `worker` starts a pass on `key` / has ended it. An out-of-range index is ignored.
  void Begin(int worker, const std::string& key);
  void End(int worker);

  // OK unless a worker has been on one pass for longer than `limit`; then kUnavailable naming
  // the longest such worker, its key and for how long.
  Status Check(std::chrono::nanoseconds limit) const;

 private:
  struct Slot {
    bool busy = false;
    std::string key;
    Clock::SteadyTime since{};
  };
  const Clock& clock_;
  mutable Mutex mu_;
  std::vector<Slot> slots_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
