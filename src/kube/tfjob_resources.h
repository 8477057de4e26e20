#pragma once
// The API resources tfjob works with beyond the core ones of resource_path.h (pods, services,
// events, leases): TFJobs, the gang schedulers' PodGroups and Workloads, Kueue's Workloads,
// PriorityClasses. Defined once for the operator and the CLI.

#include <string>

#include "api/labels.h"
#include "api/tfjob.h"
#include "kube/resource_path.h"

namespace tfjob::kube {

inline const GroupVersionResource kTfJobs{std::string(api::kGroup), "v1", std::string(api::kPlural)};
inline const GroupVersionResource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups"};
inline const GroupVersionResource kPluginsPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups"};
inline const GroupVersionResource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses"};
// kube-scheduler's own gang scheduling (--gang-scheduler-name kubernetes, docs/semantics.md D27,
// D31): its version is discovered, operator/native_gang_api.h.
// Kueue's Workloads (`tfjob describe` of a queued job), newest version first: the version
// --kueue-mode operator speaks (api/labels.h), and v1beta1.
inline const GroupVersionResource kKueueWorkloadsV1beta2{std::string(api::kKueueGroup), std::string(api::kKueueVersion),
                                                         "workloads"};
inline const GroupVersionResource kKueueWorkloadsV1beta1{std::string(api::kKueueGroup), "v1beta1", "workloads"};
// The rest of Kueue's API that --kueue-mode operator reads (docs/kueue.md), in the version it speaks.
inline const GroupVersionResource kKueueResourceFlavors{std::string(api::kKueueGroup), std::string(api::kKueueVersion),
                                                        "resourceflavors"};
inline const GroupVersionResource kKueueWorkloadPriorityClasses{std::string(api::kKueueGroup),
                                                                std::string(api::kKueueVersion),
                                                                "workloadpriorityclasses"};

// A CustomResourceDefinition's name: "<resource>.<group>" ("tfjobs.kubeflow.org").
inline std::string CrdName(const GroupVersionResource& gvr) {
  return gvr.resource + "." + gvr.group;
}

}  // namespace tfjob::kube
