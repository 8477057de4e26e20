#include "tfjob/core/kueue_sync.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "api/json_fields.h"
#include "api/object_key.h"
#include "api/tfjob_json.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/kueue_multikueue.h"
#include "tfjob/core/naming.h"

namespace tfjob::core {
namespace {

using api::KueueCondition;
using api::KueueWorkload;
using nlohmann::json;

// Kueue's messages and reasons (docs/kueue.md).
constexpr char kPodsNotReady[] = "Not all pods are ready or succeeded";
constexpr char kPodsRecovering[] = "At least one pod has failed, waiting for recovery";
constexpr char kPodsReadyMessage[] = "All pods reached readiness and the workload is running";
constexpr char kOutOfSync[] = "The prebuilt workload is out of sync with its user job";
constexpr size_t kMaxConditionMessage = 32 * 1024;

std::string Name(const KueueWorkload& workload) {
  return workload.metadata.name;
}

std::string Key(const KueueWorkload& workload) {
  return api::ObjectKey{workload.metadata.ns, workload.metadata.name}.String();
}

bool HasFinalizer(const KueueWorkload& workload) {
  return workload.HasFinalizer(kKueueResourceInUseFinalizer);
}

// The job as Kueue's TFJob integration reads it: its Succeeded or Failed condition, when True.
const api::JobCondition* Finished(const api::TfJob& job) {
  if (!IsFinished(job.status)) return nullptr;
  return FindCondition(job.status, IsFailed(job.status) ? kConditionFailed : kConditionSucceeded);
}
bool Active(const api::TfJob& job) {
  return std::any_of(job.status.replica_statuses.begin(), job.status.replica_statuses.end(),
                     [](const auto& kv) { return kv.second.active != 0; });
}

// The status patch of `workload` with its new conditions (and more), at its resourceVersion.
json StatusPatch(const KueueWorkload& workload, json status) {
  json meta = json::object();
  if (!workload.metadata.resource_version.empty()) meta["resourceVersion"] = workload.metadata.resource_version;
  return {{"metadata", std::move(meta)}, {"status", std::move(status)}};
}

// The Workload's conditions as a status write starts from them.
json Conditions(const KueueWorkload& workload) {
  return api::EncodeKueueConditions(workload.status.conditions);
}

int64_t Generation(const KueueWorkload& workload) {
  return workload.metadata.generation;
}

RenderEvent Normal(std::string reason, std::string message) {
  return RenderEvent{api::EventType::kNormal, std::move(reason), std::move(message)};
}

// Stops the job (suspend and templates back from `workload`, if any) unless it is suspended.
void StopJob(const api::TfJob& job, const KueueWorkload* workload, const std::string& message, KueuePlan* plan) {
  if (IsJobSuspended(job)) return;
  plan->job_update = KueueStopJob(job, workload ? KueueOriginalPodSets(*workload) : std::vector<KueuePodSetInfo>{});
  plan->events.push_back(Normal("Stopped", message));
}

// The Finished condition as a status patch; nullopt when the Workload is finished already.
std::optional<json> FinishStatus(const KueueWorkload& workload, const std::string& reason, const std::string& message,
                                 api::Time now) {
  if (workload.ConditionTrue("Finished")) return std::nullopt;
  json conditions = Conditions(workload);
  SetKueueCondition(&conditions, "Finished", "True", reason, message, Generation(workload), now);
  return StatusPatch(workload, {{"conditions", std::move(conditions)}});
}

// The reclaimable pods of the job: per PodSet, the replicas that succeeded (at most the count).
std::vector<api::KueueReclaimablePod> ReclaimablePods(const api::TfJob& job) {
  std::vector<api::KueueReclaimablePod> out;
  for (api::ReplicaType type : KueuePodSetOrder(job)) {
    auto status = job.status.replica_statuses.find(std::string(api::ReplicaTypeName(type)));
    if (status == job.status.replica_statuses.end() || status->second.succeeded <= 0) continue;
    const std::string* key = api::ReplicaSpecKey(job.spec, type);
    const int32_t count = api::ReplicasOrDefault(*job.spec.replica_specs.at(*key));
    out.push_back({KueuePodSetName(type), std::min(status->second.succeeded, count)});
  }
  return out;
}

// The same counts by name (the order of the lists does not matter).
bool SameReclaimable(const std::vector<api::KueueReclaimablePod>& a, const std::vector<api::KueueReclaimablePod>& b) {
  auto as_map = [](const std::vector<api::KueueReclaimablePod>& list) {
    std::map<std::string, int64_t> m;
    for (const api::KueueReclaimablePod& e : list) m[e.name] = e.count;
    return m;
  };
  return a.size() == b.size() && as_map(a) == as_map(b);
}

json EncodeReclaimable(const std::vector<api::KueueReclaimablePod>& pods) {
  json out = json::array();
  for (const api::KueueReclaimablePod& e : pods) out.push_back({{"name", e.name}, {"count", e.count}});
  return out;
}

// Kueue's PodsReady condition for the job: (status, reason, message).
std::array<std::string, 3> PodsReadyCondition(const api::TfJob& job, const KueueWorkload& workload) {
  if (!workload.ConditionTrue("Admitted")) return {"False", "WaitForStart", kPodsNotReady};
  const KueueCondition* current = workload.Condition("PodsReady");
  const std::string reason = current ? current->reason : "";
  if (IsRunning(job.status))
    return {"True", reason == "WaitForRecovery" || reason == "Recovered" ? "Recovered" : "Started", kPodsReadyMessage};
  if (!current) return {"False", "WaitForStart", kPodsNotReady};
  if (current->status == "True" || reason == "WaitForRecovery") return {"False", "WaitForRecovery", kPodsRecovering};
  return {"False", "WaitForStart", kPodsNotReady};
}

// Clearing the reservation of an evicted Workload whose job has no active pod: Requeued (True only
// after a preemption or node failures), QuotaReserved False "Pending", no admission, Admitted
// False, and the admitted time added to accumulatedPastExecutionTimeSeconds.
json ClearReservation(const KueueWorkload& workload, const KueueCondition& evicted, api::Time now) {
  const std::string& reason = evicted.reason;
  const std::string& message = evicted.message;
  const int64_t gen = Generation(workload);
  json conditions = Conditions(workload);
  const bool requeued = reason == "Preempted" || reason == "NodeFailures";
  SetKueueCondition(&conditions, "Requeued", requeued ? "True" : "False", reason, message, gen, now);
  SetKueueCondition(&conditions, "QuotaReserved", "False", "Pending", message, gen, now);
  json status = {{"admission", nullptr}};
  if (const KueueCondition* admitted = workload.Condition("Admitted"); admitted && admitted->status == "True") {
    bool checks_ready = true;
    for (const api::KueueAdmissionCheck& check : workload.status.admission_checks)
      checks_ready = checks_ready && check.state == "Ready";
    if (auto since = api::ParseTime(admitted->last_transition_time)) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - *since).count();
      status["accumulatedPastExecutionTimeSeconds"] = workload.status.accumulated_past_execution_time_seconds + seconds;
    }
    SetKueueCondition(
        &conditions, "Admitted", "False", checks_ready ? "NoReservation" : "NoReservationUnsatisfiedChecks",
        checks_ready ? "The workload has no reservation" : "The workload has no reservation and not all checks ready",
        gen, now);
  }
  status["conditions"] = std::move(conditions);
  return StatusPatch(workload, std::move(status));
}

