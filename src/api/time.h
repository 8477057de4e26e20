#pragma once
// Kubernetes timestamps (metav1.Time): RFC 3339 in UTC with second precision on the wire,
// e.g. "2026-11-30T11:16:50Z".

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tfjob::api {

using Time = std::chrono::system_clock::time_point;

// "YYYY-MM-DDTHH:MM:SSZ" (fractions dropped, as metav1.Time does).
std::string FormatTime(Time t);
// Accepts RFC 3339 with 'Z' or a numeric offset and optional fractional seconds;
// nullopt when malformed.
std::optional<Time> ParseTime(std::string_view text);
// Truncates to whole seconds, which is what survives a round trip through the API.
Time TruncateToSeconds(Time t);

}  // namespace tfjob::api
