#pragma once
// LocalRunner: `tfjob run`. Each replica of a TFJob becomes a local pod: a PodSupervisor process
// (local/pod_supervisor.h) running its init containers and containers as processes. The same
// pure core that drives the operator decides what to start, restart and stop, and the job's
// status, from the replicas' states (a live supervisor is a Running pod; its exit is Succeeded or
// Failed with the main container's exit code; death by signal N is 128+N, as in a container).
// Output lines are prefixed with the replica ("[worker-1] ...", "[worker-1/sidecar] ...") and
// optionally written to one file per container. The rules (ports, environment, containers,
// signals, limits, restarts, GPUs) are in docs/local.md:
//   - every replica's port is reserved up front (a bound socket, not listening) and released
//     just before that replica's containers start, so ports are unique and free;
//   - a stop (the job finished, or Ctrl-C) sends SIGTERM to every replica at once, SIGKILL to
//     what is left after the grace period, and keeps reading their output until every pipe
//     ends; a second stop request kills everything at once;
//   - the runner is a child subreaper and kills whatever is still below it at the end;
//   - a replica that cannot start (its working directory, its command, no file descriptor or
//     process left) is Failed with the reason printed, and the run ends with exit code 2;
//   - a restart the core decides waits the replica's crash-loop back-off, as the kubelet's
//     (local/restart_backoff.h): the create of the restarted pod is held back until it is due;
//   - each replica gets GPUs of its own (local/gpu_devices.h), kept across its restarts;
//   - each failure is explained in one line (local/failure_reason.h); the restarts counted per
//     replica are the core's (a replica stopped by the job's end is not restarted).

#include <sys/types.h>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <vector>

#include "api/exit_codes.h"
#include "api/tfjob.h"
#include "common/clock.h"
#include "common/status.h"
#include "local/container_logs.h"
#include "local/gpu_devices.h"
#include "local/local_replica.h"
#include "local/port_reservations.h"
#include "local/restart_backoff.h"

namespace tfjob::core {
struct ChildCreation;
struct ObservedState;
struct Plan;
}  // namespace tfjob::core

namespace tfjob::local {

struct SupervisorSpec;
class PodZygote;

// `tfjob run`: the job cannot run here (docs/local.md).
inline constexpr int kRunExitCannotStart = api::kExitUsage;

struct ReplicaOutcome;

// Told what the run does (tfjob run --dashboard, docs/dashboard.md), on the runner's thread. It
// must not block: the runner's loop is the only thread that drives the replicas.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // After each pass of the loop and once at the end: the job with its status, each replica's outcome.
  virtual void Changed(const api::TfJob& job, const std::map<std::string, ReplicaOutcome>& replicas) = 0;
  // An event of the plan ("Normal"/"Warning", reason, message).
  virtual void Event(const std::string& type, const std::string& reason, const std::string& message) = 0;
  // One line of a replica's output as read (not escaped): the stream's prefix ("worker-0",
  // "worker-0/sidecar") and the line.
  virtual void Output(const std::string& prefix, const std::string& line) = 0;
};

struct RunOptions {
  std::string logs_dir;  // also write <replica>.log (<replica>.<container>.log) there when set
  bool quiet = false;    // transitions only, no replica output
  bool color = false;    // colour the prefixes (a terminal)
  // On a terminal of this many rows (0: not a terminal): a live table of the replicas stays at
  // the top while their output scrolls below it.
  int terminal_rows = 0;
  std::chrono::milliseconds grace_period{5000};
  // The environment every container starts from (its own variables are set over it): tfjob's
  // whole environment by default, the --clean-env few otherwise. The caller reads it.
  std::vector<std::pair<std::string, std::string>> base_env;
  // Fork the pod supervisors through the pod zygote (local/pod_zygote.h), started at the first
  // pod; false (or a zygote that cannot start) forks them from this process (ForkPodSupervisor).
  bool pod_zygote = true;
  // The crash-loop back-off of restarts (the kubelet's by default).
  BackoffPolicy restart_backoff;
  // The GPUs this machine offers (the caller finds them: local/gpu_devices.h).
  GpuDevices gpus{{}, "none given"};
  // Told of every pass, event and output line (not owned; null: nobody).
  RunObserver* observer = nullptr;
};

struct ReplicaOutcome {
  std::string name;
  std::string state;  // "Pending", "Running", "Succeeded", "Failed", "CrashLoopBackOff", "Stopped"
  int restarts = 0;   // the core's restarts of it (a replica stopped by the job's end has none)
  int exit_code = -1;
  std::chrono::milliseconds run_time{0};  // the current or last attempt
  std::string reason;                     // why it could not start
  int attempts = 0;
  std::chrono::milliseconds total_run_time{0};  // every ended attempt's
  std::optional<Clock::SteadyTime> next_start;  // CrashLoopBackOff: when its restart is due
};

class LocalRunner {
 public:
  // REQUIRES: `job` defaulted and valid.
  LocalRunner(api::TfJob job, RunOptions options, Clock& clock, std::ostream& out);
  ~LocalRunner();

