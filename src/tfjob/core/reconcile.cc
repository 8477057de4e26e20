#include "tfjob/core/reconcile.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "api/defaults.h"
#include "api/validation.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/pod_group.h"
#include "tfjob/core/replica_pods.h"

namespace tfjob::tfjob::core {
namespace {

using api::ReplicaType;
using std::chrono::seconds;

constexpr const char* kNormal = "Normal";
constexpr const char* kWarning = "Warning";

std::string Key(const api::TfJob& job) {
  return job.metadata.ns + "/" + job.metadata.name;
}

// State threaded through one reconcile pass.
struct Pass {
  const ObservedState& observed;
  const ReconcileOptions& options;
  api::TfJob job;         // defaulted
  api::JobStatus status;  // being computed
  Plan plan;
  std::vector<const api::Pod*> pods;                    // controlled by this job
  std::map<std::string, const api::Service*> services;  // controlled, by name
  api::Time now;

  void Event(const char* type, std::string reason, std::string message) {
    plan.events.push_back({type, std::move(reason), std::move(message)});
  }
  bool Condition(std::string_view type, std::string_view st, std::string_view reason, std::string_view message) {
    return SetCondition(status, type, st, reason, message, now);
  }
};

std::string FailedValidationMessage(const api::TfJob& job, const api::FieldErrors& errors) {
  std::string out = "TFJob " + Key(job) + " failed validation: ";
  for (size_t i = 0; i < errors.size(); ++i) out += (i > 0 ? "; " : "") + errors[i].ToString();
  return out;
}

// Deletes pods (and their same-named services) per cleanPodPolicy (3.11, D4): a finished job
// keeps what the policy keeps; anything else (suspend) deletes everything.
void CleanUp(Pass& p, bool finished) {
  const std::string policy = p.job.spec.run_policy.clean_pod_policy.value_or(std::string(api::kCleanPodPolicyNone));
  for (const api::Pod* pod : p.pods) {
    if (pod->meta.deletion_timestamp) continue;
    bool remove = !finished || policy == api::kCleanPodPolicyAll ||
                  (policy == api::kCleanPodPolicyRunning &&
                   (pod->phase == api::PodPhase::kRunning || pod->phase == api::PodPhase::kPending));
    if (!remove) continue;
    p.plan.delete_pods.push_back({pod->meta.name, pod->meta.uid});
    if (auto s = p.services.find(pod->meta.name); s != p.services.end())
      p.plan.delete_services.push_back({s->second->meta.name, s->second->meta.uid});
  }
  if (GangSchedulerFor(p.options.render.gang_scheduler_name) != GangScheduler::kNone && p.observed.pod_group) {
    p.plan.delete_pod_group = true;
    // D9: once, while the PodGroup still exists (upstream repeats it on every reconcile).
    if (finished) p.Event(kNormal, "JobTerminated", "Job has been terminated. Deleting PodGroup");
  }
  if (GangSchedulerFor(p.options.render.gang_scheduler_name) == GangScheduler::kKubernetes &&
      p.observed.workload_exists)
    p.plan.delete_workload = true;
}

// `from` plus `s` seconds, or nullopt when that lies beyond what a Time holds (the year 2262):
// such a time never comes. The schema admits any int64 activeDeadlineSeconds, and a plain sum
// overflowed and failed the job at once.
std::optional<api::Time> AddSecondsOrNever(api::Time from, int64_t s) {
  const int64_t room = std::chrono::duration_cast<seconds>(api::Time::max().time_since_epoch()).count() -
                       std::chrono::duration_cast<seconds>(from.time_since_epoch()).count();
  if (s >= room) return std::nullopt;
  return from + seconds(s);
}

// TTL after finishing (3.10): delete the job when due, else look again then.
void HandleTtl(Pass& p) {
  const auto& ttl = p.job.spec.run_policy.ttl_seconds_after_finished;
  if (!ttl || !p.status.completion_time) return;
  std::optional<api::Time> due_or_never = AddSecondsOrNever(*p.status.completion_time, *ttl);
  if (!due_or_never) return;
  api::Time due = *due_or_never;
  if (p.now >= due)
    p.plan.delete_job = true;
  else
    p.plan.requeue_after = std::chrono::duration_cast<std::chrono::nanoseconds>(due - p.now);
}

void MinRequeue(Plan& plan, std::chrono::nanoseconds d) {
  if (d < std::chrono::nanoseconds(0)) d = std::chrono::nanoseconds(0);
  if (!plan.requeue_after || d < *plan.requeue_after) plan.requeue_after = d;
}

void Finish(Pass& p, const char* condition, std::string reason, std::string message) {
  if (!p.status.completion_time) p.status.completion_time = p.now;
  p.Condition(condition, "True", reason, message);
}

// The exit code that decides a restart under ExitCode: the tensorflow container's, or the
// retryable sentinel when it has none.
int32_t RestartExitCode(const api::Pod& pod) {
  return TensorflowExitCode(pod).value_or(kExitCodeUnknown);
}

int32_t InPlaceRestarts(const api::Pod& pod) {
  int32_t n = 0;
  for (const auto& c : pod.init_container_statuses) n += c.restart_count;
  for (const auto& c : pod.container_statuses) n += c.restart_count;
  return n;
}

void AbnormalPodEvents(Pass& p, const api::Pod& pod) {
  if (pod.phase == api::PodPhase::kSucceeded || pod.phase == api::PodPhase::kFailed || pod.meta.deletion_timestamp)
    return;
  const auto& statuses = !pod.container_statuses.empty() ? pod.container_statuses : pod.init_container_statuses;
  if (!statuses.empty()) {
    for (const auto& c : statuses) {
      if (c.terminated && c.exit_code != 0)
        p.Event(kWarning, c.terminated_reason.empty() ? "Error" : c.terminated_reason,
                "Error pod " + pod.meta.name + " container " + c.name + " exitCode: " + std::to_string(c.exit_code) +
                    " terminated message: " + c.terminated_message);
      else if (!c.waiting_message.empty())
        p.Event(kWarning, c.waiting_reason.empty() ? "Waiting" : c.waiting_reason,
                "Error pod " + pod.meta.name + " container " + c.name + " waiting message: " + c.waiting_message);
    }
    return;
  }
  // No container statuses yet: the latest condition that is not True (e.g. Unschedulable).
  const api::PodCondition* latest = nullptr;
  for (const auto& c : pod.conditions)
    if (!latest || (c.last_transition_time &&
                    (!latest->last_transition_time || *c.last_transition_time > *latest->last_transition_time)))
      latest = &c;
  if (latest != nullptr && latest->status != "True" && !latest->message.empty())
    p.Event(kWarning, latest->reason.empty() ? latest->type : latest->reason,
            "Error pod " + pod.meta.name + " condition message: " + latest->message);
}

// One replica type of the spec with its pods sliced by index.
struct TypeState {
  ReplicaType type;
  const api::ReplicaSpec* spec;
  std::vector<std::vector<const api::Pod*>> slices;
  int32_t restartable_failures = 0;  // failed pods the policy would restart
  int32_t permanent_failures = 0;    // failed pods of policy Never (or exit code < 128)
};

// D28: the status a job finishes with counts its pods as they are in the terminal pass, on every
// path that ends it (backoff, deadline, ExitCode, 3.6), so it never keeps the counts of an
// earlier pass. Pods this pass deletes (cleanPodPolicy) are counted as being deleted (Running:
// failed, as in 3.4 d); a Succeeded job counts what is still active as succeeded at once (3.3
// step 3, which upstream applies one pass later). REQUIRES: the terminal condition and the
// clean-up deletions are in `p`. Later passes of the finished job leave the counts alone.
void CountTerminal(Pass& p, const std::vector<TypeState>& types) {
  const bool succeeded = IsSucceeded(p.status);
  std::set<std::string> deleting;
  for (const auto& d : p.plan.delete_pods) deleting.insert(d.name);
  for (const auto& t : types) {
    api::ReplicaStatus& rs = p.status.replica_statuses[std::string(api::ReplicaTypeName(t.type))];
    api::ReplicaStatus counts;
    counts.restarts = rs.restarts;
    counts.disruptions = rs.disruptions;
    for (const auto& slice : t.slices)
      for (const api::Pod* pod : slice) {
        if (!succeeded && pod->phase == api::PodPhase::kRunning && deleting.contains(pod->meta.name))
          ++counts.failed;
        else
          CountPod(*pod, &counts);
      }
    if (succeeded) {
      counts.succeeded += counts.active;
      counts.active = 0;
    }
    rs = counts;
  }
}

// D21: one disruption of a pod of type `type`: counted in replicaStatuses.<Rt>.disruptions
// (never in `restarts`), a Warning whose reason names it, and a record for the metric.
void CountDisruption(Pass& p, ReplicaType type, const PodDisruption& d) {
  p.status.replica_statuses[std::string(api::ReplicaTypeName(type))].disruptions++;
  std::string message = "Pod " + p.job.metadata.ns + "/" + d.pod + " was disrupted (" + d.reason +
                        (d.message.empty() ? "" : ": " + d.message) +
                        "); it is recreated and not counted against backoffLimit";
  p.Event(kWarning, d.reason, std::move(message));
  p.plan.disruptions.push_back(d);
}

// D29: the status as observed, with restarts and disruptions raised to what kCountersAnnotation
// says (the status may have lost them to a CRD that prunes them).
api::JobStatus WithCountersAnnotation(const api::TfJob& job) {
  api::JobStatus st = job.status;
  auto it = job.metadata.annotations.find(std::string(kCountersAnnotation));
  if (it == job.metadata.annotations.end()) return st;
  nlohmann::json j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return st;
  auto read = [](const nlohmann::json& counts, const char* field) -> int32_t {
    auto f = counts.find(field);
    if (f == counts.end() || !f->is_number_integer()) return 0;
    int64_t v = f->get<int64_t>();
    return v < 0                                     ? 0
           : v > std::numeric_limits<int32_t>::max() ? std::numeric_limits<int32_t>::max()
                                                     : static_cast<int32_t>(v);
  };
  for (auto t = j.begin(); t != j.end(); ++t) {
    if (!t->is_object() || !api::ParseReplicaType(t.key())) continue;
    int32_t restarts = read(*t, "restarts"), disruptions = read(*t, "disruptions");
    if (restarts == 0 && disruptions == 0) continue;
    api::ReplicaStatus& rs = st.replica_statuses[t.key()];
    rs.restarts = std::max(rs.restarts, restarts);
    rs.disruptions = std::max(rs.disruptions, disruptions);
  }
  return st;
}

// D29: kCountersAnnotation for `st`: the non-zero counters, keys sorted; "" when there are none.
std::string CountersAnnotation(const api::JobStatus& st) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [type, rs] : st.replica_statuses) {
    nlohmann::json c = nlohmann::json::object();
    if (rs.restarts != 0) c["restarts"] = rs.restarts;
    if (rs.disruptions != 0) c["disruptions"] = rs.disruptions;
    if (!c.empty()) j[type] = std::move(c);
  }
  return j.empty() ? "" : j.dump();
}

