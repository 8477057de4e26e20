#include "tfjob/core/conditions.h"

#include <vector>

namespace tfjob::core {

const api::JobCondition* FindCondition(const api::JobStatus& status, std::string_view type) {
  for (const auto& c : status.conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool HasConditionTrue(const api::JobStatus& status, std::string_view type) {
  const api::JobCondition* c = FindCondition(status, type);
  return c != nullptr && c->status == "True";
}

bool SetCondition(api::JobStatus& status, std::string_view type, std::string_view condition_status,
                  std::string_view reason, std::string_view message, api::Time now) {
  if (IsFailed(status)) return false;
  api::JobCondition next{
      std::string(type), std::string(condition_status), std::string(reason), std::string(message), now, now};
  if (const api::JobCondition* existing = FindCondition(status, type)) {
    if (existing->status == next.status && existing->reason == next.reason) return false;
    if (existing->status == next.status) next.last_transition_time = existing->last_transition_time;
  }
  std::vector<api::JobCondition> out;
  for (const auto& c : status.conditions) {
    if (c.type == type) continue;
    if (type == kConditionRestarting && c.type == kConditionRunning) continue;
    if (type == kConditionRunning && c.type == kConditionRestarting) continue;
    api::JobCondition kept = c;
    if ((type == kConditionSucceeded || type == kConditionFailed) && c.type == kConditionRunning) kept.status = "False";
    out.push_back(std::move(kept));
  }
  out.push_back(std::move(next));
  status.conditions = std::move(out);
  return true;
}

bool IsJobSuspended(const api::TfJob& job) {
  return job.spec.run_policy.suspend.value_or(false);
}

bool OnlyActiveCountsDiffer(const api::JobStatus& written, const api::JobStatus& next) {
  if (written == next) return false;
  api::JobStatus a = written, b = next;
  for (auto* s : {&a, &b})
    for (auto& [type, rs] : s->replica_statuses) rs.active = 0;
  // A type that appears or disappears is more than a count.
  return a == b;
}

}  // namespace tfjob::core
