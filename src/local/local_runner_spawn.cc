// LocalRunner's pod creates: the pipes and the supervisor's spec of each replica, the fork
// (through the pod zygote, else from this process) behind one start barrier per batch.
#include <fcntl.h>
#include <unistd.h>

#include "common/time_format.h"
#include "local/local_runner_process.h"
#include "local/pod_supervisor.h"
#include "local/pod_zygote.h"
#include "local/replica_view.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::local {

void LocalRunner::StartFailed(const std::string& name, const std::string& reason) {
  Print("tfjob: " + name + " cannot start: " + reason);
  auto& o = outcomes_[name];
  o.state = "Failed";
  o.reason = reason;
  start_failures_.push_back(name + ": " + reason);
  DrawTable();
}

// The runner's copies of one Spawn's descriptors: the supervisor's ends of the output pipes,
// closed once the supervisor has its own.
struct LocalRunner::SpawnPipes {
  std::vector<int> write_ends;

  void Close() {
    for (int fd : write_ends) close(fd);
    write_ends.clear();
  }
};

// An output pipe per container of `r`, init containers first (a Stream of `p`, the write end in
// `pipes`). False with `failure` set when a pipe cannot be had.
bool LocalRunner::OpenPipes(Process& p, const LocalReplica& r, SpawnPipes& pipes, std::string* failure) {
  const std::string short_name = p.name.substr(job_.metadata.name.size() + 1);
  auto add = [&](const LocalContainer& c, bool is_main) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      *failure = ErrnoMessage("output pipe");
      return false;
    }
    Stream s;
    s.prefix = is_main ? short_name : short_name + "/" + c.name;
    s.fd = fds[0];
    fcntl(s.fd, F_SETFL, O_NONBLOCK);
    s.log_fd = logs_.Find(is_main ? p.name : p.name + "." + c.name);
    p.streams.push_back(std::move(s));
    pipes.write_ends.push_back(fds[1]);
    return true;
  };
  for (const auto& c : r.init_containers)
    if (!add(c, false)) return false;
  for (size_t i = 0; i < r.containers.size(); ++i)
    if (!add(r.containers[i], i == r.main)) return false;
  return true;
}

// Through the pod zygote, started at the first pod; forked from this process when the zygote
// cannot be started or is gone before it read the spec (nothing forked: falling back is safe).
StatusOr<pid_t> LocalRunner::SpawnSupervisor(const SupervisorSpec& spec) {
  if (options_.pod_zygote && !zygote_tried_) {
    zygote_tried_ = true;
    StatusOr<std::unique_ptr<PodZygote>> z = PodZygote::Start();
    if (z.ok()) zygote_ = std::move(*z);
  }
  if (zygote_) {
    StatusOr<pid_t> pid = zygote_->Spawn(spec);
    if (pid.ok() || pid.status().code() == StatusCode::kInternal) return pid;
    if (pid.status().code() == StatusCode::kUnavailable) zygote_.reset();  // else too big for it: fork this one
  }
  return ForkPodSupervisor(spec);
}

// The supervisor `pid` of `p` has started (the runner's copies of the port and the pipes closed).
// "started (pid N)" is printed when the supervisor reports its container's start (the
// program's pid, DrainStatus).
void LocalRunner::Started(std::unique_ptr<Process> p, pid_t pid) {
  const std::string name = p->name;
  ports_reserved_.Released(name);
  p->pid = pid;
  auto& o = outcomes_[name];
  p->attempt = ++o.attempts;
  if (p->attempt > 1) WriteAttemptSeparator(*p);
  processes_[name] = std::move(p);
  o.state = "Running";
  o.run_time = std::chrono::milliseconds(0);
  DrawTable();
}

// A line in each of the replica's --logs-dir files between two attempts, so the attempts' output
// is not run together.
void LocalRunner::WriteAttemptSeparator(const Process& p) {
  const auto& o = outcomes_[p.name];
  const std::string line = "----- tfjob: " + p.name + " attempt " + std::to_string(p.attempt) + " (restart " +
                           std::to_string(o.restarts) + ") at " + FormatRfc3339(clock_.Now()) + "; attempt " +
                           std::to_string(p.attempt - 1) + " exited with code " + std::to_string(o.exit_code) +
                           " -----\n";
  for (const auto& s : p.streams)
    if (s.log_fd >= 0) WriteAll(s.log_fd, line);
}

