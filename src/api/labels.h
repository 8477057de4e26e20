#pragma once
// The training.kubeflow.org/* labels of the pods and services the operator creates (the wire
// contract with upstream's controller and its users, docs/semantics.md 2.2): written by the
// core's naming (tfjob/core/naming.h), read back by the pod decoder (api/pod_json.h).

#include <string_view>

namespace tfjob::api {

inline constexpr std::string_view kLabelOperatorName = "training.kubeflow.org/operator-name";
inline constexpr std::string_view kLabelJobName = "training.kubeflow.org/job-name";
inline constexpr std::string_view kLabelReplicaType = "training.kubeflow.org/replica-type";
inline constexpr std::string_view kLabelReplicaIndex = "training.kubeflow.org/replica-index";
inline constexpr std::string_view kLabelJobRole = "training.kubeflow.org/job-role";
// Kueue's queue of a job (set by its user; read by `tfjob describe`, `get -o wide`, `resume`).
inline constexpr std::string_view kLabelKueueQueueName = "kueue.x-k8s.io/queue-name";

}  // namespace tfjob::api
