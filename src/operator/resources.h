#pragma once
// The API resources the TFJob controller works with beyond the core ones (pods, services,
// events, leases), kept out of the generic client layer.

#include <string>

#include "api/tfjob.h"
#include "kube/resource_path.h"

namespace tfjob::operator_ {

inline const kube::GroupVersionResource kTfJobs{std::string(api::kGroup), "v1", std::string(api::kPlural)};
inline const kube::GroupVersionResource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups"};
inline const kube::GroupVersionResource kPluginsPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups"};
inline const kube::GroupVersionResource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses"};
// kube-scheduler's own gang scheduling (--gang-scheduler-name kubernetes, docs/semantics.md D27):
// its version is discovered, see operator/native_gang_api.h (NativeWorkloads, NativePodGroups).

// A CustomResourceDefinition's name: "<resource>.<group>" ("tfjobs.kubeflow.org").
inline std::string CrdName(const kube::GroupVersionResource& gvr) {
  return gvr.resource + "." + gvr.group;
}

}  // namespace tfjob::operator_
