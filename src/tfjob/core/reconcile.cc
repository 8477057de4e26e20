#include "tfjob/core/reconcile.h"

#include <algorithm>
#include <set>

#include "api/defaults.h"
#include "api/object_key.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/reconcile_phases.h"
#include "tfjob/core/replica_pods.h"

namespace tfjob::core {
namespace {

constexpr api::EventType kNormal = api::EventType::kNormal;
constexpr api::EventType kWarning = api::EventType::kWarning;

// What one pass builds: the phases' results merged into the status and the plan, in the order of
// docs/semantics.md 3.3 (events keep that order).
struct Pass {
  const ObservedState& observed;
  const ReconcileOptions& options;
  const api::TfJob& job;  // defaulted
  Children children;
  api::JobStatus status;  // being computed
  Plan plan;

  void Event(api::EventType type, std::string reason, std::string message) {
    plan.events.push_back({type, std::move(reason), std::move(message)});
  }
  void Events(std::vector<RenderEvent> events) {
    for (auto& e : events) plan.events.push_back(std::move(e));
  }
  void Condition(std::string_view type, std::string_view st, std::string_view reason, std::string_view message) {
    SetCondition(status, type, st, reason, message, observed.now);
  }
  void Finish(std::string_view condition, std::string_view reason, std::string_view message) {
    if (!status.completion_time) status.completion_time = observed.now;
    Condition(condition, "True", reason, message);
  }
};

void Append(std::vector<ChildDeletion>& to, std::vector<ChildDeletion> from) {
  for (auto& d : from) to.push_back(std::move(d));
}

void ApplyCleanUp(Pass& p, bool finished) {
  CleanUpPlan c = CleanUp(p.job, p.children, p.options, p.observed, finished);
  Append(p.plan.delete_pods, std::move(c.delete_pods));
  Append(p.plan.delete_services, std::move(c.delete_services));
  p.plan.delete_pod_group = p.plan.delete_pod_group || c.delete_pod_group;
  p.plan.delete_workload = p.plan.delete_workload || c.delete_workload;
  p.plan.composite.delete_members = std::move(c.composite.delete_members);
  p.plan.composite.delete_composite = p.plan.composite.delete_composite || c.composite.delete_composite;
  p.Events(std::move(c.events));
}

void ApplyTtl(Pass& p) {
  TtlDecision ttl = DecideTtl(p.job, p.status, p.observed.now);
  if (ttl.delete_job) p.plan.delete_job = true;
  if (ttl.requeue_after) p.plan.requeue_after = ttl.requeue_after;
}

void RecordDisruption(Pass& p, const CountedDisruption& c) {
  p.status.replica_statuses[std::string(api::ReplicaTypeName(c.type))].disruptions++;
  p.plan.events.push_back(DisruptionEvent(p.job.metadata.ns, c.disruption));
  p.plan.disruptions.push_back(c.disruption);
}

// 3.4: the ended pods whose deletion stalled are deleted again, and the pass asks to look again
// when the next one is due.
void ApplyStalledDeletions(Pass& p) {
  StalledDeletions stalled = FinishStalledDeletions(p.children.pods, p.observed.now);
  Append(p.plan.delete_pods, std::move(stalled.delete_pods));
  if (stalled.requeue_after)
    p.plan.requeue_after =
        p.plan.requeue_after ? std::min(*p.plan.requeue_after, *stalled.requeue_after) : stalled.requeue_after;
}

// 3.3 step 3: finished. D18: never recreate anything.
void ReconcileFinished(Pass& p) {
  ApplyCleanUp(p, true);
  if (IsSucceeded(p.status))
    for (auto& [type, rs] : p.status.replica_statuses) {
      rs.succeeded += rs.active;
      rs.active = 0;
    }
  if (!p.status.completion_time) p.status.completion_time = p.observed.now;
  ApplyTtl(p);
  // The clean-up comes after the status that ended the job (3.11): a kill can stall it too.
  ApplyStalledDeletions(p);
}

// 3.12: suspended.
void ReconcileSuspended(Pass& p) {
  ApplyCleanUp(p, false);
  for (auto& [type, rs] : p.status.replica_statuses) rs.active = 0;
  const std::string message = "TFJob " + p.job.metadata.name + " is suspended.";
  if (IsRunning(p.status)) p.Condition(kConditionRunning, "False", "TFJobSuspended", message);
  if (!IsSuspendedCondition(p.status)) {
    p.Condition(kConditionSuspended, "True", "TFJobSuspended", message);
    p.Event(kNormal, "TFJobSuspended", message);  // D9: on the transition only
  }
}

// 3.3 step 5: resumed (D8: the start time restarts).
void StartOrResume(Pass& p) {
  if (IsSuspendedCondition(p.status)) {
    const std::string message = "TFJob " + p.job.metadata.name + " is resumed.";
    p.Condition(kConditionSuspended, "False", "TFJobResumed", message);
    p.status.start_time = p.observed.now;
    p.Event(kNormal, "TFJobResumed", message);
  }
  if (!p.status.start_time) p.status.start_time = p.observed.now;
}

// The job ends (D4, D7, D28): clean-up, the final counts, TTL.
void EndJob(Pass& p, const Replicas& r) {
  ApplyCleanUp(p, true);
  p.status.replica_statuses = TerminalCounts(p.status, r.types, p.plan.delete_pods);
  ApplyTtl(p);
}

// 3.3 step 7 (v1.9.4 order, D4, D7): backoffLimit or the deadline.
void FailOnLimit(Pass& p, const Replicas& r, const std::string& message) {
  p.plan.requeue_after.reset();
  p.Events(ExitEvents(p.job, r.types, p.plan.events));
  p.Finish(kConditionFailed, "TFJobFailed", message);
  p.Event(kWarning, "TFJobFailed", message);
  p.plan.counters.failed++;
  EndJob(p, r);
}

// Restarts: delete the failed pods; the next pass recreates them (3.4 c). Returns whether the
// job is restarting.
bool ApplyRestarts(Pass& p, const Replicas& r, const RestartDecisions& d) {
  std::vector<std::string> restarting_types;
  for (const auto& t : r.types) {
    auto f = d.failures.find(t.type);
    if (f == d.failures.end() || f->second.restartable == 0) continue;
    restarting_types.emplace_back(api::ReplicaTypeName(t.type));
    p.status.replica_statuses[restarting_types.back()].restarts += f->second.restartable;
  }
  for (const api::Pod* pod : d.to_restart) {
    p.plan.delete_pods.push_back({pod->meta.name, pod->meta.uid});
    if (auto code = TensorflowExitCode(*pod)) p.Event(kNormal, "ExitedWithCode", ExitedMessage(p.job, *pod, *code));
  }
  for (const auto& c : d.disrupted) p.plan.delete_pods.push_back({c.disruption.pod, c.disruption.uid});
  if (restarting_types.empty()) return false;
  std::string list;  // D10: fixed order
  for (size_t i = 0; i < restarting_types.size(); ++i) list += (i > 0 ? ", " : "") + restarting_types[i];
  std::string message = "job " + p.job.metadata.name + " is restarting because " + list + " replica(s) failed.";
  p.Condition(kConditionRestarting, "True", "TFJobRestarting", message);
  p.Event(kWarning, "TFJobRestarting", message);
  p.plan.counters.restarted += static_cast<int>(d.to_restart.size());
  return true;
}

// Gang scheduling (2.8) and the children to create or scale down (3.4, 3.5).
void PlanRunning(Pass& p, const Replicas& r) {
  GangPlan gang = PlanGang(p.job, p.options, p.observed);
  p.plan.create_pod_group = std::move(gang.create_pod_group);
  p.plan.update_pod_group = std::move(gang.update_pod_group);
  p.plan.create_workload = std::move(gang.create_workload);
  p.plan.composite = std::move(gang.composite);
  if (gang.wait) p.status.last_reconcile_time = p.observed.now;
  std::set<std::string> deleting;
  for (const auto& d : p.plan.delete_pods) deleting.insert(d.name);
  ChildrenPlan c = PlanChildren(p.job, r.types, p.children, deleting, gang.wait, p.options.render);
  p.plan.create_pods = std::move(c.create_pods);
  p.plan.create_services = std::move(c.create_services);
  Append(p.plan.delete_pods, std::move(c.delete_pods));
  Append(p.plan.delete_services, std::move(c.delete_services));
  p.Events(std::move(c.events));
  p.plan.events = UniqueEvents(std::move(p.plan.events));
}

// 3.6 status, with D5 (success first; at most one terminal condition) and D6.
void Conclude(Pass& p, const Replicas& r, const RestartDecisions& d, bool restarting) {
  Outcome o = ComputeOutcome(p.job, r.types, d.failures, p.status, p.children.pods);
  for (auto& [key, rs] : o.replica_statuses) p.status.replica_statuses[key] = rs;
  std::string failure = o.failure.empty() ? ExitCodeFailure(p.job, d) : o.failure;
  if (o.succeeded || !failure.empty()) p.Events(ExitEvents(p.job, r.types, p.plan.events));
  if (o.succeeded) {
    p.Finish(kConditionSucceeded, "TFJobSucceeded", SucceededMessage(p.job));
    p.Event(kNormal, "TFJobSucceeded", SucceededMessage(p.job));
    if (!failure.empty()) p.Event(kWarning, "TFJobFailed", failure);  // D5: recorded, not terminal
    p.plan.counters.successful++;
  } else if (!failure.empty()) {
    // With backoffLimit 0, upstream's backoff check sees the new failed pod first and fails the
    // job with the backoff message, whatever the restart policy (docs/semantics.md 3.8).
    const auto& limit = p.job.spec.run_policy.backoff_limit;
    if (limit && *limit == 0)
      failure = "Job " + p.job.metadata.name + " has failed because it has reached the specified backoff limit";
    p.Finish(kConditionFailed, "TFJobFailed", failure);
    p.Event(kWarning, "TFJobFailed", failure);  // D7
    p.plan.counters.failed++;
  } else {
    if (o.running && !restarting) p.Condition(kConditionRunning, "True", "TFJobRunning", RunningMessage(p.job));
    return;
  }
  EndJob(p, r);
  p.plan.create_pods.clear();
  p.plan.create_services.clear();
  if (IsFinished(p.status)) {
    p.plan.create_pod_group.reset();
    p.plan.update_pod_group.reset();
    p.plan.create_workload.reset();
    p.plan.composite.create_composite.reset();
    p.plan.composite.create_members.clear();
    p.plan.composite.update_members.clear();
  }
}

// A job neither finished nor suspended: restarts, limits, children, status.
void ReconcileActive(Pass& p) {
  StartOrResume(p);
  const Replicas r = SliceReplicas(p.job, p.children.pods, p.status);
  // D21: pods disrupted by others are counted once and recreated whatever the restart policy;
  // backoffLimit never sees them: the deletions the controller noted, then the pods a disruption
  // left Failed (deleted here, recreated by the next pass).
  for (const auto& c : CountNotedDisruptions(p.observed.disruptions, r.types)) RecordDisruption(p, c);
  const RestartDecisions d = DecideRestarts(r.types);
  for (const auto& c : d.disrupted) RecordDisruption(p, c);
  LimitCheck limits = CheckLimits(p.job, r, d.to_restart.size(), p.status.start_time, p.observed.now);
  if (!limits.failure.empty()) return FailOnLimit(p, r, limits.failure);
  if (limits.requeue_after) p.plan.requeue_after = std::max(*limits.requeue_after, std::chrono::nanoseconds(0));
  // ExitCode < 128: the job fails in Conclude, unless the success rule holds (D5).
  for (const auto& [type, pod] : d.exit_code_failures)
    if (auto code = TensorflowExitCode(*pod)) p.Event(kNormal, "ExitedWithCode", ExitedMessage(p.job, *pod, *code));
  const bool restarting = ApplyRestarts(p, r, d);
  ApplyStalledDeletions(p);
  PlanRunning(p, r);
  Conclude(p, r, d, restarting);
}

Plan Finalize(Pass& p, const api::JobStatus& base) {
  if (!(p.status == base)) p.plan.status = p.status;
  p.plan.ends_job = EndsJob(base, p.plan.status);
  if (p.options.counters_in_annotation) {
    std::string counters = CountersAnnotation(p.status);
    const auto& annotations = p.observed.job.metadata.annotations;
    auto it = annotations.find(std::string(kCountersAnnotation));
    if (!counters.empty() && (it == annotations.end() || it->second != counters))
      p.plan.counters_annotation = std::move(counters);
  }
  return std::move(p.plan);
}

}  // namespace

std::optional<PodDisruption> DeletionDisruption(const api::Pod& pod) {
  const bool ended = pod.phase == api::PodPhase::kSucceeded || pod.phase == api::PodPhase::kFailed;
  if (ended && pod.disruption_reason.empty()) return std::nullopt;
  PodDisruption d{pod.meta.name,          pod.meta.uid,          pod.meta.replica_type,
                  pod.meta.replica_index, pod.disruption_reason, pod.disruption_message};
  if (d.reason.empty()) {
    d.reason = std::string(kDeletedExternally);
    d.message = "deleted without the operator asking";
  }
  return d;
}

std::string RunningMessage(const api::TfJob& job) {
  return "TFJob " + api::JobKey(job) + " is running.";
}
std::string SucceededMessage(const api::TfJob& job) {
  return "TFJob " + api::JobKey(job) + " successfully completed.";
}

Plan Reconcile(const ObservedState& observed, const ReconcileOptions& options) {
  const api::TfJob& raw = observed.job;
  if (ShouldSkip(raw, observed.multikueue_copy)) {
    Plan skip;
    skip.skip = true;
    return skip;
  }
  const api::JobStatus base = WithCountersAnnotation(raw);  // what "unchanged" means (D29)
  Admission admission = Admit(raw, base, observed.now);
  if (admission.invalid) {
    Plan plan;
    plan.events = std::move(admission.events);
    if (!(admission.status == base)) plan.status = std::move(admission.status);
    plan.ends_job = EndsJob(base, plan.status);
    return plan;
  }
  api::TfJob job = raw;
  api::SetDefaults(job);
  Pass p{observed, options, job, ClassifyChildren(job, observed.pods, observed.services), std::move(admission.status),
         {}};
  p.plan.events = std::move(admission.events);
  if (IsFinished(p.status))
    ReconcileFinished(p);
  else if (IsJobSuspended(job))
    ReconcileSuspended(p);
  else
    ReconcileActive(p);
  return Finalize(p, base);
}

std::optional<std::chrono::nanoseconds> CountOnlyStatusWait(const api::JobStatus& cached, const Plan& plan,
                                                            std::optional<std::chrono::nanoseconds> since_last_write,
                                                            std::chrono::nanoseconds interval) {
  if (!plan.status || interval <= std::chrono::nanoseconds(0) || !since_last_write || *since_last_write >= interval ||
      !OnlyActiveCountsDiffer(cached, *plan.status))
    return std::nullopt;
  return interval - *since_last_write;
}

void HoldStatus(Plan& plan, std::chrono::nanoseconds wait) {
  plan.status.reset();
  plan.requeue_after = plan.requeue_after ? std::min(*plan.requeue_after, wait) : wait;
}

}  // namespace tfjob::core
