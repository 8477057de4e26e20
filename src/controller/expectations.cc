#include "controller/expectations.h"

namespace tfjob::controller {

Expectations::Expectations(Clock& clock, std::chrono::nanoseconds ttl) : clock_(clock), ttl_(ttl) {}

void Expectations::Expect(const std::string& key, int creates, int deletes) {
  std::lock_guard lock(mu_);
  pending_[key] = Pending{creates, deletes, clock_.SteadyNow()};
}

void Expectations::Raise(const std::string& key, int creates, int deletes) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = pending_.try_emplace(key, Pending{0, 0, clock_.SteadyNow()});
  it->second.creates += creates;
  it->second.deletes += deletes;
  it->second.set_at = clock_.SteadyNow();
}

void Expectations::CreationObserved(const std::string& key) {
  std::lock_guard lock(mu_);
  if (auto it = pending_.find(key); it != pending_.end() && it->second.creates > 0) --it->second.creates;
}

void Expectations::DeletionObserved(const std::string& key) {
  std::lock_guard lock(mu_);
  if (auto it = pending_.find(key); it != pending_.end() && it->second.deletes > 0) --it->second.deletes;
}

bool Expectations::Satisfied(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = pending_.find(key);
  if (it == pending_.end()) return true;
  const Pending& p = it->second;
  return (p.creates <= 0 && p.deletes <= 0) || clock_.SteadyNow() - p.set_at > ttl_;
}

void Expectations::Delete(const std::string& key) {
  std::lock_guard lock(mu_);
  pending_.erase(key);
}

}  // namespace tfjob::controller
