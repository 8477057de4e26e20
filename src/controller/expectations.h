#pragma once
// Expectations: how many creates and deletes of a job's children the controller is still
// waiting to see in its informer cache. A job is reconciled again only when all of them were
// observed or their 5-minute TTL passed (docs/semantics.md D1: all, not any), so a stale cache cannot make
// it create a pod twice. Deterministic names and AlreadyExists stay the real guard.
// client-go's ControllerExpectations. Thread-safe; time from the injected Clock.

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "common/clock.h"

namespace tfjob::controller {

class Expectations {
 public:
  explicit Expectations(Clock& clock, std::chrono::nanoseconds ttl = std::chrono::minutes(5));

  // Replaces the pending counts of `key` and restarts its TTL.
  void Expect(const std::string& key, int creates, int deletes);
  // Adds to the pending counts (a create issued after Expect).
  void Raise(const std::string& key, int creates, int deletes);
  void CreationObserved(const std::string& key);
  void DeletionObserved(const std::string& key);
  // True when nothing is pending for `key`, or its expectations are older than the TTL.
  bool Satisfied(const std::string& key) const;
  void Delete(const std::string& key);

 private:
  struct Pending {
    int creates = 0;
    int deletes = 0;
    Clock::SteadyTime set_at;
  };
  Clock& clock_;
  const std::chrono::nanoseconds ttl_;
  mutable std::mutex mu_;  // guards pending_
  std::map<std::string, Pending> pending_;
};

}  // namespace tfjob::controller
