#include "common/token_bucket.h"

#include <algorithm>
#include <condition_variable>

namespace tfjob {

TokenBucket::TokenBucket(Clock& clock, double qps, int burst)
    : clock_(clock), qps_(qps), burst_(burst), tokens_(burst), last_(clock.SteadyNow()) {}

void TokenBucket::RefillLocked(Clock::SteadyTime now) {
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
}

bool TokenBucket::TryAccept() {
  MutexLock lock(mu_);
  RefillLocked(clock_.SteadyNow());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

std::chrono::nanoseconds TokenBucket::Reserve() {
  MutexLock lock(mu_);
  RefillLocked(clock_.SteadyNow());
  tokens_ -= 1.0;  // may go negative: later callers queue up behind this one
  if (tokens_ >= 0.0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<long long>(-tokens_ / qps_ * 1e9));
}

bool TokenBucket::Accept(std::stop_token stop) {
  auto wait = Reserve();
  if (wait <= std::chrono::nanoseconds(0)) return true;
  return SleepFor(wait, stop);
}

}  // namespace tfjob
