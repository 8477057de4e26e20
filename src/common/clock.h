#pragma once
// Clock: the one seam for time. Pure code takes `now` as a value; runtime code takes a
// Clock& so that tests drive time with FakeClock (style.md R4). Wall time (system_clock)
// is what Kubernetes timestamps use; steady time is for durations and deadlines.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <utility>

namespace tfjob {

// The one interruptible sleep: waits `d` of real time, or less when `stop` is requested; returns
// false if it was (also when it already was on entry).
inline bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

class Clock {
 public:
  using WallTime = std::chrono::system_clock::time_point;
  using SteadyTime = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual WallTime Now() const = 0;
  virtual SteadyTime SteadyNow() const = 0;
  // Waits `d`, or less when `stop` is requested; returns false if it was. FakeClock advances
  // itself instead of waiting.
  virtual bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) const {
    return ::tfjob::SleepFor(d, std::move(stop));
  }
};

// The process clock. Thread-safe.
class RealClock final : public Clock {
 public:
  // Clock:
  WallTime Now() const override { return std::chrono::system_clock::now(); }
  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace tfjob
