#pragma once
// PodGroup rendering for gang scheduling (docs/semantics.md 2.8): Volcano
// (scheduling.volcano.sh/v1beta1) or scheduler-plugins (scheduling.x-k8s.io/v1alpha1),
// including minMember and the computed minResources with priority-class ordering.

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "tfjob/core/render.h"

namespace tfjob::tfjob::core {

// minAvailable if set, else the sum of replicas.
int32_t PodGroupMinMember(const api::TfJob& job);

// Requests (or limits where a container has no requests) of the first minMember pods, replica
// types ordered by the value of their template's priorityClassName (descending; equal values in
// key order, where upstream's order is undefined).
std::map<std::string, std::string> ComputeMinResources(const api::TfJob& job,
                                                       const std::map<std::string, int32_t>& priority_class_values);

// nullopt when gang scheduling is off. `existing_queue` is the queue of a PodGroup that
// already exists: Volcano keeps it when not empty, over schedulingPolicy.queue (docs/semantics.md
// 2.8). `priority_class_values`: PriorityClass name -> value, for computing minResources (classes
// not in the map count 0; `tfjob render` has no cluster and passes none).
std::optional<nlohmann::json> RenderPodGroup(const api::TfJob& job, const RenderOptions& options,
                                             const std::string& existing_queue = "",
                                             const std::map<std::string, int32_t>& priority_class_values = {});

}  // namespace tfjob::tfjob::core
