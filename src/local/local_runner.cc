#include "local/local_runner.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "local/failure_reason.h"
#include "local/local_runner_process.h"
#include "local/pod_supervisor.h"
#include "local/pod_zygote.h"
#include "local/replica_view.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/reconcile.h"
#include "tfjob/core/replica_pods.h"

namespace tfjob::local {
namespace {

std::string PathOf(const std::vector<std::string>& env) {
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->starts_with("PATH=")) return it->substr(5);
  return "/usr/bin:/bin";
}

bool Executable(const std::string& cmd, const std::string& path) {
  if (cmd.find('/') != std::string::npos) return access(cmd.c_str(), X_OK) == 0;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && access((dir + "/" + cmd).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

// "10s", "1.5s", "500ms".
std::string BackoffText(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  if (d.count() > 1000) return std::to_string(d.count() / 1000) + "." + std::to_string(d.count() % 1000 / 100) + "s";
  return std::to_string(d.count()) + "ms";
}

int JobRestarts(const api::JobStatus& status) {
  int n = 0;
  for (const auto& [type, rs] : status.replica_statuses) n += rs.restarts;
  return n;
}

std::map<api::ReplicaType, api::RestartPolicy> RestartPolicies(const api::TfJob& job) {
  std::map<api::ReplicaType, api::RestartPolicy> out;
  for (const auto& t : api::ReplicaSpecsByType(job.spec))
    out[t.type] = t.spec->restart_policy.value().value_or(api::RestartPolicy::kNever);
  return out;
}

// As the core decides it (docs/semantics.md 3.4).
bool Restartable(api::RestartPolicy policy, int exit_code) {
  return policy == api::RestartPolicy::kOnFailure || policy == api::RestartPolicy::kAlways ||
         (policy == api::RestartPolicy::kExitCode && core::IsRetryableExitCode(exit_code));
}

// What the core made of a failed attempt of `name` in a pass that planned `deleted` and left the
// job with `after`.
FailureFate FateOf(bool deleted, const api::JobStatus& after, bool restartable) {
  const bool ends = core::IsFinished(after);
  if (deleted && !ends) return FailureFate::kRestarted;
  if (!ends) return FailureFate::kKept;
  if (core::IsSucceeded(after)) return FailureFate::kJobEnded;
  if (!restartable) return FailureFate::kPermanent;
  const std::string& message = after.conditions.empty() ? std::string() : after.conditions.back().message;
  return message.find("reached the specified backoff limit") != std::string::npos ? FailureFate::kBackoffLimit
                                                                                  : FailureFate::kJobEnded;
}

}  // namespace

LocalRunner::LocalRunner(api::TfJob job, RunOptions options, Clock& clock, std::ostream& out)
    : job_(std::move(job)), options_(std::move(options)), clock_(clock), out_(out) {
  if (job_.metadata.ns.empty()) job_.metadata.ns = "default";
  if (job_.metadata.uid.empty()) job_.metadata.uid = "local-" + std::to_string(getpid());
}

LocalRunner::~LocalRunner() {
  StopAll({});
  if (status_read_ >= 0) close(status_read_);
  if (status_write_ >= 0) close(status_write_);
}

// First pass (ports not known yet): every container must be runnable here. Counts the output
// pipes and log files the job needs.
Status LocalRunner::CheckCommands(const std::vector<std::pair<api::ReplicaType, int32_t>>& all, size_t* pipes,
                                  size_t* log_files) {
  const core::PodRenderer renderer(job_, LocalRenderOptions(ports_));
  for (const auto& replica : all) {
    const auto type = replica.first;  // a named copy: lambdas cannot capture a binding (clang 14)
    TFJOB_ASSIGN_OR_RETURN(LocalReplica r, LocalReplicaFor(renderer, type, replica.second));
    size_t n = r.init_containers.size() + r.containers.size();
    *pipes += n;
    if (!options_.logs_dir.empty()) *log_files += n;
    auto check = [&](const LocalContainer& c) -> Status {
      if (!Executable(c.argv[0], PathOf(ProcessEnvironment(options_.base_env, c.env))))
        return InvalidArgumentError("spec.tfReplicaSpecs[" + std::string(api::ReplicaTypeName(type)) + "]: command \"" +
                                    c.argv[0] + "\" not found (or not executable) on this machine");
      return OkStatus();
    };
    for (const auto& c : r.init_containers) TFJOB_RETURN_IF_ERROR(check(c));
    for (const auto& c : r.containers) TFJOB_RETURN_IF_ERROR(check(c));
  }
  return OkStatus();
}

// File descriptors: the soft limit goes up to the hard one (the containers get the old one
// back); then the job (`need` files for `replicas` replicas) must fit, or it would stop
// half-started.
Status LocalRunner::RaiseFileLimit(size_t need, size_t replicas) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  nofile_soft_ = lim.rlim_cur;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur != RLIM_INFINITY && need > lim.rlim_cur)
    return InvalidArgumentError(
        "this job needs about " + std::to_string(need) + " open files (" + std::to_string(replicas) +
        " replicas: a reserved port each, an output pipe " + (options_.logs_dir.empty() ? "" : "and a log file ") +
        "per container), but the limit is " + std::to_string(lim.rlim_cur) + " (ulimit -n); raise it (ulimit -n " +
        std::to_string(need) + ") or run fewer replicas");
  return OkStatus();
}

