#pragma once
// FakeClock: a Clock that moves only when a test calls Advance(). Thread-safe.

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace tfjob {

class FakeClock final : public Clock {
 public:
  // Starts at 2026-01-01T00:00:00Z wall time unless told otherwise.
  explicit FakeClock(WallTime start = WallTime(std::chrono::seconds(1767225600))) : offset_ns_(0), wall_start_(start) {}

  void Advance(std::chrono::nanoseconds d) const { offset_ns_ += d.count(); }
  // Total of every SleepFor so far.
  std::chrono::nanoseconds slept() const { return std::chrono::nanoseconds(slept_ns_.load()); }

  // Clock:
  WallTime Now() const override {
    return wall_start_ + std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(offset_ns_.load()));
  }
  SteadyTime SteadyNow() const override {
    return SteadyTime(std::chrono::nanoseconds(offset_ns_.load()) + std::chrono::hours(1));
  }
  // Returns at once, having advanced the clock by `d` (unless `stop` is requested).
  bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) const override {
    if (stop.stop_requested()) return false;
    Advance(d);
    slept_ns_ += d.count();
    return true;
  }

 private:
  mutable std::atomic<long long> offset_ns_;
  mutable std::atomic<long long> slept_ns_{0};
  WallTime wall_start_;
};

}  // namespace tfjob