// Why a suspended job's Workload waits: the pending admission checks, else the QuotaReserved
// condition's message (the scheduler's reason), else that it waits for a ClusterQueue.
std::string PendingMessage(const KueueWorkload& workload) {
  if (workload.ConditionTrue("QuotaReserved")) {
    std::string msg;
    for (const api::KueueAdmissionCheck& check : workload.status.admission_checks) {
      if (check.state != "Pending" || check.message.empty()) continue;
      if (!msg.empty()) msg += "; ";
      msg += check.name + ": " + check.message;
    }
    return msg.empty() ? "quota reserved, waiting for admission checks" : msg;
  }
  if (const KueueCondition* reserved = workload.Condition("QuotaReserved"))
    if (!reserved->message.empty()) return reserved->message;
  return "waiting for a ClusterQueue to reserve quota";
}

// Adopting the prebuilt Workload: the job becomes its controller, and it gets the job-uid label.
json Adopt(const api::TfJob& job, const KueueWorkload& workload) {
  json object = workload.object;
  json& meta = object["metadata"];
  json refs = json::array();
  for (const api::OwnerReference& ref : workload.metadata.owner_references)
    if (ref.uid != job.metadata.uid) refs.push_back(api::EncodeOwnerReference(ref));
  refs.push_back(api::EncodeOwnerReference(GenOwnerReference(job)));
  meta["ownerReferences"] = std::move(refs);
  if (!job.metadata.uid.empty()) meta["labels"][std::string(kKueueJobUidLabel)] = job.metadata.uid;
  return object;
}

