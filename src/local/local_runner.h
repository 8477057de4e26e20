#pragma once
// LocalRunner: `tfjob run`. Each replica of a TFJob becomes a local process; the same pure core
// that drives the operator decides what to start, restart and stop, and the job's status, from
// the processes' states (a live process is a Running pod; an exit is Succeeded or Failed with
// that exit code; death by signal N is exit code 128+N, as in a container). Output lines are
// prefixed with the replica ("[worker-1] ...") and optionally written to one file per replica.
// When the job finishes, or on a stop request, every process is stopped (SIGTERM, then SIGKILL
// after the grace period); children also die with the runner (PR_SET_PDEATHSIG).

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>
#include <stop_token>
#include <string>
#include <vector>

#include "api/tfjob.h"
#include "common/clock.h"
#include "common/status.h"
#include "local/local_replica.h"

namespace tfjob::local {

struct RunOptions {
  std::string logs_dir;  // also write <replica>.log there when set
  bool quiet = false;    // transitions only, no replica output
  bool color = false;    // colour the prefixes (a terminal)
  // On a terminal of this many rows (0: not a terminal): a live table of the replicas stays at
  // the top while their output scrolls below it.
  int terminal_rows = 0;
  std::chrono::milliseconds grace_period{5000};
};

struct ReplicaOutcome {
  std::string name;
  std::string state;  // "Succeeded", "Failed", "Stopped", "Running"
  int restarts = 0;
  int exit_code = -1;
  std::chrono::milliseconds run_time{0};
};

class LocalRunner {
 public:
  // REQUIRES: `job` defaulted and valid.
  LocalRunner(api::TfJob job, RunOptions options, Clock& clock, std::ostream& out);
  ~LocalRunner();

  // Checks every replica can run here (command present, no valueFrom, executable found).
  Status Prepare();
  // Runs to the end: 0 Succeeded, 1 Failed, 130 stopped through `stop`.
  int Run(std::stop_token stop);
  const api::JobStatus& status() const { return job_.status; }
  std::vector<ReplicaOutcome> Outcomes() const;
  // The summary table printed at the end (and drawn live on a terminal).
  std::string FormatTable() const;

 private:
  struct Process;
  void Spawn(const std::string& name);
  void Kill(Process& p, bool wait);
  void StopAll();
  void Pump(std::chrono::milliseconds timeout);
  void Reap();
  void Print(const std::string& line);
  void Output(Process& p, const std::string& line);
  // The replica table (name, state, restarts, exit code, run time), one string per row.
  std::vector<std::string> TableRows() const;
  void DrawTable();
  bool live_table() const { return options_.terminal_rows > static_cast<int>(replicas_.size()) + 6; }

  api::TfJob job_;
  RunOptions options_;
  Clock& clock_;
  std::ostream& out_;
  PortMap ports_;
  std::map<std::string, LocalReplica> replicas_;               // by name
  std::map<std::string, std::unique_ptr<Process>> processes_;  // current process per replica name
  std::map<std::string, ReplicaOutcome> outcomes_;
  int spawned_ = 0;
  Clock::SteadyTime last_draw_{};
};

}  // namespace tfjob::local