std::string ExitedMessage(const api::TfJob& job, const api::Pod& pod, int32_t code) {
  return "Pod: " + job.metadata.ns + "." + pod.meta.name + " exited with code " + std::to_string(code);
}

// D28: when the job ends, one Normal ExitedWithCode for every pod whose tensorflow container has
// terminated and that this pass has not reported yet (a pod that exited 0, or failed under
// Never), so the chief's or worker 0's exit 0 is on record once (upstream repeats it on every
// reconcile, D9).
void ReportExits(Pass& p, const std::vector<TypeState>& types) {
  for (const auto& t : types)
    for (const auto& slice : t.slices)
      for (const api::Pod* pod : slice) {
        auto code = TensorflowExitCode(*pod);
        if (!code) continue;
        RenderEvent e{kNormal, "ExitedWithCode", ExitedMessage(p.job, *pod, *code)};
        if (std::find(p.plan.events.begin(), p.plan.events.end(), e) == p.plan.events.end())
          p.plan.events.push_back(std::move(e));
      }
}

}  // namespace

std::string RunningMessage(const api::TfJob& job) {
  return "TFJob " + Key(job) + " is running.";
}
std::string SucceededMessage(const api::TfJob& job) {
  return "TFJob " + Key(job) + " successfully completed.";
}