void WaitForPriorityClass(const Status& status, KueuePlan* plan) {
  plan->step = KueueStep::kWaitPriorityClass;
  plan->retry = true;
  plan->message = status.message();
}

// The prebuilt Workload, when the job names one: adopted, checked, or treated as missing.
const KueueWorkload* EnsurePrebuilt(const KueueObserved& o, const json& pod_sets, KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  if (!o.prebuilt) return nullptr;
  const api::OwnerReference* controller = o.prebuilt->Controller();
  if (controller && controller->uid != job.metadata.uid) return nullptr;
  plan->workload_name = Name(*o.prebuilt);
  if (!controller) {
    plan->step = KueueStep::kAdoptPrebuilt;
    plan->update_workload = Adopt(job, *o.prebuilt);
    return nullptr;
  }
  if (KueueWorkloadMatchesJob(job, pod_sets, *o.prebuilt)) return &*o.prebuilt;
  if (auto status = FinishStatus(*o.prebuilt, "OutOfSync", kOutOfSync, o.now)) {
    plan->step = KueueStep::kPrebuiltOutOfSync;
    plan->message = kOutOfSync;
    plan->workload_status = std::move(status);
  }
  return nullptr;
}

// A suspended job's non-matching Workload that holds no quota is made to match the job (its
// spec rewritten, spec.active kept).
void RewriteWorkload(const KueueObserved& o, const KueueOptions& options, const KueueWorkload& workload,
                     KueuePlan* plan) {
  auto priority = KueueWorkloadPriority(*o.job, o.priority_classes);
  auto rendered = priority.ok() ? RenderKueueWorkload(*o.job, *priority, options) : priority.status();
  plan->workload_name = Name(workload);
  if (!rendered.ok()) return WaitForPriorityClass(rendered.status(), plan);
  json updated = workload.object;
  updated["spec"] = (*rendered)["spec"];
  if (workload.spec.active) updated["spec"]["active"] = *workload.spec.active;
  plan->step = KueueStep::kUpdateWorkload;
  plan->update_workload = std::move(updated);
  plan->events.push_back(
      Normal("UpdatedWorkload", "Updated not matching Workload for suspended job: " + Key(workload)));
}

// The priority follows the priority-class label while the Workload has no class or a
// WorkloadPriorityClass. Returns whether the pass ends here.
bool FollowPriority(const KueueObserved& o, const KueueWorkload& match, KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  const std::optional<api::KueuePriorityClassRef>& ref = match.spec.priority_class_ref;
  const bool follows = !ref || ref->kind == "WorkloadPriorityClass";
  const std::string* label = JobLabel(job, kKueuePriorityClassLabel);
  const std::string wanted = label ? *label : "";
  if (!follows || wanted == (ref ? ref->name : "")) return false;
  plan->workload_name = Name(match);
  auto priority = KueueWorkloadPriority(job, o.priority_classes);
  if (!priority.ok()) {
    WaitForPriorityClass(priority.status(), plan);
    return true;
  }
  json updated = match.object;
  json class_ref = KueuePriorityClassRef(*priority);
  if (class_ref.is_null())
    updated["spec"].erase("priorityClassRef");
  else
    updated["spec"]["priorityClassRef"] = std::move(class_ref);
  updated["spec"]["priority"] = priority->value;
  plan->step = KueueStep::kUpdatePriority;
  plan->update_workload = std::move(updated);
  plan->events.push_back(Normal("UpdatedWorkload", "Updated workload priority class: " + Key(match)));
  return true;
}

// A running job without a matching Workload is stopped, its templates restored from the one
// other Workload when there is exactly one.
void StopWithoutMatch(const api::TfJob& job, const std::vector<const KueueWorkload*>& others, KueuePlan* plan) {
  if (IsJobSuspended(job) || Finished(job)) return;
  if (others.size() == 1)
    StopJob(job, others.front(), "No matching Workload; restoring pod templates according to existent Workload", plan);
  else
    StopJob(job, nullptr, "Missing Workload; unable to restore pod templates", plan);
}

