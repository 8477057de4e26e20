#pragma once
// The phases of one reconcile pass (docs/semantics.md section 3), each a pure function from
// values to a small result. `Reconcile` (reconcile.h) runs them in the order of 3.3 and merges
// their results into the Plan; each phase has its own table tests (reconcile_phases_test.cc).
// Pods and services are passed as pointers into the ObservedState of the pass: the results never
// outlive it.

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/pod.h"
#include "api/tfjob.h"
#include "tfjob/core/reconcile.h"
#include "tfjob/core/render.h"

namespace tfjob::core {

// 3.2 step 2: another controller's job; D18: a job being deleted. The pass writes nothing.
// `multikueue_copy`: the operator proved the job is MultiKueue's copy for this cluster
// (kueue_multikueue.h, docs/semantics.md D32), so runPolicy.managedBy naming MultiKueue does not
// make it skip.
bool ShouldSkip(const api::TfJob& raw, bool multikueue_copy = false);

// The Created condition with the D22 spec warnings (once), then D13's validation.
struct Admission {
  api::JobStatus status;  // the input status with Created (and Failed when invalid)
  std::vector<RenderEvent> events;
  bool invalid = false;  // D13: the job failed validation; the pass ends here
};
// `status` is the observed status (with D29's counters).
Admission Admit(const api::TfJob& raw, api::JobStatus status, api::Time now);

// The pods and services the job controls (R14: never another owner's).
struct Children {
  std::vector<const api::Pod*> pods;
  std::map<std::string, const api::Service*> services;  // by name
};
Children ClassifyChildren(const api::TfJob& job, const std::vector<api::Pod>& pods,
                          const std::vector<api::Service>& services);

// One replica type of the spec with its pods sliced by index.
struct TypeState {
  api::ReplicaType type;
  const api::ReplicaSpec* spec;
  std::vector<std::vector<const api::Pod*>> slices;
};
struct Replicas {
  std::vector<TypeState> types;  // in the fixed order of kAllReplicaTypes
  int64_t recreations = 0;       // restarts counted so far (status), every type
  int64_t in_place = 0;          // container restarts of the running pods
};
// REQUIRES: `job` is defaulted.
Replicas SliceReplicas(const api::TfJob& job, const std::vector<const api::Pod*>& pods, const api::JobStatus& status);

// D21: a disruption counted against a replica type.
struct CountedDisruption {
  api::ReplicaType type;
  PodDisruption disruption;
  friend bool operator==(const CountedDisruption&, const CountedDisruption&) = default;
};
// The noted disruptions that count: those of a type and index the spec still has (a noted pod
// of an index the spec no longer has is a scale-down, not a disruption).
std::vector<CountedDisruption> CountNotedDisruptions(const std::vector<PodDisruption>& noted,
                                                     const std::vector<TypeState>& types);
// The Warning recording a disruption of a pod of namespace `ns`.
RenderEvent DisruptionEvent(const std::string& ns, const PodDisruption& d);

// Restart decisions over the Failed pods (3.4 c with D2, D6, D21).
struct TypeFailures {
  int32_t restartable = 0;  // failed pods the policy restarts
  int32_t permanent = 0;    // failed pods of policy Never
  friend bool operator==(const TypeFailures&, const TypeFailures&) = default;
};
struct RestartDecisions {
  std::vector<CountedDisruption> disrupted;  // Failed by a disruption: deleted and recreated
  std::vector<const api::Pod*> to_restart;   // deleted; the next pass recreates them
  std::vector<std::pair<api::ReplicaType, const api::Pod*>> exit_code_failures;  // ExitCode, code < 128
  std::map<api::ReplicaType, TypeFailures> failures;
};
RestartDecisions DecideRestarts(const std::vector<TypeState>& types);

// An ended pod whose deletion stalled: deleting a Failed or Succeeded pod is two writes on the
// API server (the deletionTimestamp, then the removal), and a request whose client goes away in
// between (an operator killed mid-delete) stops after the first. A kubelet would remove such a
// pod; the operator deletes it again once kStalledDeletionAfter has passed since its
// deletionTimestamp, and asks to look again when the next one is due.
inline constexpr std::chrono::seconds kStalledDeletionAfter{5};
struct StalledDeletions {
  std::vector<ChildDeletion> delete_pods;
  std::optional<std::chrono::nanoseconds> requeue_after;
};
// `pods`: the job's (ClassifyChildren), whatever their type and index.
StalledDeletions FinishStalledDeletions(const std::vector<const api::Pod*>& pods, api::Time now);

// backoffLimit (3.8) and activeDeadlineSeconds (D3).
struct LimitCheck {
  std::string failure;                                    // the Failed message, "" when no limit is reached
  std::optional<std::chrono::nanoseconds> requeue_after;  // the deadline's due time
};
LimitCheck CheckLimits(const api::TfJob& job, const Replicas& replicas, size_t restarts,
                       std::optional<api::Time> start_time, api::Time now);

// The Failed message of the first ExitCode failure (3.4 c), "" when none.
std::string ExitCodeFailure(const api::TfJob& job, const RestartDecisions& decisions);

// The PodGroup and Workload to create or update (2.8, D27).
struct GangPlan {
  std::optional<nlohmann::json> create_pod_group;
  std::optional<nlohmann::json> update_pod_group;
  std::optional<nlohmann::json> create_workload;
  CompositeGangPlan composite;  // D33: its creates and updates
  bool wait = false;            // volcano: no pods or services until the PodGroup is past Pending
};
GangPlan PlanGang(const api::TfJob& job, const ReconcileOptions& options, const ObservedState& observed);

// Creates and scale-down deletes (3.4, 3.5), with the events of rendering and of abnormal pods.
struct ChildrenPlan {
  std::vector<ChildCreation> create_pods;
  std::vector<ChildDeletion> delete_pods;
  std::vector<ChildCreation> create_services;
  std::vector<ChildDeletion> delete_services;
  std::vector<RenderEvent> events;
};
// `deleting`: the pods the pass already deletes. `wait`: GangPlan::wait. Nothing is rendered: the
// events rendering the pods would record are (PodTemplateEvents), and a service is planned only
// where RenderService will render one (HasService).
ChildrenPlan PlanChildren(const api::TfJob& job, const std::vector<TypeState>& types, const Children& children,
                          const std::set<std::string>& deleting, bool wait, const RenderOptions& options);

// The Warnings of a pod that is not finished but in trouble (a container that exited non-zero or
// waits with a message; else the latest condition that is not True).
std::vector<RenderEvent> AbnormalPodEvents(const api::Pod& pod);

// 3.6 with D5 and D6: the replica statuses counted from the pods and what they mean for the job.
struct Outcome {
  std::map<std::string, api::ReplicaStatus> replica_statuses;  // every type of `types`
  bool succeeded = false;
  bool running = false;
  std::string failure;  // a permanent failure (before the ExitCode one), "" if none
};
// `status`: restarts and disruptions so far; `pods`: every pod the job controls.
Outcome ComputeOutcome(const api::TfJob& job, const std::vector<TypeState>& types,
                       const std::map<api::ReplicaType, TypeFailures>& failures, const api::JobStatus& status,
                       const std::vector<const api::Pod*>& pods);

// cleanPodPolicy (3.11, D4): a finished job keeps what the policy keeps; anything else
// (suspend) deletes everything. With gang scheduling, the PodGroup (and Workload) go too.
struct CleanUpPlan {
  std::vector<ChildDeletion> delete_pods;
  std::vector<ChildDeletion> delete_services;
  bool delete_pod_group = false;
  bool delete_workload = false;
  CompositeGangPlan composite;  // D33: its deletes
  std::vector<RenderEvent> events;
};
CleanUpPlan CleanUp(const api::TfJob& job, const Children& children, const ReconcileOptions& options,
                    const ObservedState& observed, bool finished);
// Its gang part: the PodGroup, the Workload, D33's members and CompositePodGroup that exist.
void CleanUpGang(const ReconcileOptions& options, const ObservedState& observed, bool finished, CleanUpPlan& out);

// D28: the replica statuses a job finishes with, counted as its pods are in the terminal pass.
// `status` has the terminal condition and the counters so far; `deleting` the pods the pass deletes.
std::map<std::string, api::ReplicaStatus> TerminalCounts(const api::JobStatus& status,
                                                         const std::vector<TypeState>& types,
                                                         const std::vector<ChildDeletion>& deleting);

// D28: one Normal ExitedWithCode for every pod whose tensorflow container terminated, except
// those already in `events`.
std::vector<RenderEvent> ExitEvents(const api::TfJob& job, const std::vector<TypeState>& types,
                                    const std::vector<RenderEvent>& events);
// "Pod: <ns>.<pod> exited with code <code>".
std::string ExitedMessage(const api::TfJob& job, const api::Pod& pod, int32_t code);

// ttlSecondsAfterFinished (3.10): delete the job when due, else look again then.
struct TtlDecision {
  bool delete_job = false;
  std::optional<std::chrono::nanoseconds> requeue_after;
};
TtlDecision DecideTtl(const api::TfJob& job, const api::JobStatus& status, api::Time now);

// D29: the status as observed, with restarts and disruptions raised to kCountersAnnotation's.
api::JobStatus WithCountersAnnotation(const api::TfJob& job);
// D29: kCountersAnnotation for `status`: the non-zero counters, keys sorted; "" when none.
std::string CountersAnnotation(const api::JobStatus& status);

// Whether a pass that moves the status from `observed` to `planned` (nullopt: unchanged) ends the
// job: the planned status is Succeeded or Failed and the observed one was neither
// (Plan::ends_job).
bool EndsJob(const api::JobStatus& observed, const std::optional<api::JobStatus>& planned);

// `events` without repeats, first occurrence kept (a warning rendered for every pod of a type).
std::vector<RenderEvent> UniqueEvents(std::vector<RenderEvent> events);

}  // namespace tfjob::core
