#pragma once
// What a Kueue admission does to a TFJob's pod templates, and how an eviction undoes it
// (docs/kueue.md "The operator's Workload: the contract"): each PodSet's assignment (the node
// labels and tolerations of its flavours, the kueue.x-k8s.io/podset label, the queue labels, the
// topology gate and workload annotation under topology-aware scheduling, and the admission
// checks' podSetUpdates) is merged into the template of its replica type when the job starts;
// stopping the job sets those fields back to the Workload's copy of the original templates.
// Pure: the Workload decoded (api/kueue_workload.h), the templates JSON in and out.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/kueue_workload.h"
#include "api/tfjob.h"
#include "common/status.h"
#include "tfjob/core/kueue_workload.h"

namespace tfjob::core {

// A ResourceFlavor's spec as admission uses it.
struct KueueFlavor {
  std::map<std::string, std::string> node_labels;
  nlohmann::json tolerations = nlohmann::json::array();  // core/v1 Toleration objects
};

// What is merged into (or restored onto) one PodSet's template.
struct KueuePodSetInfo {
  std::string name;  // the PodSet name: the replica type in lower case
  int32_t count = 0;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();
  nlohmann::json scheduling_gates = nlohmann::json::array();
  friend bool operator==(const KueuePodSetInfo&, const KueuePodSetInfo&) = default;
};

// The infos of an admitted Workload, in the order of status.admission.podSetAssignments: per
// assignment its flavours' node labels and tolerations (each flavour once), the count (the
// assignment's, else the PodSet's), the podset label, the queue labels (options), the topology gate
// and workload annotation when the assignment has a topologyAssignment (and the unconstrained
// annotation when the PodSet asked for no topology), then each admission check's podSetUpdate for
// it. Empty when the Workload has no assignment.
// kNotFound: a flavour is not in `flavors` (retry once it is known).
// kInvalidArgument: a podSetUpdate conflicts with what is already set (permanent).
StatusOr<std::vector<KueuePodSetInfo>> KueueAdmittedPodSets(const api::KueueWorkload& workload,
                                                            const std::map<std::string, KueueFlavor>& flavors,
                                                            const KueueOptions& options);

// The infos to restore: each of spec.podSets' templates as the Workload keeps them.
std::vector<KueuePodSetInfo> KueueOriginalPodSets(const api::KueueWorkload& workload);

// `pod_template` with `info` merged in: labels, annotations and the node selector gain the info's
// keys, tolerations and scheduling gates the entries they lack.
// kInvalidArgument when a key is set to another value already (permanent: Kueue marks the
// Workload Finished with reason FailedToStart).
StatusOr<nlohmann::json> MergePodSetInfo(nlohmann::json pod_template, const KueuePodSetInfo& info);
// `pod_template` with its labels, annotations, node selector, tolerations and scheduling gates
// set to the info's (absent when empty).
nlohmann::json RestorePodSetInfo(nlohmann::json pod_template, const KueuePodSetInfo& info);

// A change to the job: runPolicy.suspend and the replica templates that change (by spec key),
// and spec.managedBy when it is set (kueue_multikueue.h).
struct KueueJobUpdate {
  bool suspend = true;
  std::map<std::string, nlohmann::json> templates;
  std::optional<std::string> spec_managed_by;
  friend bool operator==(const KueueJobUpdate&, const KueueJobUpdate&) = default;
};
// Start: every PodSet's template merged with its info, suspend false. The infos are matched to
// replica types by PodSet name. kInvalidArgument when the infos are not one per PodSet of the job
// or MergePodSetInfo fails.
StatusOr<KueueJobUpdate> KueueStartJob(const api::TfJob& job, const std::vector<KueuePodSetInfo>& infos);
// Stop: suspend true and each template restored from its info (infos of PodSets the job lacks
// are ignored; with no infos the templates stay).
KueueJobUpdate KueueStopJob(const api::TfJob& job, const std::vector<KueuePodSetInfo>& infos);
// The JSON merge patch (RFC 7386) that turns `job` into the updated one: runPolicy.suspend and,
// per changed template, the difference (null for what goes), with metadata.resourceVersion so
// that the API server refuses it with a conflict when the job changed meanwhile.
nlohmann::json KueueJobMergePatch(const api::TfJob& job, const KueueJobUpdate& update);

}  // namespace tfjob::core