void DeleteOthers(const std::vector<const KueueWorkload*>& others, bool matched, KueuePlan* plan) {
  plan->step = KueueStep::kDeleteExtra;
  for (const KueueWorkload* w : others) {
    plan->delete_workloads.push_back(Name(*w));
    if (HasFinalizer(*w)) plan->remove_finalizer.push_back(Name(*w));
    plan->events.push_back(Normal("DeletedWorkload", "Deleted not matching Workload: " + Key(*w)));
  }
  plan->message = matched ? "extra Workloads deleted" : "no matching Workload; the others deleted";
}

// Step 1 of a pass: the one Workload of the job. Returns it (nullptr when there is none), or
// fills `plan` with a step that ends the pass.
const KueueWorkload* EnsureOneWorkload(const KueueObserved& o, const KueueOptions& options, const json& pod_sets,
                                       KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  if (KueuePrebuiltWorkloadName(job)) return EnsurePrebuilt(o, pod_sets, plan);
  const KueueWorkload* match = nullptr;
  std::vector<const KueueWorkload*> others;
  for (const KueueWorkload& w : o.workloads) {
    if (!match && KueueWorkloadMatchesJob(job, pod_sets, w))
      match = &w;
    else
      others.push_back(&w);
  }
  const KueueWorkload* to_update = nullptr;
  if (!match && !others.empty() && IsJobSuspended(job) && !others.front()->ConditionTrue("QuotaReserved")) {
    to_update = others.front();
    others.erase(others.begin());
  }
  if (!match) StopWithoutMatch(job, others, plan);
  if (!others.empty()) {
    DeleteOthers(others, match != nullptr, plan);
    return nullptr;
  }
  if (to_update) {
    RewriteWorkload(o, options, *to_update, plan);
    return nullptr;
  }
  if (!match || FollowPriority(o, *match, plan)) return nullptr;
  return match;
}

// No Workload: create one, unless the job must wait.
void NoWorkload(const KueueObserved& o, const KueueOptions& options, KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  if (KueuePrebuiltWorkloadName(job)) {
    StopJob(job, nullptr, "missing workload", plan);
    plan->step = KueueStep::kWaitPrebuilt;
    plan->message = "prebuilt workload not found";
    return;
  }
  if (Active(job) || o.live_pods > 0) {
    plan->step = KueueStep::kWaitPodsGone;
    plan->message = "the job is suspended but still has active pods";
    return;
  }
  auto priority = KueueWorkloadPriority(job, o.priority_classes);
  if (!priority.ok()) return WaitForPriorityClass(priority.status(), plan);
  auto workload = RenderKueueWorkload(job, *priority, options);
  if (!workload.ok()) {
    plan->step = KueueStep::kBadJob;
    plan->message = workload.status().message();
    return;
  }
  plan->step = KueueStep::kCreateWorkload;
  plan->workload_name = KueueWorkloadNameForJob(job, options.max_name_length);  // the rendered one's
  plan->events.push_back(
      Normal("CreatedWorkload", "Created Workload: " + api::ObjectKey{job.metadata.ns, plan->workload_name}.String()));
  plan->create_workload = *std::move(workload);
}

// The Workload is Finished or being deleted. Returns whether the pass ends here.
bool WorkloadEnded(const api::TfJob& job, const KueueWorkload& wl, KueuePlan* plan) {
  if (wl.ConditionTrue("Finished")) {
    plan->step = KueueStep::kWorkloadFinished;
  } else if (api::BeingDeleted(wl.metadata)) {
    plan->step = KueueStep::kWorkloadDeleted;
    StopJob(job, &wl, "Workload is deleted", plan);
  } else {
    return false;
  }
  if (HasFinalizer(wl)) plan->remove_finalizer.push_back(Name(wl));
  return true;
}

// The job finished: its Workload gets Finished with the outcome. Returns whether it did.
bool JobFinished(const KueueObserved& o, const KueueWorkload* wl, KueuePlan* plan) {
  const api::JobCondition* finished = Finished(*o.job);
  if (!finished) return false;
  plan->step = KueueStep::kJobFinished;
  if (!wl) return true;
  if (auto status = FinishStatus(*wl, finished->type == "Failed" ? "Failed" : "Succeeded", finished->message, o.now)) {
    plan->step = KueueStep::kFinishWorkload;
    plan->workload_status = std::move(status);
    plan->events.push_back(Normal("FinishedWorkload", "Workload '" + Key(*wl) + "' is declared finished"));
  }
  return true;
}

