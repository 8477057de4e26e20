#include "operator/status_write_throttle.h"

#include <optional>

namespace tfjob::operator_ {

void StatusWriteThrottle::Apply(const std::string& key, const api::TfJob& job, core::Plan& plan) {
  if (!plan.status) return;
  const Clock::SteadyTime now = clock_.SteadyNow();
  MutexLock lock(mu_);
  auto it = written_.find(key);
  std::optional<std::chrono::nanoseconds> since;
  if (it != written_.end()) since = now - it->second;
  if (auto wait = core::CountOnlyStatusWait(job.status, plan, since, interval_)) {
    core::HoldStatus(plan, *wait);
    return;
  }
  written_[key] = now;
}

void StatusWriteThrottle::Forget(const std::string& key) {
  MutexLock lock(mu_);
  written_.erase(key);
}

bool StatusWriteThrottle::Remembers(const std::string& key) const {
  MutexLock lock(mu_);
  return written_.contains(key);
}

}  // namespace tfjob::operator_
