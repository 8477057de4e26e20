#pragma once
// A Kueue Workload (kueue.x-k8s.io v1beta1/v1beta2: the fields tfjob reads are the same in
// both) as the operator's Kueue mode observes it, decoded once where it enters the process (the
// Kueue mode's informer, operator/kueue_mode.cc), so that the pure core (tfjob/core/kueue_*.h)
// reads typed fields, never JSON (docs/architecture.md, "Kueue mode"). Trimmed to what the core
// reads: the metadata, spec.queueName, the PodSets, the priority class, the execution limit,
// and the status's conditions, admission, admission checks and reclaimable pods.
//
// Two parts stay JSON, as opaque payload the core never walks as Workload structure: each
// PodSet's pod template (compared with, and restored onto, the job's templates), and `object`,
// the whole Workload as served, the base of the core's whole-object writes (PUT) so that a
// write keeps every field this record does not model.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "common/status.h"

namespace tfjob::api {

// metav1.Condition.
struct KueueCondition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::optional<int64_t> observed_generation;
  std::string last_transition_time;  // as served (RFC 3339); api::ParseTime reads it
  friend bool operator==(const KueueCondition&, const KueueCondition&) = default;
};

// spec.podSets[].topologyRequest: the three choices of a topology (the rest is not read).
struct KueueTopologyRequest {
  std::optional<std::string> required;
  std::optional<std::string> preferred;
  std::optional<bool> unconstrained;
  friend bool operator==(const KueueTopologyRequest&, const KueueTopologyRequest&) = default;
};

struct KueuePodSet {
  std::string name;
  std::optional<int32_t> count;
  nlohmann::json pod_template = nlohmann::json::object();  // spec.podSets[].template, opaque
  std::optional<KueueTopologyRequest> topology_request;
  friend bool operator==(const KueuePodSet&, const KueuePodSet&) = default;
};

// spec.priorityClassRef (absent, or an empty object: nullopt).
struct KueuePriorityClassRef {
  std::string group;
  std::string kind;  // "PriorityClass" or "WorkloadPriorityClass"
  std::string name;
  friend bool operator==(const KueuePriorityClassRef&, const KueuePriorityClassRef&) = default;
};

struct KueueWorkloadSpec {
  std::string queue_name;
  std::vector<KueuePodSet> pod_sets;
  std::optional<KueuePriorityClassRef> priority_class_ref;
  std::optional<int64_t> maximum_execution_time_seconds;
  std::optional<bool> active;
  friend bool operator==(const KueueWorkloadSpec&, const KueueWorkloadSpec&) = default;
};

// status.admission.podSetAssignments[].
struct KueuePodSetAssignment {
  std::string name;
  std::optional<int32_t> count;
  // The values of `flavors` (resource -> flavour), in the order of the resource names.
  std::vector<std::string> flavors;
  bool topology_assignment = false;  // a non-null topologyAssignment
  friend bool operator==(const KueuePodSetAssignment&, const KueuePodSetAssignment&) = default;
};

struct KueueAdmission {
  std::string cluster_queue;
  std::vector<KueuePodSetAssignment> pod_set_assignments;
  friend bool operator==(const KueueAdmission&, const KueueAdmission&) = default;
};

// status.admissionChecks[].podSetUpdates[].
struct KueuePodSetUpdate {
  std::string name;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();  // core/v1 Toleration objects, opaque
  friend bool operator==(const KueuePodSetUpdate&, const KueuePodSetUpdate&) = default;
};

struct KueueAdmissionCheck {
  std::string name;
  std::string state;  // "Pending", "Ready", "Retry", "Rejected"
  std::string message;
  std::vector<KueuePodSetUpdate> pod_set_updates;
  friend bool operator==(const KueueAdmissionCheck&, const KueueAdmissionCheck&) = default;
};

struct KueueReclaimablePod {
  std::string name;
  int64_t count = 0;
  friend bool operator==(const KueueReclaimablePod&, const KueueReclaimablePod&) = default;
};

struct KueueWorkloadStatus {
  std::vector<KueueCondition> conditions;
  std::optional<KueueAdmission> admission;
  std::vector<KueueAdmissionCheck> admission_checks;
  std::vector<KueueReclaimablePod> reclaimable_pods;
  int64_t accumulated_past_execution_time_seconds = 0;
  friend bool operator==(const KueueWorkloadStatus&, const KueueWorkloadStatus&) = default;
};

struct KueueWorkload {
  ObjectMeta metadata;
  std::vector<std::string> finalizers;  // metadata.finalizers
  KueueWorkloadSpec spec;
  KueueWorkloadStatus status;
  // The whole object as served: only the base of a whole-object write; never read field by field.
  nlohmann::json object = nlohmann::json::object();

  // The first condition of `type`, or null.
  const KueueCondition* Condition(std::string_view type) const;
  // That condition exists with status "True".
  bool ConditionTrue(std::string_view type) const;
  // The controller owner reference, or null.
  const OwnerReference* Controller() const;
  bool HasFinalizer(std::string_view finalizer) const;
  friend bool operator==(const KueueWorkload&, const KueueWorkload&) = default;
};

// kDataLoss naming the first field of the wrong shape ("undecodable Workload ns/name:
// spec.podSets[0].count: Invalid value: \"two\": must be an integer"); an absent (or null) field
// reads as empty.
StatusOr<KueueWorkload> DecodeKueueWorkload(const nlohmann::json& object);

// The conditions as a JSON list, each with every field metav1.Condition serializes
// (observedGeneration only when set): what a status write starts from.
nlohmann::json EncodeKueueConditions(const std::vector<KueueCondition>& conditions);

}  // namespace tfjob::api
