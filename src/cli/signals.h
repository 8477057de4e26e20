#pragma once
// The process edges of `tfjob`: SIGTERM/SIGINT as stop requests, and the environment.

#include <functional>
#include <map>
#include <stop_token>
#include <string>

namespace tfjob::cli {

// Runs `body` with SIGTERM/SIGINT turned into stop requests: the first asks for a graceful stop,
// a second one for an immediate kill (`tfjob run`, the cluster waits; the operator reads only the
// first). The signals are blocked in every thread and one thread waits for them (no
// async-signal-unsafe handler). `log_signals`: each one is logged (the operator's log).
int WithSignalStops(const std::function<int(std::stop_token, std::stop_token)>& body, bool log_signals);

// The process's environment as a map.
std::map<std::string, std::string> Environment();

}  // namespace tfjob::cli
