#include "api/pod.h"

namespace tfjob::api {

PodPhase ParsePodPhase(std::string_view text) {
  if (text == "Pending" || text.empty()) return PodPhase::kPending;
  if (text == "Running") return PodPhase::kRunning;
  if (text == "Succeeded") return PodPhase::kSucceeded;
  if (text == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

std::string_view PodPhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending: return "Pending";
    case PodPhase::kRunning: return "Running";
    case PodPhase::kSucceeded: return "Succeeded";
    case PodPhase::kFailed: return "Failed";
    case PodPhase::kUnknown: return "Unknown";
  }
  return "Unknown";
}

}  // namespace tfjob::api