Status LocalRunner::Prepare() {
  const auto all = AllReplicas(job_);
  size_t pipes = 0, log_files = 0;
  TFJOB_RETURN_IF_ERROR(CheckCommands(all, &pipes, &log_files));
  TFJOB_RETURN_IF_ERROR(RaiseFileLimit(16 + log_files + std::max(all.size(), pipes), all.size()));
  std::vector<std::string> names;
  for (const auto& [type, index] : all) names.push_back(core::ReplicaName(job_.metadata.name, type, index));
  TFJOB_RETURN_IF_ERROR(ports_reserved_.ReserveAll(names));
  for (size_t i = 0; i < all.size(); ++i) ports_[all[i]] = ports_reserved_.port(names[i]);
  // The plan's pods are rendered here, once per replica, by the one renderer of the job: each
  // pass's creates only name them (core::ChildCreation), and CreatePods starts them from replicas_.
  const core::PodRenderer renderer(job_, LocalRenderOptions(ports_));
  for (const auto& [type, index] : all) {
    TFJOB_ASSIGN_OR_RETURN(LocalReplica r, LocalReplicaFor(renderer, type, index));
    outcomes_[r.name] = ReplicaOutcome{.name = r.name, .state = "Pending"};
    replicas_.emplace(r.name, std::move(r));
  }
  TFJOB_RETURN_IF_ERROR(AssignDevices(all));
  if (!options_.logs_dir.empty()) TFJOB_RETURN_IF_ERROR(logs_.Open(options_.logs_dir, replicas_));

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return InvalidArgumentError(ErrnoMessage("status pipe"));
  status_read_ = fds[0];
  status_write_ = fds[1];
  fcntl(status_read_, F_SETFL, O_NONBLOCK);

  std::string image;
  for (const auto& [n, r] : replicas_) image = image.empty() ? r.image : image;
  if (!image.empty()) Print("note: images are not used locally (" + image + "); each replica runs its command here");
  NoteUnappliedResources();
  return OkStatus();
}

// Each replica's GPUs, in render order (worker 0 gets the first devices): kInvalidArgument when
// the job needs more than there are.
Status LocalRunner::AssignDevices(const ReplicaList& all) {
  std::vector<GpuNeed> needs;
  for (const auto& [type, index] : all) {
    const LocalReplica& r = replicas_.at(core::ReplicaName(job_.metadata.name, type, index));
    GpuNeed need{r.name, r.type, {}, {}};
    for (const auto& c : r.init_containers) need.init_containers.push_back(c.gpus);
    for (const auto& c : r.containers) need.containers.push_back(c.gpus);
    needs.push_back(std::move(need));
  }
  TFJOB_ASSIGN_OR_RETURN(gpus_, AssignGpus(options_.gpus, needs));
  return OkStatus();
}

