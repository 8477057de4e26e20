#include "tfjob/core/kueue_sync.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "api/json_fields.h"
#include "api/object_key.h"
#include "api/tfjob_json.h"
#include "tfjob/core/kueue_multikueue.h"
#include "tfjob/core/naming.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

// Kueue's messages and reasons (docs/kueue.md).
constexpr char kPodsNotReady[] = "Not all pods are ready or succeeded";
constexpr char kPodsRecovering[] = "At least one pod has failed, waiting for recovery";
constexpr char kPodsReadyMessage[] = "All pods reached readiness and the workload is running";
constexpr char kOutOfSync[] = "The prebuilt workload is out of sync with its user job";
constexpr size_t kMaxConditionMessage = 32 * 1024;

json List(const json& obj, const char* key) {
  if (!obj.is_object()) return json::array();
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : json::array();
}

const json* FindCondition(const json& workload, std::string_view type) {
  const json& status = api::ObjectField(workload, "status");
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return nullptr;
  for (const json& c : *it)
    if (api::StringField(c, "type") == type) return &c;
  return nullptr;
}

bool ConditionTrue(const json& workload, std::string_view type) {
  const json* c = FindCondition(workload, type);
  return c && api::StringField(*c, "status") == "True";
}

std::string Name(const json& workload) {
  return api::StringField(api::ObjectField(workload, "metadata"), "name");
}

std::string Key(const json& workload) {
  return api::ObjectKey::OfJson(workload).String();
}

bool HasFinalizer(const json& workload) {
  for (const json& f : List(api::ObjectField(workload, "metadata"), "finalizers"))
    if (f == kKueueResourceInUseFinalizer) return true;
  return false;
}

// The job as Kueue's TFJob integration reads it.
bool Suspended(const api::TfJob& job) {
  return job.spec.run_policy.suspend.value_or(false);
}
bool Active(const api::TfJob& job) {
  return std::any_of(job.status.replica_statuses.begin(), job.status.replica_statuses.end(),
                     [](const auto& kv) { return kv.second.active != 0; });
}
bool JobConditionTrue(const api::TfJob& job, std::string_view type) {
  for (const auto& c : job.status.conditions)
    if (c.type == type && c.status == "True") return true;
  return false;
}
// The first Succeeded or Failed condition that is True.
const api::JobCondition* Finished(const api::TfJob& job) {
  for (const auto& c : job.status.conditions)
    if ((c.type == "Succeeded" || c.type == "Failed") && c.status == "True") return &c;
  return nullptr;
}

// The controller owner reference of the Workload, if any.
const json* Controller(const json& workload) {
  const json& meta = api::ObjectField(workload, "metadata");
  auto refs = meta.find("ownerReferences");
  if (refs == meta.end() || !refs->is_array()) return nullptr;
  for (const json& ref : *refs)
    if (ref.is_object() && ref.contains("controller") && ref["controller"] == true) return &ref;
  return nullptr;
}

// The status patch of `workload` with its new conditions (and more), at its resourceVersion.
json StatusPatch(const json& workload, json status) {
  json meta = json::object();
  const std::string rv = api::StringField(api::ObjectField(workload, "metadata"), "resourceVersion");
  if (!rv.empty()) meta["resourceVersion"] = rv;
  return {{"metadata", std::move(meta)}, {"status", std::move(status)}};
}

json Conditions(const json& workload) {
  return List(api::ObjectField(workload, "status"), "conditions");
}

int64_t Generation(const json& workload) {
  return api::IntField(api::ObjectField(workload, "metadata"), "generation");
}

RenderEvent Normal(std::string reason, std::string message) {
  return RenderEvent{api::EventType::kNormal, std::move(reason), std::move(message)};
}

// Stops the job (suspend and templates back from `workload`, if any) unless it is suspended.
void StopJob(const api::TfJob& job, const json* workload, const std::string& message, KueuePlan* plan) {
  if (Suspended(job)) return;
  plan->job_update = KueueStopJob(job, workload ? KueueOriginalPodSets(*workload) : std::vector<KueuePodSetInfo>{});
  plan->events.push_back(Normal("Stopped", message));
}

// The Finished condition as a status patch; nullopt when the Workload is finished already.
std::optional<json> FinishStatus(const json& workload, const std::string& reason, const std::string& message,
                                 api::Time now) {
  if (ConditionTrue(workload, "Finished")) return std::nullopt;
  json conditions = Conditions(workload);
  SetKueueCondition(&conditions, "Finished", "True", reason, message, Generation(workload), now);
  return StatusPatch(workload, {{"conditions", std::move(conditions)}});
}

// The reclaimable pods of the job: per PodSet, the replicas that succeeded (at most the count).
json ReclaimablePods(const api::TfJob& job) {
  json out = json::array();
  for (api::ReplicaType type : KueuePodSetOrder(job)) {
    auto status = job.status.replica_statuses.find(std::string(api::ReplicaTypeName(type)));
    if (status == job.status.replica_statuses.end() || status->second.succeeded <= 0) continue;
    const std::string* key = api::ReplicaSpecKey(job.spec, type);
    const int32_t count = api::ReplicasOrDefault(*job.spec.replica_specs.at(*key));
    out.push_back({{"name", KueuePodSetName(type)}, {"count", std::min(status->second.succeeded, count)}});
  }
  return out;
}

bool SameReclaimable(const json& a, const json& b) {
  auto as_map = [](const json& list) {
    std::map<std::string, int64_t> m;
    for (const json& e : list) m[api::StringField(e, "name")] = api::IntField(e, "count");
    return m;
  };
  return a.size() == b.size() && as_map(a) == as_map(b);
}

// Kueue's PodsReady condition for the job: (status, reason, message).
std::array<std::string, 3> PodsReadyCondition(const api::TfJob& job, const json& workload) {
  if (!ConditionTrue(workload, "Admitted")) return {"False", "WaitForStart", kPodsNotReady};
  const json* current = FindCondition(workload, "PodsReady");
  const std::string reason = current ? api::StringField(*current, "reason") : "";
  if (JobConditionTrue(job, "Running"))
    return {"True", reason == "WaitForRecovery" || reason == "Recovered" ? "Recovered" : "Started", kPodsReadyMessage};
  if (!current) return {"False", "WaitForStart", kPodsNotReady};
  if (api::StringField(*current, "status") == "True" || reason == "WaitForRecovery")
    return {"False", "WaitForRecovery", kPodsRecovering};
  return {"False", "WaitForStart", kPodsNotReady};
}

// Clearing the reservation of an evicted Workload whose job has no active pod: Requeued (True only
// after a preemption or node failures), QuotaReserved False "Pending", no admission, Admitted
// False, and the admitted time added to accumulatedPastExecutionTimeSeconds.
json ClearReservation(const json& workload, const json& evicted, api::Time now) {
  const std::string reason = api::StringField(evicted, "reason");
  const std::string message = api::StringField(evicted, "message");
  const int64_t gen = Generation(workload);
  json conditions = Conditions(workload);
  const bool requeued = reason == "Preempted" || reason == "NodeFailures";
  SetKueueCondition(&conditions, "Requeued", requeued ? "True" : "False", reason, message, gen, now);
  SetKueueCondition(&conditions, "QuotaReserved", "False", "Pending", message, gen, now);
  json status = {{"admission", nullptr}};
  if (const json* admitted = FindCondition(workload, "Admitted");
      admitted && api::StringField(*admitted, "status") == "True") {
    bool checks_ready = true;
    for (const json& check : List(api::ObjectField(workload, "status"), "admissionChecks"))
      checks_ready = checks_ready && api::StringField(check, "state") == "Ready";
    if (auto since = api::ParseTime(api::StringField(*admitted, "lastTransitionTime"))) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - *since).count();
      status["accumulatedPastExecutionTimeSeconds"] =
          api::IntField(api::ObjectField(workload, "status"), "accumulatedPastExecutionTimeSeconds") + seconds;
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
std::string PendingMessage(const json& workload) {
  if (ConditionTrue(workload, "QuotaReserved")) {
    std::string msg;
    for (const json& check : List(api::ObjectField(workload, "status"), "admissionChecks")) {
      if (api::StringField(check, "state") != "Pending" || api::StringField(check, "message").empty()) continue;
      if (!msg.empty()) msg += "; ";
      msg += api::StringField(check, "name") + ": " + api::StringField(check, "message");
    }
    return msg.empty() ? "quota reserved, waiting for admission checks" : msg;
  }
  if (const json* reserved = FindCondition(workload, "QuotaReserved"))
    if (std::string msg = api::StringField(*reserved, "message"); !msg.empty()) return msg;
  return "waiting for a ClusterQueue to reserve quota";
}

// Adopting the prebuilt Workload: the job becomes its controller, and it gets the job-uid label.
json Adopt(const api::TfJob& job, json workload) {
  json& meta = workload["metadata"];
  json refs = json::array();
  for (const json& ref : List(meta, "ownerReferences"))
    if (api::StringField(ref, "uid") != job.metadata.uid) refs.push_back(ref);
  refs.push_back(api::EncodeOwnerReference(GenOwnerReference(job)));
  meta["ownerReferences"] = std::move(refs);
  if (!job.metadata.uid.empty()) meta["labels"][std::string(kKueueJobUidLabel)] = job.metadata.uid;
  return workload;
}

void WaitForPriorityClass(const Status& status, KueuePlan* plan) {
  plan->step = KueueStep::kWaitPriorityClass;
  plan->retry = true;
  plan->message = status.message();
}

// The prebuilt Workload, when the job names one: adopted, checked, or treated as missing.
const json* EnsurePrebuilt(const KueueObserved& o, const json& pod_sets, KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  if (!o.prebuilt) return nullptr;
  const json* controller = Controller(*o.prebuilt);
  if (controller && api::StringField(*controller, "uid") != job.metadata.uid) return nullptr;
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
void RewriteWorkload(const KueueObserved& o, const KueueOptions& options, const json& workload, KueuePlan* plan) {
  auto priority = KueueWorkloadPriority(*o.job, o.priority_classes);
  auto rendered = priority.ok() ? RenderKueueWorkload(*o.job, *priority, options) : priority.status();
  plan->workload_name = Name(workload);
  if (!rendered.ok()) return WaitForPriorityClass(rendered.status(), plan);
  json updated = workload;
  json active = api::ObjectField(updated, "spec").contains("active") ? updated["spec"]["active"] : json();
  updated["spec"] = (*rendered)["spec"];
  if (!active.is_null()) updated["spec"]["active"] = active;
  plan->step = KueueStep::kUpdateWorkload;
  plan->update_workload = std::move(updated);
  plan->events.push_back(
      Normal("UpdatedWorkload", "Updated not matching Workload for suspended job: " + Key(workload)));
}

// The priority follows the priority-class label while the Workload has no class or a
// WorkloadPriorityClass. Returns whether the pass ends here.
bool FollowPriority(const KueueObserved& o, const json& match, KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  const json& ref = api::ObjectField(api::ObjectField(match, "spec"), "priorityClassRef");
  const bool follows = ref.empty() || api::StringField(ref, "kind") == "WorkloadPriorityClass";
  const std::string* label = JobLabel(job, kKueuePriorityClassLabel);
  const std::string wanted = label ? *label : "";
  if (!follows || wanted == api::StringField(ref, "name")) return false;
  plan->workload_name = Name(match);
  auto priority = KueueWorkloadPriority(job, o.priority_classes);
  if (!priority.ok()) {
    WaitForPriorityClass(priority.status(), plan);
    return true;
  }
  json updated = match;
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
void StopWithoutMatch(const api::TfJob& job, const std::vector<const json*>& others, KueuePlan* plan) {
  if (Suspended(job) || Finished(job)) return;
  if (others.size() == 1)
    StopJob(job, others.front(), "No matching Workload; restoring pod templates according to existent Workload", plan);
  else
    StopJob(job, nullptr, "Missing Workload; unable to restore pod templates", plan);
}

void DeleteOthers(const std::vector<const json*>& others, bool matched, KueuePlan* plan) {
  plan->step = KueueStep::kDeleteExtra;
  for (const json* w : others) {
    plan->delete_workloads.push_back(Name(*w));
    if (HasFinalizer(*w)) plan->remove_finalizer.push_back(Name(*w));
    plan->events.push_back(Normal("DeletedWorkload", "Deleted not matching Workload: " + Key(*w)));
  }
  plan->message = matched ? "extra Workloads deleted" : "no matching Workload; the others deleted";
}

// Step 1 of a pass: the one Workload of the job. Returns it (nullptr when there is none), or
// fills `plan` with a step that ends the pass.
const json* EnsureOneWorkload(const KueueObserved& o, const KueueOptions& options, const json& pod_sets,
                              KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  if (KueuePrebuiltWorkloadName(job)) return EnsurePrebuilt(o, pod_sets, plan);
  const json* match = nullptr;
  std::vector<const json*> others;
  for (const json& w : o.workloads) {
    if (!match && KueueWorkloadMatchesJob(job, pod_sets, w))
      match = &w;
    else
      others.push_back(&w);
  }
  const json* to_update = nullptr;
  if (!match && !others.empty() && Suspended(job) && !ConditionTrue(*others.front(), "QuotaReserved")) {
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
  plan->workload_name = Name(*workload);
  plan->events.push_back(Normal("CreatedWorkload", "Created Workload: " + Key(*workload)));
  plan->create_workload = *std::move(workload);
}

// The Workload is Finished or being deleted. Returns whether the pass ends here.
bool WorkloadEnded(const api::TfJob& job, const json& wl, KueuePlan* plan) {
  if (ConditionTrue(wl, "Finished")) {
    plan->step = KueueStep::kWorkloadFinished;
  } else if (api::BeingDeleted(wl)) {
    plan->step = KueueStep::kWorkloadDeleted;
    StopJob(job, &wl, "Workload is deleted", plan);
  } else {
    return false;
  }
  if (HasFinalizer(wl)) plan->remove_finalizer.push_back(Name(wl));
  return true;
}

// The job finished: its Workload gets Finished with the outcome. Returns whether it did.
bool JobFinished(const KueueObserved& o, const json* wl, KueuePlan* plan) {
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
bool StatusBookkeeping(const KueueObserved& o, const KueueOptions& options, const json& wl, KueuePlan* plan) {
  const json reclaimable = ReclaimablePods(*o.job);
  if (!SameReclaimable(reclaimable, List(api::ObjectField(wl, "status"), "reclaimablePods"))) {
    plan->step = KueueStep::kReclaimablePods;
    plan->workload_status = StatusPatch(wl, {{"reclaimablePods", reclaimable}});
    return true;
  }
  if (!options.wait_for_pods_ready) return false;
  const auto [status, reason, message] = PodsReadyCondition(*o.job, wl);
  const json* current = FindCondition(wl, "PodsReady");
  if (current && api::StringField(*current, "status") == status && api::StringField(*current, "reason") == reason)
    return false;
  json conditions = Conditions(wl);
  SetKueueCondition(&conditions, "PodsReady", status, reason, message, Generation(wl), o.now);
  plan->step = KueueStep::kPodsReady;
  plan->workload_status = StatusPatch(wl, {{"conditions", std::move(conditions)}});
  return true;
}

// Evicted: stop the job; once none of its pods is left, clear the reservation. Returns whether
// the Workload is evicted.
bool Evicted(const KueueObserved& o, const json& wl, KueuePlan* plan) {
  const json* evicted = FindCondition(wl, "Evicted");
  if (!evicted || api::StringField(*evicted, "status") != "True") return false;
  plan->step = KueueStep::kEvicted;
  plan->message = api::StringField(*evicted, "message");
  StopJob(*o.job, &wl, plan->message, plan);
  if (ConditionTrue(wl, "QuotaReserved") && !Active(*o.job) && o.live_pods == 0)
    plan->workload_status = ClearReservation(wl, *evicted, o.now);
  return true;
}

// A suspended job: start it when admitted, else follow its queue or wait.
void SuspendedJob(const KueueObserved& o, const KueueOptions& options, const json& wl, KueuePlan* plan) {
  const api::TfJob& job = *o.job;
  if (ConditionTrue(wl, "Admitted")) {
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
      const json& admission = api::ObjectField(api::ObjectField(wl, "status"), "admission");
      plan->step = KueueStep::kStart;
      plan->message = "Admitted by clusterQueue " + api::StringField(admission, "clusterQueue");
      plan->job_update = *std::move(update);
      plan->events.push_back(Normal("Started", plan->message));
    }
    return;
  }
  if (api::StringField(api::ObjectField(wl, "spec"), "queueName") != KueueQueueName(job)) {
    json updated = wl;
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
  for (const json& w : o.workloads)
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
    plan.job_update = KueueJobUpdate{.suspend = Suspended(job), .spec_managed_by = *job.spec.run_policy.managed_by};
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
  const json* wl = EnsureOneWorkload(o, options, *pod_sets, &plan);
  if (plan.step != KueueStep::kRunning) return plan;
  if (wl) plan.workload_name = Name(*wl);
  if (wl && WorkloadEnded(job, *wl, &plan)) return plan;
  if (JobFinished(o, wl, &plan)) return plan;
  if (!wl) {
    NoWorkload(o, options, &plan);
    return plan;
  }
  if (StatusBookkeeping(o, options, *wl, &plan) || Evicted(o, *wl, &plan)) return plan;
  if (Suspended(job)) {
    SuspendedJob(o, options, *wl, &plan);
  } else if (!ConditionTrue(*wl, "Admitted")) {
    plan.step = KueueStep::kSuspendNotAdmitted;
    plan.message = "Not admitted by cluster queue";
    StopJob(job, wl, plan.message, &plan);
  }
  return plan;
}

}  // namespace tfjob::core
