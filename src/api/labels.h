#pragma once
// The training.kubeflow.org/* labels of the pods and services the operator creates (the wire
// contract with upstream's controller and its users, docs/semantics.md 2.2): written by the
// core's naming (tfjob/core/naming.h), read back by the pod decoder (api/pod_json.h). And
// Kueue's names that more than one layer uses (docs/kueue.md): the queue-name label, the API
// group and the version the operator speaks (kube/tfjob_resources.h builds Kueue's resources
// from them; the core writes the Workload's apiVersion).

#include <string_view>

namespace tfjob::api {

inline constexpr std::string_view kLabelOperatorName = "training.kubeflow.org/operator-name";
inline constexpr std::string_view kLabelJobName = "training.kubeflow.org/job-name";
inline constexpr std::string_view kLabelReplicaType = "training.kubeflow.org/replica-type";
inline constexpr std::string_view kLabelReplicaIndex = "training.kubeflow.org/replica-index";
inline constexpr std::string_view kLabelJobRole = "training.kubeflow.org/job-role";
// Kueue's queue of a job (set by its user; read by `tfjob describe`, `get -o wide`, `resume`).
inline constexpr std::string_view kLabelKueueQueueName = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kKueueGroup = "kueue.x-k8s.io";
inline constexpr std::string_view kKueueVersion = "v1beta2";
inline constexpr std::string_view kKueueApiVersion = "kueue.x-k8s.io/v1beta2";
static_assert(kKueueApiVersion.size() == kKueueGroup.size() + 1 + kKueueVersion.size() &&
              kKueueApiVersion.starts_with(kKueueGroup) && kKueueApiVersion.ends_with(kKueueVersion));

}  // namespace tfjob::api
