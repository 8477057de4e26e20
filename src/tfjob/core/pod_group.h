#pragma once
// PodGroup rendering for gang scheduling (docs/semantics.md 2.8): Volcano
// (scheduling.volcano.sh/v1beta1) or scheduler-plugins (scheduling.x-k8s.io/v1alpha1),
// including minMember and the computed minResources with priority-class ordering; and
// kube-scheduler's own gang scheduling (scheduling.k8s.io Workload and PodGroup, v1alpha2 or
// v1beta1: D27, D31).

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "tfjob/core/render.h"

namespace tfjob::core {

// minAvailable if set, else the sum of replicas.
int32_t PodGroupMinMember(const api::TfJob& job);

// Requests (or limits where a container has no requests) of the first minMember pods, replica
// types ordered by the value of their template's priorityClassName (descending; equal values in
// key order, where upstream's order is undefined).
std::map<std::string, std::string> ComputeMinResources(const api::TfJob& job,
                                                       const std::map<std::string, int32_t>& priority_class_values);

// The PriorityClasses every cluster has (kube-apiserver creates them at start): name -> value.
// `tfjob render`, which has no cluster, orders a computed minResources with these, as the
// operator does with the classes it lists (docs/semantics.md 2.8).
const std::map<std::string, int32_t>& BuiltinPriorityClasses();

// The gang scheduler's group objects (gang_scheduler.h: the policy of GangSchedulerFor renders them).
// nullopt when gang scheduling is off. `existing_queue` is the queue of a PodGroup that
// already exists: Volcano keeps it when not empty, over schedulingPolicy.queue (docs/semantics.md
// 2.8). `priority_class_values`: PriorityClass name -> value, for computing minResources (classes
// not in the map count 0; `tfjob render` has no cluster and passes BuiltinPriorityClasses).
std::optional<nlohmann::json> RenderPodGroup(const api::TfJob& job, const RenderOptions& options,
                                             const std::string& existing_queue = "",
                                             const std::map<std::string, int32_t>& priority_class_values = {});

// Kubernetes-native gang scheduling (--gang-scheduler-name kubernetes, docs/semantics.md D27,
// D31): one Workload per job with one PodGroupTemplate, and one PodGroup made from that template;
// both are named after the job and owned by it. Every pod names the PodGroup in
// spec.schedulingGroup.podGroupName. The gang's minCount is PodGroupMinMember (a minAvailable of 0
// gives the basic policy: no gang). The shape follows options.native_gang_api: v1alpha2 refers to
// the template by podGroupTemplateRef.workload; v1beta1 by workloadRef, and a gang there is
// disrupted as a whole (disruptionMode all).
inline constexpr std::string_view kNativeSchedulingGroup = "scheduling.k8s.io";
inline constexpr std::string_view kNativePodGroupTemplate = "tfjob";

// "v1alpha2" or "v1beta1".
std::string_view NativeGangApiVersion(NativeGangApi api);
// "scheduling.k8s.io/<version>".
std::string NativeGangApiGroupVersion(NativeGangApi api);

// nullopt unless the gang scheduler is kube-scheduler's own (`kubernetes`). With UsesCompositeGang: the composite
// Workload of D33 (composite_gang.h), and RenderPodGroup returns nullopt (the job's PodGroups are
// the composite's members).
std::optional<nlohmann::json> RenderWorkload(const api::TfJob& job, const RenderOptions& options);
// The flat Workload (one PodGroupTemplate) of `api` (RenderWorkload without D33).
nlohmann::json RenderNativeWorkload(const api::TfJob& job, NativeGangApi api);
// The PodGroup of RenderWorkload's template (RenderPodGroup returns it for kube-scheduler's gang).
nlohmann::json RenderNativePodGroup(const api::TfJob& job, NativeGangApi api);
// The gang minCount of a rendered native PodGroup's (or template's) spec; nullopt for the basic
// policy (api::GangMinCountOf: an observed PodGroup has it decoded, PodGroupState::gang_min_count).
std::optional<int64_t> NativeGangMinCount(const nlohmann::json& spec);
// Points a pod spec at the job's PodGroup (spec.schedulingGroup.podGroupName), replacing any group
// the template names. The field is the same in both versions.
void SetNativeSchedulingGroup(const api::TfJob& job, nlohmann::json* pod_spec);

}  // namespace tfjob::core
