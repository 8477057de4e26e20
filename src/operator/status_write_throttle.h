#pragma once
// StatusWriteThrottle: the TfJobController's status-write throttle (docs/semantics.md D30). It
// remembers when each job's status was last written and applies the pure rule
// core::CountOnlyStatusWait to each plan: a status change of replica `active` counts alone within
// --status-count-interval of that write is held back until the interval ends. Thread-safe: the
// reconcile workers call it concurrently (one job at a time each, by the queue).

#include <chrono>
#include <string>
#include <unordered_map>

#include "api/tfjob.h"
#include "common/clock.h"
#include "common/thread_annotations.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::operator_ {

class StatusWriteThrottle {
 public:
  // `interval` zero: nothing is ever held.
  StatusWriteThrottle(Clock& clock, std::chrono::nanoseconds interval) : clock_(clock), interval_(interval) {}

  // Holds back `plan`'s status when the rule says so (the plan then looks again when it may be
  // written); otherwise a plan with a status counts as the job's status write now.
  void Apply(const std::string& key, const api::TfJob& job, core::Plan& plan) TFJOB_EXCLUDES(mu_);
  // The job is gone: its last write is forgotten.
  void Forget(const std::string& key) TFJOB_EXCLUDES(mu_);
  // A status write of the job is remembered (for tests).
  bool Remembers(const std::string& key) const TFJOB_EXCLUDES(mu_);

 private:
  Clock& clock_;
  const std::chrono::nanoseconds interval_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Clock::SteadyTime> written_ TFJOB_GUARDED_BY(mu_);  // by job key
};

}  // namespace tfjob::operator_
