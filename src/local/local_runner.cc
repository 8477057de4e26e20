#include "local/local_runner.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "local/local_runner_process.h"
#include "local/pod_supervisor.h"
#include "local/pod_zygote.h"
#include "local/replica_view.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::local {
namespace {

namespace core = ::tfjob::tfjob::core;

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
    outcomes_[r.name] = ReplicaOutcome{r.name, "Pending", 0, -1, {}, {}};
    replicas_.emplace(r.name, std::move(r));
  }
  if (!options_.logs_dir.empty()) TFJOB_RETURN_IF_ERROR(logs_.Open(options_.logs_dir, replicas_));

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return InvalidArgumentError(ErrnoMessage("status pipe"));
  status_read_ = fds[0];
  status_write_ = fds[1];
  fcntl(status_read_, F_SETFL, O_NONBLOCK);

  std::string image;
  for (const auto& [n, r] : replicas_) image = image.empty() ? r.image : image;
  if (!image.empty()) Print("note: images are not used locally (" + image + "); each replica runs its command here");
  return OkStatus();
}

void LocalRunner::Print(const std::string& line) {
  out_ << line << "\n" << std::flush;
}

std::vector<std::string> LocalRunner::TableRows() const {
  std::vector<ReplicaRow> rows;
  auto now = clock_.SteadyNow();
  for (const auto& [n, o] : outcomes_) {
    auto run_time = o.run_time;
    if (auto it = processes_.find(n); it != processes_.end() && !it->second->exited)
      run_time = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second->started);
    rows.push_back({n, o.state, o.restarts, o.exit_code, run_time, ""});
  }
  return FormatReplicaTable(rows);
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

// The plan's pod deletes: each process stopped, and counted as a restart once it has exited.
void LocalRunner::DeletePods(const core::Plan& plan, std::stop_token kill_now) {
  for (const auto& d : plan.delete_pods) {
    auto it = processes_.find(d.name);
    if (it == processes_.end()) continue;
    StopProcesses({it->second.get()}, kill_now);
    if (!it->second->exited) continue;
    it->second->CloseStreams();
    outcomes_[d.name].restarts += 1;
    processes_.erase(it);
  }
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
    DeletePods(plan, kill_now);
    ReportPlan(plan, &last_conditions);
    if (core::IsFinished(job_.status)) {
      StopAll(kill_now);
      DrawTable();
      return core::IsSucceeded(job_.status) ? 0 : 1;
    }
    if (stop.stop_requested()) {
      Print("tfjob: interrupted; stopping every replica");
      StopAll(kill_now);
      return 130;
    }
    CreatePods(plan);
    auto wait = std::chrono::milliseconds(200);
    if (plan.requeue_after)
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(*plan.requeue_after) +
                                std::chrono::milliseconds(1));
    Pump(wait);
  }
}

}  // namespace tfjob::local