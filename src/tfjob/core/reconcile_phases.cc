#include "tfjob/core/reconcile_phases.h"

#include <algorithm>
#include <limits>

#include "api/defaults.h"
#include "api/object_key.h"
#include "api/validation.h"
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/gang_scheduler.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/pod_group.h"
#include "tfjob/core/replica_pods.h"

namespace tfjob::core {
namespace {

using api::ReplicaType;
using std::chrono::seconds;

constexpr api::EventType kNormal = api::EventType::kNormal;
constexpr api::EventType kWarning = api::EventType::kWarning;

std::string Joined(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? std::string(separator) : "") + parts[i];
  return out;
}

std::string FailedValidationMessage(const api::TfJob& job, const api::FieldErrors& errors) {
  std::vector<std::string> parts;
  for (const auto& e : errors) parts.push_back(e.ToString());
  return "TFJob " + api::JobKey(job) + " failed validation: " + Joined(parts, "; ");
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

bool IsRestartable(std::optional<api::RestartPolicy> policy, const api::Pod& pod) {
  return policy == api::RestartPolicy::kOnFailure || policy == api::RestartPolicy::kAlways ||
         (policy == api::RestartPolicy::kExitCode && IsRetryableExitCode(RestartExitCode(pod)));
}

std::string BackoffLimitMessage(const std::string& name) {
  return "Job " + name + " has failed because it has reached the specified backoff limit";
}

// The latest pod condition (by lastTransitionTime, the first of equals).
const api::PodCondition* LatestCondition(const api::Pod& pod) {
  const api::PodCondition* latest = nullptr;
  for (const auto& c : pod.conditions)
    if (!latest || (c.last_transition_time &&
                    (!latest->last_transition_time || *c.last_transition_time > *latest->last_transition_time)))
      latest = &c;
  return latest;
}

// The Warning of a container that exited non-zero or waits with a message.
std::optional<RenderEvent> ContainerEvent(const api::Pod& pod, const api::ContainerStatus& c) {
  const std::string prefix = "Error pod " + pod.meta.name + " container " + c.name;
  if (c.terminated && c.exit_code != 0)
    return RenderEvent{
        kWarning, c.terminated_reason.empty() ? "Error" : c.terminated_reason,
        prefix + " exitCode: " + std::to_string(c.exit_code) + " terminated message: " + c.terminated_message};
  if (!c.waiting_message.empty())
    return RenderEvent{kWarning, c.waiting_reason.empty() ? "Waiting" : c.waiting_reason,
                       prefix + " waiting message: " + c.waiting_message};
  return std::nullopt;
}

// Scale-down: the pods and services of indices at or past `replicas`.
void PlanScaleDown(const TypeState& t, const Children& children, const std::set<std::string>& deleting,
                   ChildrenPlan& out) {
  const int32_t replicas = api::ReplicasOrDefault(*t.spec);
  for (size_t i = static_cast<size_t>(std::max(replicas, 0)); i < t.slices.size(); ++i)
    for (const api::Pod* pod : t.slices[i])
      if (!pod->meta.deletion_timestamp && !deleting.contains(pod->meta.name))
        out.delete_pods.push_back({pod->meta.name, pod->meta.uid});
  for (const auto& [svc_name, svc] : children.services)
    if (svc->meta.replica_type == t.type && svc->meta.replica_index >= replicas && !svc->meta.deletion_timestamp)
      out.delete_services.push_back({svc_name, svc->meta.uid});
}

// The job's success as 3.6 has it: with a Chief/Master its replicas decide, else the workers
// (worker 0 alone unless successPolicy is AllWorkers).
struct TypeVerdict {
  bool succeeded = false;
  bool running = false;
};
TypeVerdict Verdict(const api::TfJob& job, const TypeState& t, const api::ReplicaStatus& counts, bool has_chief,
                    bool worker0) {
  const int32_t expected = api::ReplicasOrDefault(*t.spec) - counts.succeeded;
  TypeVerdict v;
  if (has_chief) {
    if (!api::IsChiefOrMaster(t.type)) return v;
    v.running = counts.active > 0;
    v.succeeded = expected <= 0;
  } else if (t.type == ReplicaType::kWorker) {
    v.succeeded = expected <= 0 || (worker0 && job.spec.success_policy != api::SuccessPolicy::kAllWorkers);
    v.running = !v.succeeded && counts.active > 0;
  }
  return v;
}

}  // namespace

bool ShouldSkip(const api::TfJob& raw, bool multikueue_copy) {
  const auto& managed_by = raw.spec.run_policy.managed_by;
  if (managed_by && *managed_by != api::kManagedByUs && !(multikueue_copy && *managed_by == api::kManagedByMultiKueue))
    return true;
  return raw.metadata.deletion_timestamp.has_value();
}

Admission Admit(const api::TfJob& raw, api::JobStatus status, api::Time now) {
  Admission out{std::move(status), {}, false};
  if (!FindCondition(out.status, kConditionCreated)) {
    SetCondition(out.status, kConditionCreated, "True", "TFJobCreated", "TFJob " + raw.metadata.name + " is created.",
                 now);
    // D22: what upstream admits and runs but looks wrong, once, with the Created condition.
    if (auto warnings = api::SpecWarnings(raw); !warnings.empty())
      out.events.push_back({kWarning, "TFJobSpecWarning",
                            "TFJob " + api::JobKey(raw) + " runs with warnings: " + Joined(warnings, "; ")});
  }
  // D13: an invalid job fails with every error listed; nothing is created. A finished job keeps
  // its outcome (D5) even if its spec is edited into an invalid one later: it only gets cleaned up.
  if (api::FieldErrors errors = api::ValidateTfJob(raw); !errors.empty() && !IsFinished(out.status)) {
    std::string message = FailedValidationMessage(raw, errors);
    if (!out.status.completion_time) out.status.completion_time = now;
    SetCondition(out.status, kConditionFailed, "True", "TFJobFailedValidation", message, now);
    out.events.push_back({kWarning, "TFJobFailedValidation", std::move(message)});
    out.invalid = true;
  }
  return out;
}

Children ClassifyChildren(const api::TfJob& job, const std::vector<api::Pod>& pods,
                          const std::vector<api::Service>& services) {
  Children out;
  for (const auto& pod : pods)
    if (pod.meta.controller_uid == job.metadata.uid) out.pods.push_back(&pod);
  for (const auto& svc : services)
    if (svc.meta.controller_uid == job.metadata.uid) out.services[svc.meta.name] = &svc;
  return out;
}

Replicas SliceReplicas(const api::TfJob& job, const std::vector<const api::Pod*>& pods, const api::JobStatus& status) {
  Replicas out;
  for (const auto& [type, spec] : api::ReplicaSpecsByType(job.spec)) {
    auto of_type = FilterPodsForReplicaType(pods, type);
    out.types.push_back({type, spec, SlicePodsByIndex(of_type, api::ReplicasOrDefault(*spec))});
    if (auto rs = status.replica_statuses.find(std::string(api::ReplicaTypeName(type)));
        rs != status.replica_statuses.end())
      out.recreations += rs->second.restarts;
    for (const api::Pod* pod : of_type)
      if (pod->phase == api::PodPhase::kRunning && !pod->meta.deletion_timestamp) out.in_place += InPlaceRestarts(*pod);
  }
  return out;
}

bool EndsJob(const api::JobStatus& observed, const std::optional<api::JobStatus>& planned) {
  return planned && IsFinished(*planned) && !IsFinished(observed);
}

std::vector<CountedDisruption> CountNotedDisruptions(const std::vector<PodDisruption>& noted,
                                                     const std::vector<TypeState>& types) {
  std::vector<CountedDisruption> out;
  for (const PodDisruption& d : noted)
    for (const auto& t : types)
      if (d.replica_type == t.type && d.index >= 0 && d.index < api::ReplicasOrDefault(*t.spec))
        out.push_back({t.type, d});
  return out;
}

RenderEvent DisruptionEvent(const std::string& ns, const PodDisruption& d) {
  return {kWarning, d.reason,
          "Pod " + api::ObjectKey{ns, d.pod}.String() + " was disrupted (" + d.reason +
              (d.message.empty() ? "" : ": " + d.message) + "); it is recreated and not counted against backoffLimit"};
}

RestartDecisions DecideRestarts(const std::vector<TypeState>& types) {
  RestartDecisions out;
  for (const auto& t : types) {
    TypeFailures& failures = out.failures[t.type];
    for (const auto& slice : t.slices) {
      if (slice.size() != 1) continue;
      const api::Pod* pod = slice[0];
      if (pod->phase != api::PodPhase::kFailed || pod->meta.deletion_timestamp) continue;
      if (!pod->disruption_reason.empty()) {
        out.disrupted.push_back({t.type,
                                 {pod->meta.name, pod->meta.uid, pod->meta.replica_type, pod->meta.replica_index,
                                  pod->disruption_reason, pod->disruption_message}});
      } else if (IsRestartable(t.spec->restart_policy.value(), *pod)) {
        ++failures.restartable;
        out.to_restart.push_back(pod);
      } else if (t.spec->restart_policy == api::RestartPolicy::kExitCode) {
        out.exit_code_failures.emplace_back(t.type, pod);
      } else {
        ++failures.permanent;
      }
    }
  }
  return out;
}

StalledDeletions FinishStalledDeletions(const std::vector<const api::Pod*>& pods, api::Time now) {
  StalledDeletions out;
  for (const api::Pod* pod : pods) {
    const bool ended = pod->phase == api::PodPhase::kFailed || pod->phase == api::PodPhase::kSucceeded;
    if (!ended || !pod->meta.deletion_timestamp) continue;
    const api::Time due = *pod->meta.deletion_timestamp + kStalledDeletionAfter;
    if (now >= due) {
      out.delete_pods.push_back({pod->meta.name, pod->meta.uid});
      continue;
    }
    const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(due - now);
    out.requeue_after = out.requeue_after ? std::min(*out.requeue_after, wait) : wait;
  }
  return out;
}

LimitCheck CheckLimits(const api::TfJob& job, const Replicas& replicas, size_t restarts,
                       std::optional<api::Time> start_time, api::Time now) {
  LimitCheck out;
  const std::string& name = job.metadata.name;
  if (const auto& limit = job.spec.run_policy.backoff_limit) {
    const int64_t total = replicas.recreations + replicas.in_place;
    if ((restarts > 0 && total + static_cast<int64_t>(restarts) > *limit) ||
        (replicas.in_place > 0 && replicas.in_place >= *limit))
      out.failure = BackoffLimitMessage(name);
  }
  // D3: the deadline, requeued at its due time.
  const auto& deadline = job.spec.run_policy.active_deadline_seconds;
  if (!out.failure.empty() || !deadline || !start_time) return out;
  std::optional<api::Time> due = AddSecondsOrNever(*start_time, *deadline);
  if (due && now >= *due)
    out.failure = "Job " + name + " has failed because it was active longer than specified deadline";
  else if (due)
    out.requeue_after = std::chrono::duration_cast<std::chrono::nanoseconds>(*due - now);
  return out;
}

std::string ExitCodeFailure(const api::TfJob& job, const RestartDecisions& decisions) {
  if (decisions.exit_code_failures.empty()) return "";
  return "job \"" + job.metadata.name + "\" is failing because \"" +
         std::string(api::ReplicaTypeName(decisions.exit_code_failures.front().first)) + "\" replica(s) failed.";
}

GangPlan PlanGang(const api::TfJob& job, const ReconcileOptions& options, const ObservedState& observed) {
  const GangSchedulerPolicy* gang = GangSchedulerFor(options.render.gang_scheduler_name);
  return gang ? gang->Plan(job, options, observed) : GangPlan{};
}

GangPlan PlanCrdPodGroup(const GangSchedulerPolicy& policy, const api::TfJob& job, const ReconcileOptions& options,
                         const ObservedState& observed) {
  GangPlan out;
  const auto& group = observed.pod_group;
  auto desired = policy.RenderPodGroup(job, options.render, group ? group->queue : "", observed.priority_classes);
  if (!group)
    out.create_pod_group = desired;
  else if ((*desired)["spec"] != group->spec)
    out.update_pod_group = desired;
  return out;
}

ChildrenPlan PlanChildren(const api::TfJob& job, const std::vector<TypeState>& types, const Children& children,
                          const std::set<std::string>& deleting, bool wait, const RenderOptions& options) {
  ChildrenPlan out;
  for (const auto& t : types) {
    const int32_t replicas = api::ReplicasOrDefault(*t.spec);
    PlanScaleDown(t, children, deleting, out);
    for (int32_t i = 0; i < std::min(replicas, static_cast<int32_t>(t.slices.size())); ++i) {
      const auto& slice = t.slices[static_cast<size_t>(i)];
      if (slice.empty() && !wait) {
        for (auto& e : PodTemplateEvents(job, t.type, options)) out.events.push_back(std::move(e));
        out.create_pods.push_back({ReplicaName(job.metadata.name, t.type, i), t.type, i});
      }
      if (slice.size() == 1)
        for (auto& e : AbnormalPodEvents(*slice[0])) out.events.push_back(std::move(e));
    }
    for (int32_t i = 0; i < replicas && !wait; ++i) {
      std::string svc_name = ReplicaName(job.metadata.name, t.type, i);
      if (children.services.contains(svc_name) || !HasService(job, t.type)) continue;
      out.create_services.push_back({std::move(svc_name), t.type, i});
    }
  }
  return out;
}

std::vector<RenderEvent> AbnormalPodEvents(const api::Pod& pod) {
  std::vector<RenderEvent> out;
  if (pod.phase == api::PodPhase::kSucceeded || pod.phase == api::PodPhase::kFailed || pod.meta.deletion_timestamp)
    return out;
  const auto& statuses = !pod.container_statuses.empty() ? pod.container_statuses : pod.init_container_statuses;
  for (const auto& c : statuses)
    if (auto e = ContainerEvent(pod, c)) out.push_back(std::move(*e));
  if (!statuses.empty()) return out;
  // No container statuses yet: the latest condition that is not True (e.g. Unschedulable).
  const api::PodCondition* latest = LatestCondition(pod);
  if (latest != nullptr && latest->status != "True" && !latest->message.empty())
    out.push_back({kWarning, latest->reason.empty() ? latest->type : latest->reason,
                   "Error pod " + pod.meta.name + " condition message: " + latest->message});
  return out;
}

Outcome ComputeOutcome(const api::TfJob& job, const std::vector<TypeState>& types,
                       const std::map<api::ReplicaType, TypeFailures>& failures, const api::JobStatus& status,
                       const std::vector<const api::Pod*>& pods) {
  Outcome out;
  const bool worker0 = IsWorker0Completed(job, pods);
  const bool has_chief =
      std::any_of(types.begin(), types.end(), [](const TypeState& t) { return api::IsChiefOrMaster(t.type); });
  for (const auto& t : types) {
    const std::string key(api::ReplicaTypeName(t.type));
    api::ReplicaStatus counts;
    if (auto rs = status.replica_statuses.find(key); rs != status.replica_statuses.end()) {
      counts.restarts = rs->second.restarts;
      counts.disruptions = rs->second.disruptions;
    }
    for (const auto& slice : t.slices)
      for (const api::Pod* pod : slice) CountPod(*pod, &counts);
    out.replica_statuses[key] = counts;
    const TypeVerdict v = Verdict(job, t, counts, has_chief, worker0);
    out.succeeded = out.succeeded || v.succeeded;
    out.running = out.running || v.running;
    // D6: only failures nobody restarts fail the job; dynamic workers may fail (docs/semantics.md 1.2).
    auto f = failures.find(t.type);
    const int32_t permanent = f == failures.end() ? 0 : f->second.permanent;
    if (permanent > 0 && out.failure.empty() && !(job.spec.enable_dynamic_worker && t.type == ReplicaType::kWorker))
      out.failure = "TFJob " + api::JobKey(job) + " has failed because " + std::to_string(permanent) + " " + key +
                    " replica(s) failed.";
  }
  return out;
}

CleanUpPlan CleanUp(const api::TfJob& job, const Children& children, const ReconcileOptions& options,
                    const ObservedState& observed, bool finished) {
  CleanUpPlan out;
  // Unset or unknown: nothing (defaulting makes an unknown value All, D22).
  const auto& set = job.spec.run_policy.clean_pod_policy;
  const api::CleanPodPolicy policy =
      set ? set->value().value_or(api::CleanPodPolicy::kNone) : api::CleanPodPolicy::kNone;
  for (const api::Pod* pod : children.pods) {
    if (pod->meta.deletion_timestamp) continue;
    bool remove = !finished || policy == api::CleanPodPolicy::kAll ||
                  (policy == api::CleanPodPolicy::kRunning &&
                   (pod->phase == api::PodPhase::kRunning || pod->phase == api::PodPhase::kPending));
    if (!remove) continue;
    out.delete_pods.push_back({pod->meta.name, pod->meta.uid});
    if (auto s = children.services.find(pod->meta.name); s != children.services.end())
      out.delete_services.push_back({s->second->meta.name, s->second->meta.uid});
  }
  CleanUpGang(options, observed, finished, out);
  return out;
}

// CleanUp's gang part: every gang object that exists.
void CleanUpGang(const ReconcileOptions& options, const ObservedState& observed, bool finished, CleanUpPlan& out) {
  const GangSchedulerPolicy* gang = GangSchedulerFor(options.render.gang_scheduler_name);
  if (gang && observed.pod_group) out.delete_pod_group = true;
  // D9: once, while the PodGroup (D33: a member PodGroup) still exists (upstream repeats it on
  // every reconcile).
  if (gang && finished && (observed.pod_group || !observed.member_pod_groups.empty()))
    out.events.push_back({kNormal, "JobTerminated", "Job has been terminated. Deleting PodGroup"});
  // D33: the members, then the CompositePodGroup (whatever shape this pass would render: a job
  // changed under it still loses what it has).
  for (const auto& [name, group] : observed.member_pod_groups) out.composite.delete_members.push_back(name);
  if (gang) gang->CleanUp(observed, out);  // the Workload, D33's CompositePodGroup
}

// Pods this pass deletes (cleanPodPolicy) are counted as being deleted (Running: failed, as in
// 3.4 d); a Succeeded job counts what is still active as succeeded at once (3.3 step 3, which
// upstream applies one pass later).
std::map<std::string, api::ReplicaStatus> TerminalCounts(const api::JobStatus& status,
                                                         const std::vector<TypeState>& types,
                                                         const std::vector<ChildDeletion>& deleting) {
  const bool succeeded = IsSucceeded(status);
  std::set<std::string> names;
  for (const auto& d : deleting) names.insert(d.name);
  std::map<std::string, api::ReplicaStatus> out = status.replica_statuses;
  for (const auto& t : types) {
    api::ReplicaStatus& rs = out[std::string(api::ReplicaTypeName(t.type))];
    api::ReplicaStatus counts;
    counts.restarts = rs.restarts;
    counts.disruptions = rs.disruptions;
    for (const auto& slice : t.slices)
      for (const api::Pod* pod : slice) {
        if (!succeeded && pod->phase == api::PodPhase::kRunning && names.contains(pod->meta.name))
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
  return out;
}

std::string ExitedMessage(const api::TfJob& job, const api::Pod& pod, int32_t code) {
  return "Pod: " + job.metadata.ns + "." + pod.meta.name + " exited with code " + std::to_string(code);
}

// So that the chief's or worker 0's exit 0 is on record once (upstream repeats it on every
// reconcile, D9).
std::vector<RenderEvent> ExitEvents(const api::TfJob& job, const std::vector<TypeState>& types,
                                    const std::vector<RenderEvent>& events) {
  std::vector<RenderEvent> out;
  for (const auto& t : types)
    for (const auto& slice : t.slices)
      for (const api::Pod* pod : slice) {
        auto code = TensorflowExitCode(*pod);
        if (!code) continue;
        RenderEvent e{kNormal, "ExitedWithCode", ExitedMessage(job, *pod, *code)};
        if (std::find(events.begin(), events.end(), e) == events.end() &&
            std::find(out.begin(), out.end(), e) == out.end())
          out.push_back(std::move(e));
      }
  return out;
}

TtlDecision DecideTtl(const api::TfJob& job, const api::JobStatus& status, api::Time now) {
  TtlDecision out;
  const auto& ttl = job.spec.run_policy.ttl_seconds_after_finished;
  if (!ttl || !status.completion_time) return out;
  std::optional<api::Time> due = AddSecondsOrNever(*status.completion_time, *ttl);
  if (!due) return out;
  if (now >= *due)
    out.delete_job = true;
  else
    out.requeue_after = std::chrono::duration_cast<std::chrono::nanoseconds>(*due - now);
  return out;
}

std::optional<std::chrono::nanoseconds> TimeUntilDue(const api::TfJob& job, api::Time now) {
  if (ShouldSkip(job)) return std::nullopt;
  if (IsFinished(job.status)) {
    TtlDecision ttl = DecideTtl(job, job.status, now);
    return ttl.delete_job ? std::chrono::nanoseconds(0) : ttl.requeue_after;
  }
  const auto& deadline = job.spec.run_policy.active_deadline_seconds;
  if (IsJobSuspended(job) || !deadline || !job.status.start_time) return std::nullopt;
  std::optional<api::Time> due = AddSecondsOrNever(*job.status.start_time, *deadline);
  if (!due) return std::nullopt;
  return std::max(std::chrono::duration_cast<std::chrono::nanoseconds>(*due - now), std::chrono::nanoseconds(0));
}

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

std::vector<RenderEvent> UniqueEvents(std::vector<RenderEvent> events) {
  std::vector<RenderEvent> unique;
  for (auto& e : events)
    if (std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(std::move(e));
  return unique;
}

}  // namespace tfjob::core