// "note: ..." naming every resources field of the job that a local run does not apply, with the
// replica types that set it.
void LocalRunner::NoteUnappliedResources() {
  std::map<std::string, std::set<std::string>> fields;  // field -> replica types
  std::vector<std::string> order;
  auto note = [&](const std::string& f, api::ReplicaType type) {
    if (!fields.contains(f)) order.push_back(f);
    fields[f].insert(std::string(api::ReplicaTypeName(type)));
  };
  for (const auto& [n, r] : replicas_) {
    for (const auto& f : r.unapplied_pod_resources) note(f, r.type);
    for (const auto* list : {&r.init_containers, &r.containers})
      for (const auto& c : *list)
        for (const auto& f : c.unapplied_resources) note(f, r.type);
  }
  if (order.empty()) return;
  std::string text;
  for (const auto& f : order) {
    std::string types;
    for (const auto& t : fields[f]) types += (types.empty() ? "" : ", ") + t;
    text += (text.empty() ? "" : ", ") + f + " (" + types + ")";
  }
  Print("note: a local run does not apply these resources: " + text +
        "; only nvidia.com/gpu is honoured (GPUs of its own per replica, docs/local.md)");
}

void LocalRunner::Print(const std::string& line) {
  out_ << line << "\n" << std::flush;
}

std::vector<std::string> LocalRunner::TableRows() const {
  std::vector<ReplicaRow> rows;
  std::vector<RunColumns> extra;
  auto now = clock_.SteadyNow();
  for (const auto& [n, o] : outcomes_) {
    auto run_time = o.run_time;
    auto total = o.total_run_time;
    if (auto it = processes_.find(n); it != processes_.end() && !it->second->exited) {
      run_time = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second->started);
      total += run_time;
    }
    rows.push_back({n, o.state, o.restarts, o.exit_code, run_time, ""});
    std::string note;
    if (o.next_start) {
      const auto left =
          std::chrono::ceil<std::chrono::seconds>(std::max(*o.next_start - now, Clock::SteadyTime::duration{}));
      note = "next start in " + std::to_string(left.count()) + " s";
    }
    auto g = gpus_.find(n);
    extra.push_back({total, g == gpus_.end() ? "" : JoinDevices(g->second.devices), note});
  }
  return FormatRunTable(rows, extra);
}

bool LocalRunner::live_table() const {
  return LiveTableFits(replicas_.size(), options_.terminal_rows);
}

std::string LocalRunner::FormatTable() const {
  std::string out;
  for (const auto& r : TableRows()) out += r + "\n";
  return out;
}

void LocalRunner::DrawTable() {
  if (!live_table()) return;
  last_draw_ = clock_.SteadyNow();
  out_ << LiveTableFrame(TableRows()) << std::flush;
}

// The processes as the core sees pods; every replica's "service" exists already (its port was
// reserved up front).
core::ObservedState LocalRunner::Observe() const {
  core::ObservedState observed{job_, {}, {}, std::nullopt, clock_.Now()};
  for (const auto& [n, p] : processes_) {
    const LocalReplica& r = replicas_.at(n);
    api::Pod pod;
    pod.meta.name = n;
    pod.meta.ns = job_.metadata.ns;
    pod.meta.uid = p->uid;
    pod.meta.job_name = job_.metadata.name;
    pod.meta.replica_type = r.type;
    pod.meta.replica_index = r.index;
    pod.meta.controller_uid = job_.metadata.uid;
    pod.phase = !p->exited          ? api::PodPhase::kRunning
                : p->exit_code == 0 ? api::PodPhase::kSucceeded
                                    : api::PodPhase::kFailed;
    api::ContainerStatus cs;
    cs.name = std::string(api::kDefaultContainerName);
    cs.terminated = p->exited;
    cs.exit_code = p->exit_code;
    pod.container_statuses.push_back(cs);
    observed.pods.push_back(std::move(pod));
  }
  for (const auto& [n, r] : replicas_) {
    api::Service svc;
    svc.meta.name = n;
    svc.meta.controller_uid = job_.metadata.uid;
    svc.meta.replica_type = r.type;
    svc.meta.replica_index = r.index;
    observed.services.push_back(svc);
  }
  return observed;
}