// reclaimablePods, then PodsReady (waitForPodsReady). Returns whether one needs a write.
bool StatusBookkeeping(const KueueObserved& o, const KueueOptions& options, const KueueWorkload& wl, KueuePlan* plan) {
  const std::vector<api::KueueReclaimablePod> reclaimable = ReclaimablePods(*o.job);
  if (!SameReclaimable(reclaimable, wl.status.reclaimable_pods)) {
    plan->step = KueueStep::kReclaimablePods;
    plan->workload_status = StatusPatch(wl, {{"reclaimablePods", EncodeReclaimable(reclaimable)}});
    return true;
  }
  if (!options.wait_for_pods_ready) return false;
  const auto [status, reason, message] = PodsReadyCondition(*o.job, wl);
  const KueueCondition* current = wl.Condition("PodsReady");
  if (current && current->status == status && current->reason == reason) return false;
  json conditions = Conditions(wl);
  SetKueueCondition(&conditions, "PodsReady", status, reason, message, Generation(wl), o.now);
  plan->step = KueueStep::kPodsReady;
  plan->workload_status = StatusPatch(wl, {{"conditions", std::move(conditions)}});
  return true;
}

// Evicted: stop the job; once none of its pods is left, clear the reservation. Returns whether
// the Workload is evicted.
bool Evicted(const KueueObserved& o, const KueueWorkload& wl, KueuePlan* plan) {
  const KueueCondition* evicted = wl.Condition("Evicted");
  if (!evicted || evicted->status != "True") return false;
  plan->step = KueueStep::kEvicted;
  plan->message = evicted->message;
  StopJob(*o.job, &wl, plan->message, plan);
  if (wl.ConditionTrue("QuotaReserved") && !Active(*o.job) && o.live_pods == 0)
    plan->workload_status = ClearReservation(wl, *evicted, o.now);
  return true;
}

// A suspended job: start it when admitted, else follow its queue or wait.
void SuspendedJob(const KueueObserved& o, const KueueOptions& options, const KueueWorkload& wl, KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  if (wl.ConditionTrue("Admitted")) {
    auto infos = KueueAdmittedPodSets(wl, o.flavors, options);
    auto update = infos.ok() ? KueueStartJob(job, *infos) : infos.status();
    if (!update.ok() && update.status().code() == StatusCode::kNotFound) {
      plan->step = KueueStep::kWaitFlavor;
      plan->retry = true;
      plan->message = update.status().message();
    } else if (!update.ok()) {
      plan->step = KueueStep::kStartFailed;
      plan->message = update.status().message();
      plan->workload_status = FinishStatus(wl, "FailedToStart", plan->message, o.now);
    } else {
      plan->step = KueueStep::kStart;
      plan->message = "Admitted by clusterQueue " + (wl.status.admission ? wl.status.admission->cluster_queue : "");
      plan->job_update = *std::move(update);
      plan->events.push_back(Normal("Started", plan->message));
    }
    return;
  }
  if (wl.spec.queue_name != KueueQueueName(job)) {
    json updated = wl.object;
    updated["spec"]["queueName"] = KueueQueueName(job);
    plan->step = KueueStep::kUpdateQueueName;
    plan->update_workload = std::move(updated);
    return;
  }
  plan->step = KueueStep::kPending;
  plan->message = PendingMessage(wl);
}

// The job is being deleted: its Workloads lose Kueue's finalizer.
void ReleaseFinalizers(const KueueObserved& o, KueuePlan* plan) {
  plan->step = KueueStep::kReleaseFinalizers;
  for (const KueueWorkload& w : o.workloads)
    if (HasFinalizer(w)) plan->remove_finalizer.push_back(Name(w));
}

constexpr std::pair<KueueStep, std::string_view> kStepNames[] = {
    {KueueStep::kNotQueued, "NotQueued"},
    {KueueStep::kReleaseFinalizers, "ReleaseFinalizers"},
    {KueueStep::kMarkForMultiKueue, "MarkForMultiKueue"},
    {KueueStep::kBadJob, "BadJob"},
    {KueueStep::kDeleteExtra, "DeleteExtra"},
    {KueueStep::kUpdateWorkload, "UpdateWorkload"},
    {KueueStep::kAdoptPrebuilt, "AdoptPrebuilt"},
    {KueueStep::kPrebuiltOutOfSync, "PrebuiltOutOfSync"},
    {KueueStep::kWaitPrebuilt, "WaitPrebuilt"},
    {KueueStep::kUpdatePriority, "UpdatePriority"},
    {KueueStep::kWorkloadFinished, "WorkloadFinished"},
    {KueueStep::kWorkloadDeleted, "WorkloadDeleted"},
    {KueueStep::kFinishWorkload, "FinishWorkload"},
    {KueueStep::kJobFinished, "JobFinished"},
    {KueueStep::kWaitPodsGone, "WaitPodsGone"},
    {KueueStep::kWaitPriorityClass, "WaitPriorityClass"},
    {KueueStep::kCreateWorkload, "CreateWorkload"},
    {KueueStep::kReclaimablePods, "ReclaimablePods"},
    {KueueStep::kPodsReady, "PodsReady"},
    {KueueStep::kEvicted, "Evicted"},
    {KueueStep::kWaitFlavor, "WaitFlavor"},
    {KueueStep::kStartFailed, "StartFailed"},
    {KueueStep::kStart, "Start"},
    {KueueStep::kUpdateQueueName, "UpdateQueueName"},
    {KueueStep::kPending, "Pending"},
    {KueueStep::kSuspendNotAdmitted, "SuspendNotAdmitted"},
    {KueueStep::kRunning, "Running"},
};

}  // namespace

std::string_view KueueStepName(KueueStep step) {
  for (const auto& [s, name] : kStepNames)
    if (s == step) return name;
  return "Unknown";
}

bool SetKueueCondition(json* conditions, std::string_view type, std::string_view status, std::string_view reason,
                       std::string_view message, int64_t observed_generation, api::Time now) {
  if (!conditions->is_array()) *conditions = json::array();
  const std::string msg(message.substr(0, kMaxConditionMessage));
  for (json& c : *conditions) {
    if (api::StringField(c, "type") != type) continue;
    const json before = c;
    if (api::StringField(c, "status") != status) {
      c["status"] = status;
      c["lastTransitionTime"] = api::FormatTime(now);
    }
    c["reason"] = reason;
    c["message"] = msg;
    c["observedGeneration"] = observed_generation;
    return c != before;
  }
  conditions->push_back({{"type", type},
                         {"status", status},
                         {"reason", reason},
                         {"message", msg},
                         {"observedGeneration", observed_generation},
                         {"lastTransitionTime", api::FormatTime(now)}});
  return true;
}

KueuePlan PlanKueueWorkload(const KueueObserved& o, const KueueOptions& options) {
  const api::TfJob& job = *o.job;
  KueuePlan plan;
  if (KueueQueueName(job).empty()) return plan;
  if (job.metadata.deletion_timestamp) {
    ReleaseFinalizers(o, &plan);
    return plan;
  }
  if (NeedsSpecManagedBy(job)) {  // before the Workload exists: MultiKueue reads it on admission
    plan.step = KueueStep::kMarkForMultiKueue;
    plan.message = "spec.managedBy set for Kueue's MultiKueue adapter";
    plan.job_update =
        KueueJobUpdate{.suspend = IsJobSuspended(job), .spec_managed_by = *job.spec.run_policy.managed_by};
    return plan;
  }
  auto pod_sets = KueuePodSets(job, options);
  if (!pod_sets.ok()) {
    // Kueue's webhook refuses such a job; here it is kept suspended.
    plan.step = KueueStep::kBadJob;
    plan.message = pod_sets.status().message();
    StopJob(job, nullptr, plan.message, &plan);
    return plan;
  }
  // EnsureOneWorkload sets another step only when the pass ends there.
  plan.step = KueueStep::kRunning;
  const KueueWorkload* wl = EnsureOneWorkload(o, options, *pod_sets, &plan);
  if (plan.step != KueueStep::kRunning) return plan;
  if (wl) plan.workload_name = Name(*wl);
  if (wl && WorkloadEnded(job, *wl, &plan)) return plan;
  if (JobFinished(o, wl, &plan)) return plan;
  if (!wl) {
    NoWorkload(o, options, &plan);
    return plan;
  }
  if (StatusBookkeeping(o, options, *wl, &plan) || Evicted(o, *wl, &plan)) return plan;
  if (IsJobSuspended(job)) {
    SuspendedJob(o, options, *wl, &plan);
  } else if (!wl->ConditionTrue("Admitted")) {
    plan.step = KueueStep::kSuspendNotAdmitted;
    plan.message = "Not admitted by cluster queue";
    StopJob(job, wl, plan.message, &plan);
  }
  return plan;
}

}  // namespace tfjob::core
