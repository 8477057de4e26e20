#include "controller/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace tfjob::controller {

RateLimiter::RateLimiter(Clock& clock, RateLimiterOptions options)
    : options_(options), bucket_(clock, options.overall_qps, options.overall_burst) {}

std::chrono::nanoseconds RateLimiter::When(const std::string& key) {
  int failures;
  {
    MutexLock lock(mu_);
    failures = failures_[key]++;
  }
  double exp = static_cast<double>(options_.base_delay.count()) * std::pow(2.0, std::min(failures, 62));
  auto per_key = exp > static_cast<double>(options_.max_delay.count())
                     ? options_.max_delay
                     : std::chrono::nanoseconds(static_cast<long long>(exp));
  return std::max(per_key, bucket_.Reserve());
}

void RateLimiter::Forget(const std::string& key) {
  MutexLock lock(mu_);
  failures_.erase(key);
}

int RateLimiter::NumRequeues(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

}  // namespace tfjob::controller
