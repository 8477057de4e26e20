#pragma once
// Reconcile: the TFJob controller's whole decision as a pure function. Given the job, the pods
// and services it controls, its PodGroup and the time, it returns a Plan: what to create and
// delete, the new status (only if it changed), events, a job deletion (TTL) and when to look
// again. Implements docs/semantics.md section 3 with the decisions of section 6 (D2-D11, D13,
// D18, D21, D28). No I/O, no clock, no logging (style.md section 3): table tests drive it.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/pod.h"
#include "api/tfjob.h"
#include "tfjob/core/render.h"

namespace tfjob::core {

// The job's PodGroup as observed (decoded by api::DecodePodGroup, api/pod_group.h).
struct PodGroupState {
  std::string phase;  // status.phase ("" while the scheduler has not looked at it)
  std::string queue;  // spec.queue
  nlohmann::json spec;
  // The whole spec above is compared whole with the rendered one, never walked; the gang's
  // minCount (spec.schedulingPolicy.gang.minCount of scheduling.k8s.io) comes decoded.
  std::optional<int64_t> gang_min_count;
};

// D33: the hierarchical gang's writes beyond the Workload (composite_gang.h). Applied after the
// Workload: the CompositePodGroup before the PodGroups that name it; deleted in reverse.
struct CompositeGangPlan {
  std::optional<nlohmann::json> create_composite;  // the CompositePodGroup <job>
  std::vector<nlohmann::json> create_members;      // PodGroups, in kCompositeMembers order
  std::vector<nlohmann::json> update_members;      // a changed gang minCount (whole objects)
  std::vector<std::string> delete_members;         // PodGroup names
  bool delete_composite = false;
  friend bool operator==(const CompositeGangPlan&, const CompositeGangPlan&) = default;
};

// A pod of the job that someone other than the operator started deleting, or deleted outright
// (docs/semantics.md D21): drained, evicted, preempted, or `kubectl delete`d. The controller notes
// it from the pod's watch events (a deletionTimestamp, or a delete, it did not ask for).
struct PodDisruption {
  std::string pod;
  std::string uid;
  std::optional<api::ReplicaType> replica_type;  // the pod's replica-type label
  int32_t index = -1;                            // its replica-index label
  std::string reason;                            // its DisruptionTarget reason, else kDeletedExternally
  std::string message;                           // that condition's message ("" if none)
  friend bool operator==(const PodDisruption&, const PodDisruption&) = default;
};
// The disruption reason of a pod deleted by someone else without a DisruptionTarget condition.
inline constexpr std::string_view kDeletedExternally = "DeletedExternally";
// D21: what the deletion of `pod` (as last seen before it, by a process that did not ask for it)
// notes: a disruption with the pod's DisruptionTarget reason (kDeletedExternally without one), or
// nullopt for a pod that had ended (Succeeded or Failed) without a DisruptionTarget: its deletion
// takes nothing away, and an earlier operator process may have deleted it to restart it.
std::optional<PodDisruption> DeletionDisruption(const api::Pod& pod);

struct ObservedState {
  api::TfJob job;                      // as cached (not defaulted)
  std::vector<api::Pod> pods;          // pods labelled for the job (the core keeps only those it controls)
  std::vector<api::Service> services;  // services labelled for the job
  std::optional<PodGroupState> pod_group;
  api::Time now;
  // PriorityClass name -> value, for the classes the job's templates name that exist (2.8:
  // they order the replica types in a computed minResources). Filled only with gang scheduling.
  std::map<std::string, int32_t> priority_classes;
  // The job's scheduling.k8s.io Workload exists (--gang-scheduler-name kubernetes only, D27).
  bool workload_exists = false;
  // D33, the hierarchical gang (with options.render.composite_pod_groups): the CompositePodGroup
  // <job> exists, and the member PodGroups found, by name (composite_gang.h; one being deleted
  // counts as gone, as the flat PodGroup of D27).
  bool composite_pod_group_exists = false;
  std::map<std::string, PodGroupState> member_pod_groups;
  std::vector<PodDisruption> disruptions;  // noted since the last pass (D21); each is counted once
  // The operator's Kueue mode proved the job is MultiKueue's copy for this cluster (D32): run it
  // although runPolicy.managedBy names MultiKueue.
  bool multikueue_copy = false;
};

// D29: the annotation on the TFJob that keeps the restart and disruption counts when the
// installed CRD's status schema prunes them: {"<Rt>":{"disruptions":M,"restarts":N}}. The core
// always reads the larger of it and the status, so a count survives either way.
inline constexpr std::string_view kCountersAnnotation = "tfjob.kubeflow.org/replica-counters";

struct ReconcileOptions {
  RenderOptions render;
  // D29: the status schema prunes restarts/disruptions: keep them in kCountersAnnotation too.
  bool counters_in_annotation = false;
};

// A child to create: the pod, or the service, of one replica. The core says which; the one that
// applies the plan renders it with a PodRenderer over the job and the same RenderOptions (the
// operator's PlanApplier as it sends it, `tfjob run`'s runner once per replica up front).
struct ChildCreation {
  std::string name;  // ReplicaName(job, type, index)
  api::ReplicaType type = api::ReplicaType::kWorker;
  int32_t index = 0;
  friend bool operator==(const ChildCreation&, const ChildCreation&) = default;
};

struct ChildDeletion {
  std::string name;
  std::string uid;  // precondition, so a recreated namesake is never deleted by mistake
  friend bool operator==(const ChildDeletion&, const ChildDeletion&) = default;
};

// Job counters for the upstream metrics (training_operator_jobs_*_total).
struct CounterDeltas {
  int successful = 0;
  int failed = 0;
  int restarted = 0;
  friend bool operator==(const CounterDeltas&, const CounterDeltas&) = default;
};

struct Plan {
  bool skip = false;                       // managedBy another controller, or being deleted: write nothing
  std::vector<ChildCreation> create_pods;  // replica types in spec order, indices ascending
  std::vector<ChildDeletion> delete_pods;
  std::vector<ChildCreation> create_services;  // only of replicas HasService names
  std::vector<ChildDeletion> delete_services;
  std::optional<nlohmann::json> create_pod_group;
  std::optional<nlohmann::json> update_pod_group;  // full object with the new spec
  bool delete_pod_group = false;
  // --gang-scheduler-name kubernetes (D27): the Workload, created before the PodGroup and deleted
  // with it. That PodGroup's spec is immutable: update_pod_group stays empty.
  std::optional<nlohmann::json> create_workload;
  bool delete_workload = false;
  // D33: with the hierarchical gang, its CompositePodGroup and PodGroups (create_pod_group and
  // update_pod_group stay empty then).
  CompositeGangPlan composite;
  std::vector<RenderEvent> events;
  std::optional<api::JobStatus> status;  // set only when it differs from the observed status
  // The status adds Succeeded or Failed (this pass ends the job): it is written before the pod
  // and service deletes (docs/semantics.md 3.11). A process killed between its clean-up and its
  // status write would leave a job not yet finished: with cleanPodPolicy All, without the pods
  // that ended it (the next process would run it again), and with deletions of running pods that
  // the next process did not ask for (disruptions to it, D21).
  bool ends_job = false;
  bool delete_job = false;  // ttlSecondsAfterFinished passed
  std::optional<std::chrono::nanoseconds> requeue_after;
  CounterDeltas counters;
  // The disruptions this pass counted (D21), for tfjob_pod_disruptions_total: the noted ones and
  // the pods found Failed by a disruption (deleted here to be recreated).
  std::vector<PodDisruption> disruptions;
  // D29 (counters_in_annotation): the new value of kCountersAnnotation, to be written before
  // anything else of the plan (a count must be kept before the pod it counts is deleted).
  std::optional<std::string> counters_annotation;
  friend bool operator==(const Plan&, const Plan&) = default;
};

Plan Reconcile(const ObservedState& observed, const ReconcileOptions& options);

// D30: how long the plan's status waits before it is written. A status that differs from the
// cached one (`cached`: what the job's last write left) only in replica `active` counts
// (OnlyActiveCountsDiffer), planned less than `interval` after the job's last status write
// (`since_last_write`; nullopt: none remembered), waits for the rest of the interval. nullopt:
// written now (no status, another change, a zero interval, or the interval has passed).
std::optional<std::chrono::nanoseconds> CountOnlyStatusWait(const api::JobStatus& cached, const Plan& plan,
                                                            std::optional<std::chrono::nanoseconds> since_last_write,
                                                            std::chrono::nanoseconds interval);
// The plan without its status write, looking again after `wait` at the latest.
void HoldStatus(Plan& plan, std::chrono::nanoseconds wait);

// When the clock alone next asks for a pass of `job` (as cached): its activeDeadlineSeconds while
// it runs (D3), its ttlSecondsAfterFinished once finished; zero when one is due now, nullopt when
// neither applies (suspended, no start or completion time, no limit, or beyond year 2262). While
// expectations hold a job's passes back (D1), the controller looks again at this time and lets a
// due pass run: a deadline or a TTL that falls in the wait is not lost.
std::optional<std::chrono::nanoseconds> TimeUntilDue(const api::TfJob& job, api::Time now);

// Message constants (exact strings, docs/semantics.md 1.6).
std::string RunningMessage(const api::TfJob& job);
std::string SucceededMessage(const api::TfJob& job);

}  // namespace tfjob::core
