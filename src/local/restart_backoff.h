#pragma once
// RestartBackoff: the crash-loop back-off of one replica of `tfjob run`, with the kubelet's rules
// for a container that keeps failing (docs/local.md, "Crash-loop back-off", names where they are
// read): the first restart starts at once; each later one waits the back-off, counted from the
// end of the attempt that failed; the back-off starts at `initial` and doubles at each restart
// up to `max`; when an attempt ends more than 2 x `max` after the last restart started (it ran
// about 10 minutes with the defaults), the next restart counts as the first again.
//
// The core decides that a replica restarts (its plan deletes the failed pod, the next pass
// creates it again); this record only delays the create. Pure: the runner gives it its clock's
// times. Not thread-safe (the runner's loop owns it).

#include <chrono>
#include <optional>

#include "common/clock.h"

namespace tfjob::local {

struct BackoffPolicy {
  // The kubelet's defaults (10 s, doubling up to 5 min). Zero `initial`: no back-off at all.
  std::chrono::milliseconds initial{10000};
  std::chrono::milliseconds max{300000};
};

class RestartBackoff {
 public:
  using Time = Clock::SteadyTime;

  explicit RestartBackoff(BackoffPolicy policy = {}) : policy_(policy) {}

  // When the restart after an attempt that ended at `ended` may start: `ended` itself (at once)
  // for the first restart or after a reset, else `ended` plus the current back-off.
  Time DueAt(Time ended) const;
  // The back-off DueAt(ended) waits (zero: none).
  std::chrono::milliseconds WaitAfter(Time ended) const;
  // The restart after the attempt that ended at `ended` started at `now`: the back-off doubles
  // (up to `max`), or is `initial` again for the first restart or after a reset.
  void Started(Time ended, Time now);

 private:
  bool Reset(Time ended) const;

  BackoffPolicy policy_;
  std::optional<std::chrono::milliseconds> backoff_;  // none before the first restart
  Time last_start_{};                                 // when the last restart started
};

}  // namespace tfjob::local
