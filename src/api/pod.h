#pragma once
// Trimmed Pod and Service records: only what the controller reads (design.md section 4), so
// the operator's cache stays small. Decoded from the full objects; never written back.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/tfjob.h"
#include "api/time.h"

namespace tfjob::api {

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };
PodPhase ParsePodPhase(std::string_view text);  // "" and unknown words -> kUnknown... "" -> kPending
std::string_view PodPhaseName(PodPhase phase);

struct ContainerStatus {
  std::string name;
  int32_t restart_count = 0;
  bool terminated = false;
  int32_t exit_code = 0;  // valid when terminated
  std::string terminated_reason;
  std::string terminated_message;
  std::string waiting_reason;
  std::string waiting_message;
  friend bool operator==(const ContainerStatus&, const ContainerStatus&) = default;
};

struct PodCondition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  std::optional<Time> last_transition_time;
  friend bool operator==(const PodCondition&, const PodCondition&) = default;
};

// Fields common to the trimmed records.
struct ChildMeta {
  std::string name;
  std::string ns;
  std::string uid;
  std::string resource_version;
  // The training.kubeflow.org/* labels the controller reads; no other label is kept.
  std::string job_name;  // training.kubeflow.org/job-name
  // training.kubeflow.org/replica-type ("worker"); nullopt when absent or no type's label.
  std::optional<ReplicaType> replica_type;
  int32_t replica_index = -1;  // training.kubeflow.org/replica-index; -1 if absent or not a number
  std::string controller_uid;  // uid of the controller ownerReference, "" if none
  std::optional<Time> deletion_timestamp;
  friend bool operator==(const ChildMeta&, const ChildMeta&) = default;
};

struct Pod {
  ChildMeta meta;
  PodPhase phase = PodPhase::kPending;
  std::string node_name;
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  // Only conditions whose status is not "True" (what abnormal-pod events report), so a
  // healthy pod keeps none.
  std::vector<PodCondition> conditions;
  // Set when someone else is disrupting the pod (docs/semantics.md D21): the reason and message
  // of its `DisruptionTarget` condition (status True: EvictionByEvictionAPI,
  // PreemptionByScheduler, DeletionByTaintManager, TerminationByKubelet, DeletionByPodGC, ...), or
  // `Evicted` with status.message for a kubelet eviction reported without that condition.
  std::string disruption_reason;
  std::string disruption_message;
  friend bool operator==(const Pod&, const Pod&) = default;
};

struct Service {
  ChildMeta meta;
  friend bool operator==(const Service&, const Service&) = default;
};

}  // namespace tfjob::api
