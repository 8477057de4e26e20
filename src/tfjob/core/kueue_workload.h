#pragma once
// The operator's own Kueue Workload (kueue.x-k8s.io/v1beta2) for a TFJob: its deterministic
// name, its priority and the object itself, built exactly as Kueue's built-in kubeflow.org/tfjob
// integration (Kueue v0.17's jobframework) builds it, so that Kueue's scheduler sees the same
// Workload whichever of the two made it, and so that both, if both are on, collide on one name
// instead of reserving quota twice. docs/kueue.md "The operator's Workload: the contract" lists
// each rule with the Kueue source it comes from. Pure: values in, JSON out.
//
// Admission (what Kueue's assignment does to the job's templates) is kueue_admission.h; the state
// machine (job x Workload -> the next step) is kueue_sync.h.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/kueue_workload.h"
#include "api/labels.h"
#include "api/tfjob.h"
#include "common/status.h"

namespace tfjob::core {

// Wire names of Kueue's API (docs/kueue.md); its group, version and queue-name label are the
// API's (api/labels.h).
using api::kKueueApiVersion;
using api::kKueueGroup;
using api::kLabelKueueQueueName;
inline constexpr std::string_view kKueuePriorityClassLabel = "kueue.x-k8s.io/priority-class";
inline constexpr std::string_view kKueueMaxExecTimeLabel = "kueue.x-k8s.io/max-exec-time-seconds";
inline constexpr std::string_view kKueuePrebuiltWorkloadLabel = "kueue.x-k8s.io/prebuilt-workload-name";
inline constexpr std::string_view kKueueJobUidLabel = "kueue.x-k8s.io/job-uid";
inline constexpr std::string_view kKueuePodSetLabel = "kueue.x-k8s.io/podset";
inline constexpr std::string_view kKueueLocalQueueLabel = "kueue.x-k8s.io/local-queue-name";
inline constexpr std::string_view kKueueClusterQueueLabel = "kueue.x-k8s.io/cluster-queue-name";
inline constexpr std::string_view kKueueWorkloadAnnotation = "kueue.x-k8s.io/workload";
inline constexpr std::string_view kKueueTopologyGate = "kueue.x-k8s.io/topology";
inline constexpr std::string_view kKueueResourceInUseFinalizer = "kueue.x-k8s.io/resource-in-use";
inline constexpr std::string_view kKueueProvReqAnnotationPrefix = "provreq.kueue.x-k8s.io/";
// The pod-template annotations of topology-aware scheduling.
inline constexpr std::string_view kKueueRequiredTopology = "kueue.x-k8s.io/podset-required-topology";
inline constexpr std::string_view kKueuePreferredTopology = "kueue.x-k8s.io/podset-preferred-topology";
inline constexpr std::string_view kKueueUnconstrainedTopology = "kueue.x-k8s.io/podset-unconstrained-topology";
inline constexpr std::string_view kKueueSliceRequiredTopology = "kueue.x-k8s.io/podset-slice-required-topology";
inline constexpr std::string_view kKueueSliceSize = "kueue.x-k8s.io/podset-slice-size";
inline constexpr std::string_view kKueuePodSetGroupName = "kueue.x-k8s.io/podset-group-name";

// Kueue's longest Workload name, and the one under its ShortWorkloadNames feature gate (off by
// default in v0.17).
inline constexpr size_t kKueueWorkloadNameMax = 253;
inline constexpr size_t kKueueShortWorkloadNameMax = 63;

// What Kueue's configuration decides and the operator must be told (docs/kueue.md).
struct KueueOptions {
  // kKueueShortWorkloadNameMax when Kueue runs with ShortWorkloadNames.
  size_t max_name_length = kKueueWorkloadNameMax;
  // Kueue's TopologyAwareScheduling gate (on by default since v0.14): every PodSet gets a
  // topologyRequest with the replica-index label, and admission adds the topology gate.
  bool topology_aware_scheduling = true;
  // Kueue's AssignQueueLabelsForPods gate (on by default in v0.17): admitted templates get the
  // local and cluster queue labels.
  bool assign_queue_labels = true;
  // Kueue's integrations.labelKeysToCopy: job labels copied to the Workload.
  std::vector<std::string> label_keys_to_copy;
  // Kueue's waitForPodsReady is on: the job controller keeps the PodsReady condition.
  bool wait_for_pods_ready = false;
};

// "<lower-case kind>-<owner name>" cut to max_length - 6, then "-" and the first 5 hex digits of
// SHA-1("<kind>\n<group>\n<owner name>\n<owner uid>").
std::string KueueWorkloadName(std::string_view kind, std::string_view group, std::string_view owner_name,
                              std::string_view owner_uid, size_t max_length = kKueueWorkloadNameMax);
// The name for a TFJob: kind TFJob, group kubeflow.org.
std::string KueueWorkloadNameForJob(const api::TfJob& job, size_t max_length = kKueueWorkloadNameMax);

// The job's kueue.x-k8s.io/queue-name label; "" when it has none (Kueue leaves such a job alone).
std::string KueueQueueName(const api::TfJob& job);
// The max-exec-time label as a positive int32; nullopt when absent, not a number or not positive.
std::optional<int32_t> KueueMaxExecutionTimeSeconds(const api::TfJob& job);
// The prebuilt-workload-name label when the job has it (even empty).
std::optional<std::string> KueuePrebuiltWorkloadName(const api::TfJob& job);
// The value of the job's label `key`, or null when it has none.
const std::string* JobLabel(const api::TfJob& job, std::string_view key);

// The replica types of the job in Kueue's PodSet order: Chief, Master, PS, Worker, Evaluator,
// those the job has. The PodSet of a type is named by the type in lower case.
std::vector<api::ReplicaType> KueuePodSetOrder(const api::TfJob& job);
std::string KueuePodSetName(api::ReplicaType type);

// The priority classes of the cluster that Kueue would look up.
struct KueuePriorityClasses {
  std::map<std::string, int32_t> priority_classes;           // scheduling.k8s.io PriorityClass -> value
  std::map<std::string, int32_t> workload_priority_classes;  // kueue.x-k8s.io WorkloadPriorityClass -> value
  // The globalDefault PriorityClass with the lowest value, if any: (name, value).
  std::optional<std::pair<std::string, int32_t>> global_default;
};
struct KueuePriority {
  // "" (no class), "PriorityClass" or "WorkloadPriorityClass".
  std::string kind;
  std::string name;
  int32_t value = 0;
  friend bool operator==(const KueuePriority&, const KueuePriority&) = default;
};
// The Workload's priority: the WorkloadPriorityClass of the priority-class label; else the
// PriorityClass of runPolicy.schedulingPolicy.priorityClass; else that of the first template (in
// PodSet order) naming one; else the global default; else none with 0.
// kNotFound when the class named is missing (Kueue retries; the Workload is not created).
StatusOr<KueuePriority> KueueWorkloadPriority(const api::TfJob& job, const KueuePriorityClasses& classes);
// spec.priorityClassRef (null when none) and spec.priority as Kueue writes them.
nlohmann::json KueuePriorityClassRef(const KueuePriority& priority);

// spec.podSets: one PodSet per replica type in KueuePodSetOrder: name, count (replicas, 1 when
// unset), the template as written on the job with duplicate env entries reduced to the last one
// of each name, and with topology-aware scheduling a topologyRequest from the template's
// annotations with podIndexLabel training.kubeflow.org/replica-index.
// kInvalidArgument when a topology annotation does not parse (Kueue's webhook refuses such a job).
StatusOr<nlohmann::json> KueuePodSets(const api::TfJob& job, const KueueOptions& options);

// The whole Workload Kueue would create for the job: name, namespace, copied labels, the job-uid
// label, Kueue's resource-in-use finalizer, the job's provreq.kueue.x-k8s.io/ annotations, the
// controller owner reference, spec.queueName, podSets, priority and maximumExecutionTimeSeconds.
// Errors as KueuePodSets.
StatusOr<nlohmann::json> RenderKueueWorkload(const api::TfJob& job, const KueuePriority& priority,
                                             const KueueOptions& options);

// Whether an existing Workload still describes the job (Kueue's equivalence): owned by the job's
// name, the same maximumExecutionTimeSeconds, and PodSets of the same names and counts whose
// containers and init containers are equal, and tolerations too unless the Workload is admitted
// (admission adds some). `pod_sets` is KueuePodSets of the job.
bool KueueWorkloadMatchesJob(const api::TfJob& job, const nlohmann::json& pod_sets, const api::KueueWorkload& workload);

}  // namespace tfjob::core
