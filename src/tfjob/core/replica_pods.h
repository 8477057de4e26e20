#pragma once
// Reading a job's pods: filtering by replica type, slicing by index, counting into a replica
// status, exit codes, and the worker-0 success rule (docs/semantics.md 3.4, 3.6, 1.3).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "api/pod.h"
#include "api/tfjob.h"

namespace tfjob::core {

// Sentinel exit code when the tensorflow container has no terminated state (retryable).
inline constexpr int32_t kExitCodeUnknown = 0xbeef;

// Exit codes >= 128 (killed by a signal) are retried under restartPolicy ExitCode.
inline bool IsRetryableExitCode(int32_t code) {
  return code >= 128;
}

// Pods whose replica-type label is `type`'s ("worker").
std::vector<const api::Pod*> FilterPodsForReplicaType(const std::vector<const api::Pod*>& pods, api::ReplicaType type);

// max(replicas, largest replica-index + 1); pods without a parsable index are ignored.
int32_t CalculatePodSliceSize(const std::vector<const api::Pod*>& pods, int32_t replicas);
// Buckets of pods by replica-index, sized by CalculatePodSliceSize.
std::vector<std::vector<const api::Pod*>> SlicePodsByIndex(const std::vector<const api::Pod*>& pods, int32_t replicas);

// Counts one pod into a replica status (3.4 step d).
void CountPod(const api::Pod& pod, api::ReplicaStatus* status);

// The tensorflow container's terminated exit code, or nullopt if it has not terminated.
std::optional<int32_t> TensorflowExitCode(const api::Pod& pod);

// 3.6: true if the spec has no Worker, or worker 0 exists once, Succeeded, exit code 0.
bool IsWorker0Completed(const api::TfJob& job, const std::vector<const api::Pod*>& pods);

}  // namespace tfjob::core
