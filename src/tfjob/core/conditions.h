#pragma once
// Job conditions: the update algorithm of docs/semantics.md 3.7 (upstream's setCondition) and
// the predicates on a status. Pure: `now` is a parameter.

#include <string>
#include <string_view>

#include "api/tfjob.h"

namespace tfjob::core {

inline constexpr std::string_view kConditionCreated = "Created";
inline constexpr std::string_view kConditionRunning = "Running";
inline constexpr std::string_view kConditionRestarting = "Restarting";
inline constexpr std::string_view kConditionSucceeded = "Succeeded";
inline constexpr std::string_view kConditionFailed = "Failed";
inline constexpr std::string_view kConditionSuspended = "Suspended";

// Appends or replaces a condition (status "True" unless given) following 3.7: Failed is
// terminal; same type+status+reason is a no-op; Restarting and Running replace each other;
// Succeeded/Failed flip Running to False. Returns true when the status changed.
bool SetCondition(api::JobStatus& status, std::string_view type, std::string_view condition_status,
                  std::string_view reason, std::string_view message, api::Time now);

const api::JobCondition* FindCondition(const api::JobStatus& status, std::string_view type);
bool HasConditionTrue(const api::JobStatus& status, std::string_view type);
inline bool IsSucceeded(const api::JobStatus& s) {
  return HasConditionTrue(s, kConditionSucceeded);
}
inline bool IsFailed(const api::JobStatus& s) {
  return HasConditionTrue(s, kConditionFailed);
}
inline bool IsRunning(const api::JobStatus& s) {
  return HasConditionTrue(s, kConditionRunning);
}
inline bool IsSuspendedCondition(const api::JobStatus& s) {
  return HasConditionTrue(s, kConditionSuspended);
}
inline bool IsFinished(const api::JobStatus& s) {
  return IsSucceeded(s) || IsFailed(s);
}

// runPolicy.suspend == true.
bool IsJobSuspended(const api::TfJob& job);

// True when `next` differs from `written` only in replica `active` counts: the same conditions,
// times and other counters (docs/semantics.md D30: such a change may wait to be written).
bool OnlyActiveCountsDiffer(const api::JobStatus& written, const api::JobStatus& next);

}  // namespace tfjob::core
