#pragma once
// TokenBucket: `qps` tokens per second up to `burst` stored, like client-go's flowcontrol
// token-bucket limiter. Shared by every caller of one REST client (--kube-api-qps/-burst) and
// by the work queue's overall limit. Thread-safe. Time comes from the injected Clock.

#include <chrono>
#include <mutex>
#include <stop_token>

#include "common/clock.h"
#include "common/thread_annotations.h"

namespace tfjob {

class TokenBucket {
 public:
  // REQUIRES: qps > 0, burst >= 1.
  TokenBucket(Clock& clock, double qps, int burst);

  // Takes one token if available now.
  bool TryAccept();
  // Reserves one token and returns how long the caller must wait before using it (0 if one
  // was available). Never blocks.
  std::chrono::nanoseconds Reserve();
  // Reserve() then sleeps for the wait on the real clock; false if `stop` fired first.
  bool Accept(std::stop_token stop = {});

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void RefillLocked(Clock::SteadyTime now) TFJOB_REQUIRES(mu_);

  Clock& clock_;
  const double qps_;
  const int burst_;
  Mutex mu_;
  double tokens_ TFJOB_GUARDED_BY(mu_);
  Clock::SteadyTime last_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob
