#pragma once
// The hierarchical gang of a TFJob (docs/semantics.md D33): kube-scheduler's CompositePodGroup
// (scheduling.k8s.io/v1alpha3, Kubernetes v1.37 behind the alpha CompositePodGroup gate) over two
// PodGroups (v1beta1): the job's Chief/Master and PS pods all or nothing, its Workers with
// minAvailable's count, the Evaluator outside the gang. Used where the API server serves
// CompositePodGroups (RenderOptions::composite_pod_groups) and the job has both kinds of pods;
// any other job keeps the flat gang of D27/D31 (pod_group.h). Pure.
//
// Objects, created in this order (KEP-6089's root controller), all owned by the TFJob:
//   Workload <job>             compositePodGroupTemplates: [tfjob{leaders, workers}]
//   CompositePodGroup <job>    gang {minGroupCount: 2}, disruptionMode all
//   PodGroup <job>.leaders     parent <job>, gang {minCount: Chief+Master+PS pods}, disruptionMode all
//   PodGroup <job>.workers     parent <job>, gang {minCount: see WorkerMinCount}, disruptionMode all
// A '.' cannot occur in a TFJob's name (a DNS-1035 label), so these names never meet another
// job's groups.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "tfjob/core/render.h"

namespace tfjob::core {

// The two PodGroups under the job's CompositePodGroup.
enum class CompositeMember { kLeaders, kWorkers };
inline constexpr std::array<CompositeMember, 2> kCompositeMembers = {CompositeMember::kLeaders,
                                                                     CompositeMember::kWorkers};

// CompositePodGroups exist only in this version of scheduling.k8s.io (v1.37); the Workload and
// PodGroups stay v1beta1, whose composite fields the same gate turns on.
inline constexpr std::string_view kCompositePodGroupVersion = "v1alpha3";
// The template name of the composite (in the Workload and the CompositePodGroup's workloadRef).
inline constexpr std::string_view kCompositeTemplate = "tfjob";
// "leaders" or "workers": the member's template name, and its PodGroup's suffix.
std::string_view CompositeMemberName(CompositeMember member);
// "<job>.leaders", "<job>.workers".
std::string CompositeMemberPodGroupName(const std::string& job_name, CompositeMember member);
// The member the pods of `type` join: Chief, Master, PS -> leaders; Worker -> workers; Evaluator:
// none (outside the gang).
std::optional<CompositeMember> CompositeMemberOf(api::ReplicaType type);
// The job's name for a native gang object's name: "<job>" and "<job>.<member>" -> "<job>".
std::string JobNameOfGangObject(const std::string& object_name);

// Whether the job gets the hierarchical gang: --gang-scheduler-name kubernetes, v1beta1 with
// options.composite_pod_groups, at least one Chief/Master/PS pod and one Worker pod, and a
// minAvailable that is not 0 (0 asks for no gang: the flat basic policy).
bool UsesCompositeGang(const api::TfJob& job, const RenderOptions& options);
// The same without the gang scheduler's check (kube-scheduler's policy asks it).
bool CompositeGangFits(const api::TfJob& job, const RenderOptions& options);

// Whether this pass renders composite gangs (RenderOptions::composite_pod_groups): a job whose
// Workload exists keeps that Workload's shape (its templates cannot change, and its pods already
// name their groups); a job without one follows what the API server serves.
// `existing_workload_composite`: nullopt when the job has no Workload (else its
// api::SchedulingWorkload::composite, api/pod_group.h).
bool CompositeForJob(bool served, std::optional<bool> existing_workload_composite);

// The gang minCounts: leaders = every Chief, Master and PS pod; workers = minAvailable minus the
// leaders, at least 1 and at most the Worker pods; every Worker pod when minAvailable is unset.
int32_t LeaderMinCount(const api::TfJob& job);
int32_t WorkerMinCount(const api::TfJob& job);
int32_t CompositeMinCount(const api::TfJob& job, CompositeMember member);

// REQUIRES: UsesCompositeGang(job, options) for the results to mean anything.
nlohmann::json RenderCompositeWorkload(const api::TfJob& job);
nlohmann::json RenderCompositePodGroup(const api::TfJob& job);
nlohmann::json RenderCompositeMemberPodGroup(const api::TfJob& job, CompositeMember member);

// The pod's spec.schedulingGroup for the hierarchical gang: its member's PodGroup, or no group
// at all for the Evaluator (any group its template names is removed).
void SetCompositeSchedulingGroup(const api::TfJob& job, api::ReplicaType type, nlohmann::json* pod_spec);

}  // namespace tfjob::core
