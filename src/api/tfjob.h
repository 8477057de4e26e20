#pragma once
// TFJob (kubeflow.org/v1) object model: the fields the operator reads and writes, as plain
// value types. Pod templates stay JSON (nlohmann::json) so that every field we don't model
// passes through to the pods exactly as written. Wire names live in tfjob_json.cc only.
// See docs/semantics.md section 1.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/time.h"
#include "api/wire_enum.h"

namespace tfjob::api {

inline constexpr std::string_view kGroup = "kubeflow.org";
inline constexpr std::string_view kApiVersion = "kubeflow.org/v1";
inline constexpr std::string_view kKind = "TFJob";
inline constexpr std::string_view kPlural = "tfjobs";
inline constexpr std::string_view kDefaultContainerName = "tensorflow";
inline constexpr std::string_view kDefaultPortName = "tfjob-port";
inline constexpr int32_t kDefaultPort = 2222;
inline constexpr std::string_view kManagedByUs = "kubeflow.org/training-operator";
inline constexpr std::string_view kManagedByMultiKueue = "kueue.x-k8s.io/multikueue";

// The known replica types, enumerated in the fixed order in which status rules and
// deterministic messages walk them (docs/semantics.md 3.6, D10): Chief, Evaluator, Master, PS, Worker.
enum class ReplicaType { kChief, kEvaluator, kMaster, kPS, kWorker };
inline constexpr std::array<ReplicaType, 5> kAllReplicaTypes = {
    ReplicaType::kChief, ReplicaType::kEvaluator, ReplicaType::kMaster, ReplicaType::kPS, ReplicaType::kWorker};

// "Chief", "Evaluator", "Master", "PS", "Worker".
std::string_view ReplicaTypeName(ReplicaType t);
// "chief", "evaluator", "master", "ps", "worker".
std::string_view ReplicaTypeLabel(ReplicaType t);
// Exact match of a spec key.
std::optional<ReplicaType> ParseReplicaType(std::string_view key);
// Case-insensitive match ("worker", "WORKER" -> kWorker).
std::optional<ReplicaType> ParseReplicaTypeFold(std::string_view key);
// Exact match of a replica-type label value ("worker" -> kWorker; "Worker" -> nullopt).
std::optional<ReplicaType> ParseReplicaTypeLabel(std::string_view label);
inline bool IsChiefOrMaster(ReplicaType t) {
  return t == ReplicaType::kChief || t == ReplicaType::kMaster;
}

// restartPolicy of a replica spec (docs/semantics.md 1.3, 3.4 c).
enum class RestartPolicy { kAlways, kExitCode, kNever, kOnFailure };
template <>
struct EnumSpellings<RestartPolicy> {
  static constexpr std::array<std::pair<RestartPolicy, std::string_view>, 4> kValues = {{
      {RestartPolicy::kAlways, "Always"},
      {RestartPolicy::kExitCode, "ExitCode"},
      {RestartPolicy::kNever, "Never"},
      {RestartPolicy::kOnFailure, "OnFailure"},
  }};
};

// runPolicy.cleanPodPolicy (3.11, D4).
enum class CleanPodPolicy { kAll, kNone, kRunning };
template <>
struct EnumSpellings<CleanPodPolicy> {
  static constexpr std::array<std::pair<CleanPodPolicy, std::string_view>, 3> kValues = {{
      {CleanPodPolicy::kAll, "All"},
      {CleanPodPolicy::kNone, "None"},
      {CleanPodPolicy::kRunning, "Running"},
  }};
};

// spec.successPolicy (3.6): "" (worker 0, or the chief, decides) or AllWorkers.
enum class SuccessPolicy { kDefault, kAllWorkers };
template <>
struct EnumSpellings<SuccessPolicy> {
  static constexpr std::array<std::pair<SuccessPolicy, std::string_view>, 2> kValues = {{
      {SuccessPolicy::kDefault, ""},
      {SuccessPolicy::kAllWorkers, "AllWorkers"},
  }};
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool block_owner_deletion = false;
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string ns;  // metadata.namespace
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// Whether the API server is deleting the object: it has a deletionTimestamp (it stays until its
// finalizers are gone). The decoded form of api::BeingDeleted (api/json_fields.h).
inline bool BeingDeleted(const ObjectMeta& meta) {
  return meta.deletion_timestamp.has_value();
}

struct SchedulingPolicy {
  std::optional<int32_t> min_available;
  std::string queue;
  std::map<std::string, std::string> min_resources;  // resource name -> quantity text
  std::string priority_class;
  std::optional<int32_t> schedule_timeout_seconds;
  friend bool operator==(const SchedulingPolicy&, const SchedulingPolicy&) = default;
};

struct RunPolicy {
  std::optional<WireEnum<CleanPodPolicy>> clean_pod_policy;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> backoff_limit;
  std::optional<SchedulingPolicy> scheduling_policy;
  std::optional<bool> suspend;
  std::optional<std::string> managed_by;
  friend bool operator==(const RunPolicy&, const RunPolicy&) = default;
};

struct ReplicaSpec {
  std::optional<int32_t> replicas;
  // core/v1 PodTemplateSpec, untouched except by defaulting (the tfjob-port).
  nlohmann::json pod_template = nlohmann::json::object();
  WireEnum<RestartPolicy> restart_policy;  // empty: not set
  friend bool operator==(const ReplicaSpec&, const ReplicaSpec&) = default;
};

struct TfJobSpec {
  RunPolicy run_policy;
  std::optional<WireEnum<SuccessPolicy>> success_policy;
  // Keys as written in the file (normalised by defaulting). nullopt value = `null` in the file.
  // A missing `tfReplicaSpecs` is an absent map (has_replica_specs false).
  bool has_replica_specs = false;
  std::map<std::string, std::optional<ReplicaSpec>> replica_specs;
  bool enable_dynamic_worker = false;
  // `spec.managedBy`: not a field of upstream's TFJob. Kueue's generic MultiKueue adapter (a kind
  // without a built-in integration) reads the managing controller here, so a job for MultiKueue
  // carries runPolicy.managedBy's value here too (docs/semantics.md D32). Only that value.
  std::optional<std::string> managed_by;
  friend bool operator==(const TfJobSpec&, const TfJobSpec&) = default;
};

struct JobCondition {
  std::string type;    // Created, Running, Restarting, Succeeded, Failed, Suspended
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::optional<Time> last_update_time;
  std::optional<Time> last_transition_time;
  friend bool operator==(const JobCondition&, const JobCondition&) = default;
};

struct ReplicaStatus {
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  // Our extension (docs/semantics.md D2): pod recreations and in-place restarts counted so far; never
  // decreases.
  int32_t restarts = 0;
  // Our extension (docs/semantics.md D21): pods disrupted by others (evicted, preempted, deleted
  // without the operator asking) and recreated; not counted in `restarts`; never decreases.
  int32_t disruptions = 0;
  friend bool operator==(const ReplicaStatus&, const ReplicaStatus&) = default;
};

struct JobStatus {
  std::vector<JobCondition> conditions;
  std::map<std::string, ReplicaStatus> replica_statuses;  // keyed by "Worker", "PS", ...
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::optional<Time> last_reconcile_time;
  friend bool operator==(const JobStatus&, const JobStatus&) = default;
};

struct TfJob {
  std::string api_version{kApiVersion};
  std::string kind{kKind};
  ObjectMeta metadata;
  TfJobSpec spec;
  JobStatus status;
  friend bool operator==(const TfJob&, const TfJob&) = default;
};

// Replicas of a spec after defaulting semantics (nil counts as 1).
inline int32_t ReplicasOrDefault(const ReplicaSpec& s) {
  return s.replicas.value_or(1);
}

// The one way to walk a job's replica specs. The key of tfReplicaSpecs whose spec defaulting
// keeps for `type` (docs/semantics.md 1.7): the first key in key order that names the type in
// other case ("worker", whose spec defaulting moves over "Worker"), else the canonical key;
// nullptr when no key names the type. On a defaulted job: the canonical key, or nullptr.
const std::string* ReplicaSpecKey(const TfJobSpec& spec, ReplicaType type);

struct TypedReplicaSpec {
  ReplicaType type;
  const ReplicaSpec* spec;  // never null
};
// Each replica type's spec as defaulting keeps it (ReplicaSpecKey), in the fixed order of
// kAllReplicaTypes; types without a key, or with a null spec, are left out. The same on the job
// as written and on the defaulted job.
std::vector<TypedReplicaSpec> ReplicaSpecsByType(const TfJobSpec& spec);
// The replicas of every spec of ReplicaSpecsByType.
int64_t TotalReplicas(const TfJobSpec& spec);

}  // namespace tfjob::api
