#pragma once
// Per-key retry delays for the work queue: exponential per key (5 ms doubling to 1000 s),
// combined with an overall token bucket (10/s, burst 100) by taking the longer delay.
// client-go's DefaultControllerRateLimiter. Thread-safe.

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "common/token_bucket.h"

namespace tfjob::controller {

struct RateLimiterOptions {
  std::chrono::nanoseconds base_delay = std::chrono::milliseconds(5);
  std::chrono::nanoseconds max_delay = std::chrono::seconds(1000);
  double overall_qps = 10;
  int overall_burst = 100;
};

class RateLimiter {
 public:
  RateLimiter(Clock& clock, RateLimiterOptions options = {});
  // The delay before `key` may be retried; counts one more failure of it.
  std::chrono::nanoseconds When(const std::string& key);
  // Forget the failures of `key` (it succeeded).
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

 private:
  const RateLimiterOptions options_;
  TokenBucket bucket_;
  mutable Mutex mu_;
  std::map<std::string, int> failures_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
