#include "controller/expectations.h"

namespace tfjob::controller {

Expectations::Expectations(Clock& clock, std::chrono::nanoseconds ttl) : clock_(clock), ttl_(ttl) {}

void Expectations::Expect(const std::string& key, int creates, int deletes) {
  MutexLock lock(mu_);
  if (creates <= 0 && deletes <= 0) {
    pending_.erase(key);
    return;
  }
  pending_[key] = Pending{creates, deletes, clock_.SteadyNow()};
}

void Expectations::CreationObserved(const std::string& key) {
  MutexLock lock(mu_);
  if (auto it = pending_.find(key); it != pending_.end() && it->second.creates > 0) --it->second.creates;
}

void Expectations::DeletionObserved(const std::string& key) {
  MutexLock lock(mu_);
  if (auto it = pending_.find(key); it != pending_.end() && it->second.deletes > 0) --it->second.deletes;
}

bool Expectations::SatisfiedLocked(const Pending& p) const {
  return (p.creates <= 0 && p.deletes <= 0) || clock_.SteadyNow() - p.set_at > ttl_;
}

bool Expectations::Satisfied(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = pending_.find(key);
  return it == pending_.end() || SatisfiedLocked(it->second);
}

std::optional<std::chrono::nanoseconds> Expectations::TimeLeft(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = pending_.find(key);
  if (it == pending_.end() || SatisfiedLocked(it->second)) return std::nullopt;
  // Satisfied once strictly past the TTL: one nanosecond more.
  return ttl_ - (clock_.SteadyNow() - it->second.set_at) + std::chrono::nanoseconds(1);
}

void Expectations::Delete(const std::string& key) {
  MutexLock lock(mu_);
  pending_.erase(key);
}

}  // namespace tfjob::controller
