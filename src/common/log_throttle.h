#pragma once
// LogThrottle: at most one log line per key per interval, counting the lines it held back, so a
// failure that repeats (an API server that times out every request) is visible at once without
// flooding the log. The key is what makes two failures "the same" (endpoint + cause). The
// interval of the REST client's failure log is in docs/operator.md (section 2).

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/thread_annotations.h"

namespace tfjob {

class LogThrottle {
 public:
  // Keys beyond `max_keys` evict the oldest, so hostile input cannot grow the map without bound.
  LogThrottle(Clock& clock, std::chrono::nanoseconds interval, size_t max_keys = 1024);

  // Whether to log a line for `key` now. When yes, returns how many lines for `key` were held
  // back since the last one logged; when no (a line was logged less than `interval` ago),
  // returns nullopt and counts this one. Thread-safe.
  std::optional<int> Allow(const std::string& key);

 private:
  struct Entry {
    Clock::SteadyTime logged_at;
    int suppressed = 0;
  };
  Clock& clock_;
  const std::chrono::nanoseconds interval_;
  const size_t max_keys_;
  Mutex mu_;
  std::map<std::string, Entry> entries_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob
