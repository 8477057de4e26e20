#pragma once
// The one formatter of wall times: RFC 3339 in UTC, as Kubernetes writes them. API timestamps
// (metav1.Time, whole seconds: api/time.h), lease times (metav1.MicroTime, microseconds) and log
// lines (milliseconds) all come from here.

#include <chrono>
#include <string>

namespace tfjob {

// "2026-11-30T11:16:50Z", or with `fraction_digits` digits of the second after a '.' (1 to 9;
// "2026-11-30T11:16:50.123Z" for 3), truncated, never rounded.
std::string FormatRfc3339(std::chrono::system_clock::time_point t, int fraction_digits = 0);

}  // namespace tfjob