std::vector<std::string> LocalRunner::ContainerEnvironment(const std::string& name, bool init, size_t c,
                                                           const LocalContainer& container) const {
  static const std::vector<std::string> kNone;
  const std::vector<std::string>* devices = &kNone;
  if (auto g = gpus_.find(name); g != gpus_.end()) {
    const auto& slices = init ? g->second.init_containers : g->second.containers;
    if (c < slices.size()) devices = &slices[c];
  }
  // The caller's CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES give way to the replica's; the
  // container's own env wins over both, as in a pod.
  std::vector<std::pair<std::string, std::string>> base;
  base.reserve(options_.base_env.size() + 2);
  for (const auto& kv : options_.base_env)
    if (kv.first != "CUDA_VISIBLE_DEVICES" && kv.first != "NVIDIA_VISIBLE_DEVICES") base.push_back(kv);
  for (auto& kv : GpuEnvironment(*devices)) base.push_back(std::move(kv));
  return ProcessEnvironment(base, container.env);
}

// One replica between its pipes and its fork.
struct LocalRunner::PendingSpawn {
  std::unique_ptr<Process> process;
  SpawnPipes pipes;
  SupervisorSpec spec;
};

bool LocalRunner::PrepareSpawn(const std::string& name, PendingSpawn& out) {
  const LocalReplica& r = replicas_.at(name);
  out.process = std::make_unique<Process>();
  Process& p = *out.process;
  p.name = name;
  p.uid = name + "-" + std::to_string(++spawned_);
  p.started = clock_.SteadyNow();
  p.color = options_.color ? PrefixColor(name) : "";
  std::string failure;
  if (!OpenPipes(p, r, out.pipes, &failure)) {
    out.pipes.Close();
    p.CloseStreams();
    StartFailed(name, failure);
    return false;
  }
  SupervisorSpec& spec = out.spec;
  spec.uid = p.uid;
  spec.parent = getpid();
  spec.status_fd = status_write_;
  spec.port_fd = ports_reserved_.fd(name);
  spec.grace_period = options_.grace_period;
  spec.nofile_soft = nofile_soft_;
  spec.main = r.main;
  size_t pipe = 0;
  auto add = [&](const LocalContainer& c, bool init, size_t i, std::vector<SupervisedContainer>* into) {
    into->push_back(
        {c.name, c.argv, ContainerEnvironment(name, init, i, c), c.working_dir, out.pipes.write_ends[pipe++]});
  };
  for (size_t i = 0; i < r.init_containers.size(); ++i) add(r.init_containers[i], true, i, &spec.init_containers);
  for (size_t i = 0; i < r.containers.size(); ++i) add(r.containers[i], false, i, &spec.containers);
  return true;
}

// The plan's pod creates, until one cannot start. When the supervisors are forked from this
// process (no zygote), between two forks it writes as little as it can: a page it writes while
// supervisors forked before share it is copied (copy-on-write). So each replica's spec stays until every fork is done
// (freeing one right after its fork touched tens of shared pages per replica), and the bookkeeping comes after the
// forks; only the descriptors are closed at once (the kernel's memory, not ours), so a job needs no more of them at a
// time than one replica's (issue 25 item 6).
void LocalRunner::CreatePods(const std::vector<core::ChildCreation>& creates) {
  if (creates.empty()) return;
  std::vector<PendingSpawn> pending(creates.size());  // never reallocated while forking
  std::vector<pid_t> pids(pending.size(), -1);
  size_t tried = 0;
  std::string fork_error;
  // This process holds each pod's reserved port until the supervisor has started (and a
  // supervisor forked from this process, the fallback, holds copies of the other replicas'
  // reserved ports until it closes them): the batch's start barrier keeps every container from
  // starting (binding its port) before all of them are closed.
  int barrier[2] = {-1, -1};
  if (pipe2(barrier, O_CLOEXEC) != 0) barrier[0] = barrier[1] = -1;
  for (; tried < pending.size(); ++tried) {
    PendingSpawn& ps = pending[tried];
    if (!PrepareSpawn(creates[tried].name, ps)) break;
    ps.spec.start_barrier_fd = barrier[0];
    StatusOr<pid_t> pid = SpawnSupervisor(ps.spec);
    if (!pid.ok()) {
      fork_error = pid.status().message();
      ps.pipes.Close();
      ps.process->CloseStreams();
      break;
    }
    pids[tried] = *pid;
    // The supervisor has its copies now; the port stays reserved in it until the containers start.
    ports_reserved_.CloseOwnCopy(ps.process->name);
    ps.pipes.Close();
  }
  if (barrier[1] >= 0) close(barrier[1]);
  AwaitStartBarrier(barrier[0]);  // also here: the next batch is forked only after this one let go
  for (size_t i = 0; i < tried; ++i) Started(std::move(pending[i].process), pids[i]);
  if (!fork_error.empty()) StartFailed(pending[tried].process->name, fork_error);
}

}  // namespace tfjob::local
