#include "controller/busy_workers.h"

#include "common/logging.h"

namespace tfjob::controller {

BusyWorkers::BusyWorkers(const Clock& clock, int workers) : clock_(clock) {
  MutexLock lock(mu_);
  slots_.resize(workers > 0 ? static_cast<size_t>(workers) : 0);
}

void BusyWorkers::Begin(int worker, const std::string& key) {
  const Clock::SteadyTime now = clock_.SteadyNow();
  MutexLock lock(mu_);
  if (worker < 0 || static_cast<size_t>(worker) >= slots_.size()) return;
  slots_[static_cast<size_t>(worker)] = {true, key, now};
}

void BusyWorkers::End(int worker) {
  MutexLock lock(mu_);
  if (worker < 0 || static_cast<size_t>(worker) >= slots_.size()) return;
  slots_[static_cast<size_t>(worker)].busy = false;
}

Status BusyWorkers::Check(std::chrono::nanoseconds limit) const {
  const Clock::SteadyTime now = clock_.SteadyNow();
  MutexLock lock(mu_);
  const Slot* longest = nullptr;
  size_t index = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (!s.busy || now - s.since <= limit) continue;
    if (longest == nullptr || s.since < longest->since) {
      longest = &s;
      index = i;
    }
  }
  if (longest == nullptr) return OkStatus();
  return UnavailableError("worker " + std::to_string(index) + " has been reconciling " + longest->key + " for " +
                          FormatDuration(now - longest->since) + " (limit " + FormatDuration(limit) + ")");
}

}  // namespace tfjob::controller