  // Checks every replica can run here (command present and executable, no valueFrom/envFrom,
  // enough file descriptors), reserves the ports and opens the log files. kInvalidArgument (exit 2)
  // with a message naming the field, the path or the limit.
  Status Prepare();
  // Runs to the end: 0 Succeeded, 1 Failed, 130 stopped through `stop`, 2 a replica could not
  // start. `kill_now` (a second interrupt) skips what is left of the grace period.
  int Run(std::stop_token stop, std::stop_token kill_now = {});
  const api::JobStatus& status() const { return job_.status; }
  // Why the run ended with exit code 2 ("<replica>: <reason>"), empty otherwise.
  const std::vector<std::string>& start_failures() const { return start_failures_; }
  // Why the job failed: a line per failure that ended it (local/failure_reason.h), and for a job
  // that failed on backoffLimit which replicas spent it. Empty otherwise.
  const std::vector<std::string>& failure_reasons() const { return failure_reasons_; }
  // The ports in TF_CONFIG, for tests.
  const PortMap& ports() const { return ports_; }
  // The summary table printed at the end (and drawn live on a terminal).
  std::string FormatTable() const;

 private:
  struct Stream;
  struct Process;
  struct SpawnPipes;
  using ReplicaList = std::vector<std::pair<api::ReplicaType, int32_t>>;
  // Prepare's steps, in order.
  Status CheckCommands(const ReplicaList& all, size_t* pipes, size_t* log_files);
  Status RaiseFileLimit(size_t need, size_t replicas);
  // Run's steps: the processes as pods, then the plan applied.
  core::ObservedState Observe() const;
  void ExplainFailures(const core::Plan& plan);
  void DeletePods(const core::Plan& plan, std::stop_token kill_now);
  void HoldRestart(const std::string& name, Clock::SteadyTime ended);
  void ReportPlan(const core::Plan& plan, std::vector<std::string>* last_conditions);
  // The plan's creates whose back-off is over (their restarts noted as started).
  std::vector<core::ChildCreation> DueCreates(const core::Plan& plan);
  // How long until the next held restart is due (nullopt: none held).
  std::optional<std::chrono::milliseconds> UntilNextRestart() const;
  void CreatePods(const std::vector<core::ChildCreation>& creates);
  // Prepare's GPU part: each replica's devices, and the note of the resources not applied.
  Status AssignDevices(const ReplicaList& all);
  void NoteUnappliedResources();
  // The environment of container `c` (init container when `init`) of replica `name`.
  std::vector<std::string> ContainerEnvironment(const std::string& name, bool init, size_t c,
                                                const LocalContainer& container) const;
  void WriteAttemptSeparator(const Process& p);
  // CreatePods' steps: the pipes and the spec before each fork, the bookkeeping after them all.
  struct PendingSpawn;
  // One replica's pipes and spec; false (reported) when a pipe cannot be had.
  bool PrepareSpawn(const std::string& name, PendingSpawn& out);
  bool OpenPipes(Process& p, const LocalReplica& r, SpawnPipes& pipes, std::string* failure);
  StatusOr<pid_t> SpawnSupervisor(const SupervisorSpec& spec);
  void Started(std::unique_ptr<Process> p, pid_t pid);
  void StartFailed(const std::string& name, const std::string& reason);
  // StopProcesses' steps.
  void StopProcesses(const std::vector<Process*>& targets, std::stop_token kill_now);
  static bool AllEnded(const std::vector<Process*>& targets);
  void KillNow(const std::vector<Process*>& targets);
  bool CloseEscaped(const std::vector<Process*>& targets);
  void StopAll(std::stop_token kill_now);
  void Pump(std::chrono::milliseconds timeout);
  void ReadStream(Process& p, Stream& s);
  void DrainStatus();
  void Reap();
  void Print(const std::string& line);
  void Output(Process& p, const Stream& s, const std::string& line);
  // The replica table (name, state, restarts, exit code, run time), one string per row.
  std::vector<std::string> TableRows() const;
  void DrawTable();
  bool live_table() const;

  api::TfJob job_;
  RunOptions options_;
  Clock& clock_;
  std::ostream& out_;
  PortMap ports_;                                 // TF_CONFIG's ports, from ports_reserved_
  PortReservations ports_reserved_;               // by replica name
  ContainerLogs logs_;                            // --logs-dir's files
  std::map<std::string, LocalReplica> replicas_;  // by name
  std::unique_ptr<PodZygote> zygote_;             // null until the first pod, or when it cannot be used
  bool zygote_tried_ = false;
  std::map<std::string, std::unique_ptr<Process>> processes_;  // current process per replica name
  std::map<std::string, ReplicaOutcome> outcomes_;
  std::vector<std::string> start_failures_;
  std::vector<std::string> failure_reasons_;
  std::map<std::string, RestartBackoff> backoffs_;          // by replica name, once restarted
  std::map<std::string, Clock::SteadyTime> held_restarts_;  // restarts waiting: when the attempt ended
  std::map<std::string, ReplicaGpus> gpus_;                 // by replica name
  int status_read_ = -1, status_write_ = -1;                // the supervisors' status pipe
  std::string status_partial_;
  uint64_t nofile_soft_ = 0;
  int spawned_ = 0;
  Clock::SteadyTime last_draw_{};
};

}  // namespace tfjob::local
