#pragma once
// WorkQueue: client-go's rate-limiting, delaying work queue of string keys.
//  - fair: FIFO;
//  - stingy: a key is queued at most once, and never handed to two workers at once: an Add
//    while the key is being processed marks it dirty and it is queued again after Done;
//  - delaying: AddAfter(key, d) queues it when d has passed (ProcessDue drives this; a
//    background thread calls it unless the test drives time itself). As client-go's delaying
//    queue: a key waits at most once, with the earliest due time asked for; the waiting keys are
//    ordered by due time (then key), so an add costs O(log n) and ProcessDue O(k log n) for the
//    k keys due, and keys due together are queued in the order of their due times;
//  - rate limited: AddRateLimited uses the RateLimiter's per-key backoff;
//  - ShutDown stops new adds; Get drains what is queued, then returns nullopt.
// Thread-safe. Metrics (workqueue_*) are recorded when a Registry is given.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "controller/metrics.h"
#include "controller/rate_limiter.h"

namespace tfjob::controller {

class WorkQueue {
 public:
  // `registry` may be null. `name` labels the metrics.
  WorkQueue(Clock& clock, std::string name, Registry* registry = nullptr, RateLimiterOptions limits = {});
  ~WorkQueue();

  void Add(const std::string& key);
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const { return limiter_.NumRequeues(key); }

  // Blocks until a key is ready, the queue shuts down and is drained (nullopt), or `stop`.
  std::optional<std::string> Get(std::stop_token stop = {});
  // REQUIRES: `key` was returned by Get and Done not yet called for it.
  void Done(const std::string& key);

  void ShutDown();
  bool shutting_down() const;
  // Keys queued and ready (not delayed, not processing).
  size_t Len() const;
  size_t DelayedLenForTesting() const;

  // Moves every delayed key due at `now` into the queue; returns the next due time, if any.
  std::optional<Clock::SteadyTime> ProcessDue(Clock::SteadyTime now);
  // Starts the thread that calls ProcessDue as time passes (on the real clock).
  void StartDelayDriver();

 private:
  void AddLocked(const std::string& key) TFJOB_REQUIRES(mu_);

  Clock& clock_;
  RateLimiter limiter_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;        // a key became ready, or shutdown
  std::condition_variable_any delay_cv_;  // a new delayed key, or shutdown
  std::deque<std::string> queue_ TFJOB_GUARDED_BY(mu_);
  std::set<std::string> dirty_ TFJOB_GUARDED_BY(mu_);
  std::set<std::string> processing_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, Clock::SteadyTime> added_at_ TFJOB_GUARDED_BY(mu_);    // for queue-duration metrics
  std::map<std::string, Clock::SteadyTime> started_at_ TFJOB_GUARDED_BY(mu_);  // for work-duration metrics
  // The delayed keys: key -> earliest due time, and the same entries ordered by due time.
  std::map<std::string, Clock::SteadyTime> delayed_ TFJOB_GUARDED_BY(mu_);
  std::set<std::pair<Clock::SteadyTime, std::string>> due_order_ TFJOB_GUARDED_BY(mu_);
  bool shutting_down_ TFJOB_GUARDED_BY(mu_) = false;
  uint64_t delay_generation_ TFJOB_GUARDED_BY(mu_) = 0;  // bumped when delayed_ changes, wakes the driver
  std::jthread driver_;

  Gauge* depth_ = nullptr;
  Counter* adds_ = nullptr;
  Counter* retries_ = nullptr;
  Histogram* queue_duration_ = nullptr;
  Histogram* work_duration_ = nullptr;
};

}  // namespace tfjob::controller
