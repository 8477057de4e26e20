#include "common/log_throttle.h"

#include <algorithm>

namespace tfjob {

LogThrottle::LogThrottle(Clock& clock, std::chrono::nanoseconds interval, size_t max_keys)
    : clock_(clock), interval_(interval), max_keys_(std::max<size_t>(max_keys, 1)) {}

std::optional<int> LogThrottle::Allow(const std::string& key) {
  auto now = clock_.SteadyNow();
  MutexLock lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    if (now - it->second.logged_at < interval_) {
      ++it->second.suppressed;
      return std::nullopt;
    }
    int held = it->second.suppressed;
    it->second = {now, 0};
    return held;
  }
  if (entries_.size() >= max_keys_) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return a.second.logged_at < b.second.logged_at;
    });
    entries_.erase(oldest);
  }
  entries_.emplace(key, Entry{now, 0});
  return 0;
}

}  // namespace tfjob