// The plan's pod deletes: each process stopped. The delete of a failed replica in a pass that
// does not end the job is the core's restart (docs/semantics.md 3.4): counted, and its create
// held back by the back-off. Any other delete (the job's clean-up) is no restart.
void LocalRunner::DeletePods(const core::Plan& plan, std::stop_token kill_now) {
  const bool ends = core::IsFinished(plan.status ? *plan.status : job_.status);
  for (const auto& d : plan.delete_pods) {
    auto it = processes_.find(d.name);
    if (it == processes_.end()) continue;
    StopProcesses({it->second.get()}, kill_now);
    Process& p = *it->second;
    if (!p.exited) continue;
    p.CloseStreams();
    const bool failed = !p.stopping && p.start_error.empty() && p.exit_code != 0;
    if (failed && !ends) {
      outcomes_[d.name].restarts += 1;
      HoldRestart(d.name, p.ended);
    }
    processes_.erase(it);
  }
}

// The restart of `name`, whose attempt ended at `ended`, waits for its back-off (the first is at once).
void LocalRunner::HoldRestart(const std::string& name, Clock::SteadyTime ended) {
  held_restarts_[name] = ended;
  const RestartBackoff& backoff = backoffs_.try_emplace(name, options_.restart_backoff).first->second;
  const auto wait = backoff.WaitAfter(ended);
  const auto due = ended + wait;
  const auto now = clock_.SteadyNow();
  if (due <= now) return;
  auto& o = outcomes_[name];
  o.state = "CrashLoopBackOff";
  o.next_start = due;
  const auto left = std::chrono::ceil<std::chrono::seconds>(due - now);
  Print("tfjob: " + name + " CrashLoopBackOff: back-off " + BackoffText(wait) + ", next start in " +
        std::to_string(left.count()) + " s");
  DrawTable();
}

// One line per failed attempt, once the core has decided about it (this pass); the failures
// that ended the job, and which replicas spent its backoffLimit, are kept for the summary.
void LocalRunner::ExplainFailures(const core::Plan& plan) {
  const api::JobStatus& after = plan.status ? *plan.status : job_.status;
  std::set<std::string> deleted;
  for (const auto& d : plan.delete_pods) deleted.insert(d.name);
  const std::map<api::ReplicaType, api::RestartPolicy> policies = RestartPolicies(job_);
  int restarts_before = JobRestarts(job_.status);  // job_.status is the status before this pass
  std::vector<std::string> spent;                  // failures past backoffLimit
  for (auto& [n, p] : processes_) {
    if (!p->unexplained_failure()) continue;
    p->explained = true;
    const api::RestartPolicy policy = policies.at(replicas_.at(n).type);
    const FailureFate fate = FateOf(deleted.contains(n), after, Restartable(policy, p->exit_code));
    // The pass's restarts are numbered one by one from the count before it.
    const int restarts = fate == FailureFate::kRestarted ? ++restarts_before : JobRestarts(after);
    Failure f{n, p->exit_code, policy, fate, restarts, job_.spec.run_policy.backoff_limit};
    const std::string line = ExplainFailure(f);
    Print("tfjob: " + line);
    if (f.fate == FailureFate::kBackoffLimit) spent.push_back(n);
    if (f.fate != FailureFate::kRestarted && f.fate != FailureFate::kKept) failure_reasons_.push_back(line);
  }
  if (!spent.empty()) {
    std::vector<std::pair<std::string, int>> restarts;
    for (const auto& [n, o] : outcomes_) restarts.emplace_back(n, o.restarts);
    failure_reasons_.push_back(ExplainBackoffLimit(job_.spec.run_policy.backoff_limit.value_or(0), restarts, spent));
  }
}

std::vector<core::ChildCreation> LocalRunner::DueCreates(const core::Plan& plan) {
  std::vector<core::ChildCreation> out;
  const auto now = clock_.SteadyNow();
  for (const auto& c : plan.create_pods) {
    if (auto held = held_restarts_.find(c.name); held != held_restarts_.end()) {
      RestartBackoff& backoff = backoffs_.try_emplace(c.name, options_.restart_backoff).first->second;
      if (backoff.DueAt(held->second) > now) continue;
      backoff.Started(held->second, now);
      held_restarts_.erase(held);
      outcomes_[c.name].next_start.reset();
    }
    out.push_back(c);
  }
  return out;
}

