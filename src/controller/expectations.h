#pragma once
// Expectations: how many creates and deletes of a job's children the controller is still
// waiting to see in its informer cache. A job is reconciled again only when all of them were
// observed or their 5-minute TTL passed (docs/semantics.md D1: all, not any), so a stale cache cannot make
// it create a pod twice. Deterministic names and AlreadyExists stay the real guard.
// The counts are set once per pass to that pass's totals (client-go's ControllerExpectations
// does the same): an event that never came (a pod created and deleted inside a watch gap) is
// forgotten by the next pass, instead of being carried into every later one.
// Thread-safe; time from the injected Clock.

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/thread_annotations.h"

namespace tfjob::controller {

class Expectations {
 public:
  explicit Expectations(Clock& clock, std::chrono::nanoseconds ttl = std::chrono::minutes(5));

  // Replaces the pending counts of `key` with one pass's totals and restarts its TTL.
  void Expect(const std::string& key, int creates, int deletes);
  void CreationObserved(const std::string& key);
  void DeletionObserved(const std::string& key);
  // True when nothing is pending for `key`, or its expectations are older than the TTL.
  bool Satisfied(const std::string& key) const;
  // How long until the pending expectations of `key` expire; nullopt when Satisfied.
  std::optional<std::chrono::nanoseconds> TimeLeft(const std::string& key) const;
  void Delete(const std::string& key);

 private:
  struct Pending {
    int creates = 0;
    int deletes = 0;
    Clock::SteadyTime set_at;
  };
  bool SatisfiedLocked(const Pending& p) const;

  Clock& clock_;
  const std::chrono::nanoseconds ttl_;
  mutable Mutex mu_;
  std::map<std::string, Pending> pending_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