Plan Reconcile(const ObservedState& observed, const ReconcileOptions& options) {
  const api::TfJob& raw = observed.job;
  Plan skip;
  skip.skip = true;
  // 3.2 step 2: another controller's job. D18: nothing for a job being deleted.
  if (raw.spec.run_policy.managed_by && *raw.spec.run_policy.managed_by != api::kManagedByUs) return skip;
  if (raw.metadata.deletion_timestamp) return skip;

  const api::JobStatus base = WithCountersAnnotation(raw);  // what "unchanged" means (D29)
  Pass p{observed, options, raw, base, {}, {}, {}, observed.now};
  const std::string& name = raw.metadata.name;
  if (!FindCondition(p.status, kConditionCreated)) {
    p.Condition(kConditionCreated, "True", "TFJobCreated", "TFJob " + name + " is created.");
    // D22: what upstream admits and runs but looks wrong, once, with the Created condition.
    if (auto warnings = api::SpecWarnings(raw); !warnings.empty()) {
      std::string message = "TFJob " + Key(raw) + " runs with warnings: ";
      for (size_t i = 0; i < warnings.size(); ++i) message += (i > 0 ? "; " : "") + warnings[i];
      p.Event(kWarning, "TFJobSpecWarning", std::move(message));
    }
  }

  // D13: an invalid job fails with every error listed; nothing is created. A finished job keeps
  // its outcome (D5) even if its spec is edited into an invalid one later: it only gets cleaned up.
  if (api::FieldErrors errors = api::ValidateTfJob(raw); !errors.empty() && !IsFinished(p.status)) {
    std::string message = FailedValidationMessage(raw, errors);
    Finish(p, kConditionFailed.data(), "TFJobFailedValidation", message);
    p.Event(kWarning, "TFJobFailedValidation", message);
    if (!(p.status == base)) p.plan.status = p.status;
    return p.plan;
  }
  api::SetDefaults(p.job);
  const api::TfJob& job = p.job;

  for (const auto& pod : observed.pods)
    if (pod.meta.controller_uid == job.metadata.uid) p.pods.push_back(&pod);  // R14: never another owner's
  for (const auto& svc : observed.services)
    if (svc.meta.controller_uid == job.metadata.uid) p.services[svc.meta.name] = &svc;

  auto finalize = [&]() -> Plan {
    if (!(p.status == base)) p.plan.status = p.status;
    if (options.counters_in_annotation) {
      std::string counters = CountersAnnotation(p.status);
      auto it = raw.metadata.annotations.find(std::string(kCountersAnnotation));
      if (!counters.empty() && (it == raw.metadata.annotations.end() || it->second != counters))
        p.plan.counters_annotation = std::move(counters);
    }
    return std::move(p.plan);
  };

  // 3.3 step 3: finished. D18: never recreate anything.
  if (IsFinished(p.status)) {
    CleanUp(p, true);
    if (IsSucceeded(p.status))
      for (auto& [type, rs] : p.status.replica_statuses) {
        rs.succeeded += rs.active;
        rs.active = 0;
      }
    if (!p.status.completion_time) p.status.completion_time = p.now;
    HandleTtl(p);
    return finalize();
  }

  // 3.12: suspended.
  if (IsJobSuspended(job)) {
    CleanUp(p, false);
    for (auto& [type, rs] : p.status.replica_statuses) rs.active = 0;
    const std::string message = "TFJob " + name + " is suspended.";
    if (IsRunning(p.status)) p.Condition(kConditionRunning, "False", "TFJobSuspended", message);
    if (!IsSuspendedCondition(p.status)) {
      p.Condition(kConditionSuspended, "True", "TFJobSuspended", message);
      p.Event(kNormal, "TFJobSuspended", message);  // D9: on the transition only
    }
    return finalize();
  }
  // 3.3 step 5: resumed.
  if (IsSuspendedCondition(p.status)) {
    const std::string message = "TFJob " + name + " is resumed.";
    p.Condition(kConditionSuspended, "False", "TFJobResumed", message);
    p.status.start_time = p.now;  // D8
    p.Event(kNormal, "TFJobResumed", message);
  }
  if (!p.status.start_time) p.status.start_time = p.now;

  // Per replica type, in the fixed order: slice the pods and decide restarts.
  std::vector<TypeState> types;
  int64_t recreations = 0, in_place = 0;
  for (const auto& [key, spec] : job.spec.replica_specs) {
    auto type = api::ParseReplicaType(key);
    if (!type || !spec) continue;
    auto of_type = FilterPodsForReplicaType(p.pods, api::ReplicaTypeLabel(*type));
    types.push_back({*type, &*spec, SlicePodsByIndex(of_type, api::ReplicasOrDefault(*spec))});
    recreations += p.status.replica_statuses[key].restarts;
    for (const api::Pod* pod : of_type)
      if (pod->phase == api::PodPhase::kRunning && !pod->meta.deletion_timestamp) in_place += InPlaceRestarts(*pod);
  }

  // D21: pods disrupted by others are counted once and recreated whatever the restart policy;
  // backoffLimit never sees them. Deletions the controller noted (a deletionTimestamp or a
  // delete it did not issue), and pods a disruption left Failed (deleted below, recreated by the
  // next pass).
  // A noted pod of an index the spec no longer has is a scale-down (by us, or by a previous
  // operator process), not a disruption.
  for (const PodDisruption& d : observed.disruptions)
    for (const auto& t : types)
      if (api::ReplicaTypeLabel(t.type) == d.replica_type && d.index >= 0 && d.index < api::ReplicasOrDefault(*t.spec))
        CountDisruption(p, t.type, d);
  std::vector<const api::Pod*> disrupted;

  // Restart decisions (3.4 c with D2, D6).
  const auto& backoff_limit = job.spec.run_policy.backoff_limit;
  std::string limit_message;
  std::vector<const api::Pod*> to_restart;
  std::vector<std::pair<TypeState*, const api::Pod*>> exit_code_failures;
  for (auto& t : types) {
    const std::string& policy = t.spec->restart_policy;
    for (const auto& slice : t.slices) {
      if (slice.size() != 1) continue;
      const api::Pod* pod = slice[0];
      if (pod->phase != api::PodPhase::kFailed || pod->meta.deletion_timestamp) continue;
      if (!pod->disruption_reason.empty()) {
        CountDisruption(p, t.type,
                        {pod->meta.name, pod->meta.uid, pod->meta.replica_type, pod->meta.replica_index,
                         pod->disruption_reason, pod->disruption_message});
        disrupted.push_back(pod);
        continue;
      }
      bool restartable = policy == api::kRestartOnFailure || policy == api::kRestartAlways ||
                         (policy == api::kRestartExitCode && IsRetryableExitCode(RestartExitCode(*pod)));
      if (restartable) {
        ++t.restartable_failures;
        to_restart.push_back(pod);
      } else if (policy == api::kRestartExitCode) {
        exit_code_failures.emplace_back(&t, pod);
      } else {
        ++t.permanent_failures;
      }
    }
  }
  if (backoff_limit) {
    int64_t total = recreations + in_place;
    if (!to_restart.empty() && total + static_cast<int64_t>(to_restart.size()) > *backoff_limit)
      limit_message = "Job " + name + " has failed because it has reached the specified backoff limit";
    else if (in_place > 0 && in_place >= *backoff_limit)
      limit_message = "Job " + name + " has failed because it has reached the specified backoff limit";
  }
  // D3: the deadline, requeued at its due time.
  if (limit_message.empty() && job.spec.run_policy.active_deadline_seconds && p.status.start_time) {
    std::optional<api::Time> due =
        AddSecondsOrNever(*p.status.start_time, *job.spec.run_policy.active_deadline_seconds);
    if (due && p.now >= *due)
      limit_message = "Job " + name + " has failed because it was active longer than specified deadline";
    else if (due)
      MinRequeue(p.plan, std::chrono::duration_cast<std::chrono::nanoseconds>(*due - p.now));
  }
  if (!limit_message.empty()) {  // 3.3 step 7 (v1.9.4 order, D4, D7)
    p.plan.requeue_after.reset();
    ReportExits(p, types);
    Finish(p, kConditionFailed.data(), "TFJobFailed", limit_message);
    p.Event(kWarning, "TFJobFailed", limit_message);
    p.plan.counters.failed++;
    CleanUp(p, true);
    CountTerminal(p, types);
    HandleTtl(p);
    return finalize();
  }

  // ExitCode < 128: the job fails now (3.4 c), unless the success rule holds below (D5).
  std::string exit_code_failure;
  for (const auto& [t, pod] : exit_code_failures) {
    if (auto code = TensorflowExitCode(*pod)) p.Event(kNormal, "ExitedWithCode", ExitedMessage(job, *pod, *code));
    if (exit_code_failure.empty())
      exit_code_failure = "job \"" + name + "\" is failing because \"" + std::string(api::ReplicaTypeName(t->type)) +
                          "\" replica(s) failed.";
  }

  // Restarts: delete the failed pods; the next pass recreates them (3.4 c).
  std::vector<std::string> restarting_types;
  for (auto& t : types) {
    if (t.restartable_failures == 0) continue;
    restarting_types.emplace_back(api::ReplicaTypeName(t.type));
    p.status.replica_statuses[std::string(api::ReplicaTypeName(t.type))].restarts += t.restartable_failures;
  }
  for (const api::Pod* pod : to_restart) {
    p.plan.delete_pods.push_back({pod->meta.name, pod->meta.uid});
    if (auto code = TensorflowExitCode(*pod)) p.Event(kNormal, "ExitedWithCode", ExitedMessage(job, *pod, *code));
  }
  for (const api::Pod* pod : disrupted) p.plan.delete_pods.push_back({pod->meta.name, pod->meta.uid});
  if (!restarting_types.empty()) {  // D10: fixed order
    std::string list;
    for (size_t i = 0; i < restarting_types.size(); ++i) list += (i > 0 ? ", " : "") + restarting_types[i];
    std::string message = "job " + name + " is restarting because " + list + " replica(s) failed.";
    p.Condition(kConditionRestarting, "True", "TFJobRestarting", message);
    p.Event(kWarning, "TFJobRestarting", message);
    p.plan.counters.restarted += static_cast<int>(to_restart.size());
  }

  // Gang scheduling (2.8).
  const GangScheduler gang = GangSchedulerFor(options.render.gang_scheduler_name);
  bool wait_for_gang = false;
  if (gang != GangScheduler::kNone) {
    std::string existing_queue = observed.pod_group ? observed.pod_group->queue : "";
    auto desired = RenderPodGroup(job, options.render, existing_queue, observed.priority_classes);
    if (!observed.pod_group) {
      p.plan.create_pod_group = desired;
    } else if (gang != GangScheduler::kKubernetes && (*desired)["spec"] != observed.pod_group->spec) {
      p.plan.update_pod_group = desired;
    }
    if (gang == GangScheduler::kVolcano &&
        (!observed.pod_group || observed.pod_group->phase.empty() || observed.pod_group->phase == "Pending")) {
      wait_for_gang = true;
      p.status.last_reconcile_time = p.now;
    }
    if (gang == GangScheduler::kKubernetes && !observed.workload_exists)
      p.plan.create_workload = RenderWorkload(job, options.render);
  }

  // Creates and scale-down deletes (3.4, 3.5). D18 holds: finished and deleting jobs returned.
  std::set<std::string> deleting;
  for (const auto& d : p.plan.delete_pods) deleting.insert(d.name);
  const TfConfigGenerator tf_config(job, options.render.tf_config);
  for (auto& t : types) {
    const int32_t replicas = api::ReplicasOrDefault(*t.spec);
    for (int32_t i = 0; i < static_cast<int32_t>(t.slices.size()); ++i) {
      const auto& slice = t.slices[static_cast<size_t>(i)];
      if (i >= replicas) {
        for (const api::Pod* pod : slice)
          if (!pod->meta.deletion_timestamp && !deleting.contains(pod->meta.name))
            p.plan.delete_pods.push_back({pod->meta.name, pod->meta.uid});
        continue;
      }
      if (slice.empty() && !wait_for_gang) {
        RenderedPod rendered = RenderPod(job, t.type, i, options.render, tf_config);
        for (auto& e : rendered.events) p.plan.events.push_back(std::move(e));
        p.plan.create_pods.push_back(
            {ReplicaName(job.metadata.name, t.type, i), t.type, i, std::move(rendered.object)});
      }
      if (slice.size() == 1) AbnormalPodEvents(p, *slice[0]);
    }
    for (int32_t i = 0; i < replicas; ++i) {
      std::string svc_name = ReplicaName(job.metadata.name, t.type, i);
      if (p.services.contains(svc_name) || wait_for_gang) continue;
      auto svc = RenderService(job, t.type, i);
      if (svc.ok()) p.plan.create_services.push_back({svc_name, std::move(svc).value()});
    }
    for (const auto& [svc_name, svc] : p.services) {
      if (svc->meta.replica_type == api::ReplicaTypeLabel(t.type) && svc->meta.replica_index >= replicas &&
          !svc->meta.deletion_timestamp)
        p.plan.delete_services.push_back({svc_name, svc->meta.uid});
    }
  }
  // De-duplicate warnings repeated for every pod of a type (e.g. SetPodTemplateRestartPolicy).
  {
    std::vector<RenderEvent> unique;
    for (auto& e : p.plan.events)
      if (std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(std::move(e));
    p.plan.events = std::move(unique);
  }

  // 3.6 status, with D5 (success first; at most one terminal condition) and D6.
  std::vector<const api::Pod*> all = p.pods;
  const bool worker0 = IsWorker0Completed(job, all);
  bool has_chief = false;
  for (const auto& t : types) has_chief = has_chief || api::IsChiefOrMaster(t.type);
  bool succeeded = false, running = false;
  std::string failure;
  for (auto& t : types) {
    const std::string key(api::ReplicaTypeName(t.type));
    api::ReplicaStatus counts;
    counts.restarts = p.status.replica_statuses[key].restarts;
    counts.disruptions = p.status.replica_statuses[key].disruptions;
    for (const auto& slice : t.slices)
      for (const api::Pod* pod : slice) CountPod(*pod, &counts);
    p.status.replica_statuses[key] = counts;
    const int32_t expected = api::ReplicasOrDefault(*t.spec) - counts.succeeded;
    if (has_chief) {
      if (api::IsChiefOrMaster(t.type)) {
        if (counts.active > 0) running = true;
        if (expected <= 0) succeeded = true;
      }
    } else if (t.type == ReplicaType::kWorker) {
      if (expected <= 0 || (worker0 && job.spec.success_policy != api::kSuccessPolicyAllWorkers))
        succeeded = true;
      else if (counts.active > 0)
        running = true;
    }
    // D6: only failures nobody restarts fail the job; dynamic workers may fail (docs/semantics.md 1.2).
    if (t.permanent_failures > 0 && failure.empty() &&
        !(job.spec.enable_dynamic_worker && t.type == ReplicaType::kWorker))
      failure = "TFJob " + Key(job) + " has failed because " + std::to_string(t.permanent_failures) + " " + key +
                " replica(s) failed.";
  }
  if (failure.empty() && !exit_code_failure.empty()) failure = exit_code_failure;
  if (succeeded || !failure.empty()) ReportExits(p, types);
  if (succeeded) {
    Finish(p, kConditionSucceeded.data(), "TFJobSucceeded", SucceededMessage(job));
    p.Event(kNormal, "TFJobSucceeded", SucceededMessage(job));
    if (!failure.empty()) p.Event(kWarning, "TFJobFailed", failure);  // D5: recorded, not terminal
    p.plan.counters.successful++;
    CleanUp(p, true);
    CountTerminal(p, types);
    p.plan.create_pods.clear();
    p.plan.create_services.clear();
    HandleTtl(p);
  } else if (!failure.empty()) {
    // With backoffLimit 0, upstream's backoff check sees the new failed pod first and fails the
    // job with the backoff message, whatever the restart policy (docs/semantics.md 3.8).
    if (backoff_limit && *backoff_limit == 0)
      failure = "Job " + name + " has failed because it has reached the specified backoff limit";
    Finish(p, kConditionFailed.data(), "TFJobFailed", failure);
    p.Event(kWarning, "TFJobFailed", failure);  // D7
    p.plan.counters.failed++;
    CleanUp(p, true);
    CountTerminal(p, types);
    p.plan.create_pods.clear();
    p.plan.create_services.clear();
    HandleTtl(p);
  } else if (running && restarting_types.empty()) {
    p.Condition(kConditionRunning, "True", "TFJobRunning", RunningMessage(job));
  }
  if (IsFinished(p.status)) {
    if (gang != GangScheduler::kNone) {
      p.plan.create_pod_group.reset();
      p.plan.update_pod_group.reset();
      p.plan.create_workload.reset();
    }
  }
  return finalize();
}

}  // namespace tfjob::tfjob::core