std::optional<std::chrono::milliseconds> LocalRunner::UntilNextRestart() const {
  std::optional<std::chrono::milliseconds> out;
  const auto now = clock_.SteadyNow();
  for (const auto& [name, ended] : held_restarts_) {
    auto b = backoffs_.find(name);
    if (b == backoffs_.end()) continue;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(b->second.DueAt(ended) - now);
    left = std::max(left, std::chrono::milliseconds(0));
    out = out ? std::min(*out, left) : left;
  }
  return out;
}

// The plan's events and status: printed, the live table redrawn, the conditions printed when
// they changed since `last_conditions`.
void LocalRunner::ReportPlan(const core::Plan& plan, std::vector<std::string>* last_conditions) {
  // ExitedWithCode repeats the runner's own "<replica> exited with code N" line.
  for (const auto& e : plan.events) {
    if (options_.observer != nullptr) options_.observer->Event(std::string(api::EnumName(e.type)), e.reason, e.message);
    if (e.reason != "SuccessfulCreatePod" && e.reason != "ExitedWithCode")
      Print("tfjob: " + std::string(api::EnumName(e.type)) + " " + e.reason + ": " + e.message);
  }
  if (plan.status) job_.status = *plan.status;
  if (options_.observer != nullptr) options_.observer->Changed(job_, outcomes_);
  std::vector<std::string> conditions;
  for (const auto& c : job_.status.conditions) conditions.push_back(c.type + "=" + c.status);
  if (live_table() && clock_.SteadyNow() - last_draw_ >= std::chrono::milliseconds(500)) DrawTable();
  if (conditions != *last_conditions) {
    std::string text;
    for (const auto& c : conditions) text += (text.empty() ? "" : ", ") + c;
    Print("tfjob: TFJob " + job_.metadata.name + " conditions: " + text);
    *last_conditions = conditions;
  }
}

int LocalRunner::Run(std::stop_token stop, std::stop_token kill_now) {
  // Orphans of the replicas come back to tfjob (not to init), so StopAll can find them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (live_table()) {
    // Rows 1..h hold the table; output scrolls in the region below it.
    out_ << LiveTableBegin(replicas_.size(), options_.terminal_rows) << std::flush;
  }
  struct RestoreTerminal {
    LocalRunner* r;
    ~RestoreTerminal() {
      if (r->live_table()) r->out_ << LiveTableEnd(r->options_.terminal_rows) << std::flush;
    }
  } restore{this};
  // The plan names the pods to create; CreatePods starts each from replicas_ (rendered once in
  // Prepare): rendering every pod to create (each with a TF_CONFIG naming every replica) cost
  // O(replicas^2) per plan (issue 25 item 6).
  const core::ReconcileOptions options = {.render = LocalRenderOptions(ports_)};
  std::vector<std::string> last_conditions;
  // The observer sees the replicas as they are when the run ends.
  struct LastWord {
    LocalRunner* r;
    ~LastWord() {
      if (r->options_.observer != nullptr) r->options_.observer->Changed(r->job_, r->outcomes_);
    }
  } last_word{this};
  for (;;) {
    Reap();
    if (!start_failures_.empty()) {
      StopAll(kill_now);
      DrawTable();
      return kRunExitCannotStart;
    }
    core::Plan plan = core::Reconcile(Observe(), options);
    ExplainFailures(plan);
    DeletePods(plan, kill_now);
    ReportPlan(plan, &last_conditions);
    if (core::IsFinished(job_.status)) {
      StopAll(kill_now);
      DrawTable();
      return core::IsSucceeded(job_.status) ? api::kExitOk : api::kExitFailed;
    }
    if (stop.stop_requested()) {
      Print("tfjob: interrupted; stopping every replica");
      StopAll(kill_now);
      return api::kExitInterrupted;
    }
    CreatePods(DueCreates(plan));
    // The next pass comes when output or an exit arrives, at the core's requeue, when a held
    // restart is due, and at least every 200 ms (exits are reaped by the loop; a stop request
    // is seen within that).
    auto wait = std::chrono::milliseconds(200);
    if (plan.requeue_after)
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(*plan.requeue_after) +
                                std::chrono::milliseconds(1));
    if (auto restart = UntilNextRestart()) wait = std::min(wait, *restart + std::chrono::milliseconds(1));
    Pump(wait);
  }
}

}  // namespace tfjob::local