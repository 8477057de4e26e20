#include "local/restart_backoff.h"

#include <algorithm>

namespace tfjob::local {

bool RestartBackoff::Reset(Time ended) const {
  return !backoff_ || ended - last_start_ > 2 * policy_.max;
}

std::chrono::milliseconds RestartBackoff::WaitAfter(Time ended) const {
  if (Reset(ended)) return std::chrono::milliseconds(0);
  return *backoff_;
}

RestartBackoff::Time RestartBackoff::DueAt(Time ended) const {
  return ended + WaitAfter(ended);
}

void RestartBackoff::Started(Time ended, Time now) {
  if (Reset(ended))
    backoff_ = std::min(policy_.initial, policy_.max);
  else
    backoff_ = std::min(*backoff_ * 2, policy_.max);
  last_start_ = now;
}

}  // namespace tfjob::local
