#pragma once
// `tfjob run FILE --dashboard` (docs/dashboard.md): the dashboard's pages for the job running on
// this machine, fed by the local runner instead of watches.
//
// `tfjob run` must keep exactly two threads (docs/architecture.md section 4: the pod supervisor's
// fork fallback and PR_SET_PDEATHSIG), so the server does not run in it. StartLocalDashboard
// forks a child process before anything else (no port reserved, no log file open, no other
// thread yet); the child (PR_SET_PDEATHSIG: it ends with tfjob) runs the Model and the Server with
// their threads, and reads the model's feed from a pipe. In tfjob, a LocalFeed (the runner's
// RunObserver) turns each pass into the objects a cluster would show (the TFJob with its status,
// one pod per replica attempt, events, prefixed log lines) and writes them to the pipe as JSON
// lines, never blocking: what the pipe cannot take waits in a bounded buffer, and log lines past
// the bound are dropped (counted).

#include <sys/types.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "cli/dashboard_model.h"
#include "common/clock.h"
#include "common/status.h"
#include "local/local_runner.h"

namespace tfjob::cli::dashboard {

// The namespace a local run's job is shown in.
inline constexpr const char* kLocalNamespace = "local";

struct LocalDashboard {
  pid_t pid = -1;
  int fd = -1;      // the feed's write end (non-blocking)
  std::string url;  // what to open
};

// Forks the dashboard's process serving job `job` on `address` and waits (at most 10 s) until it
// serves. REQUIRES: the calling process has one thread. kUnavailable when it cannot bind,
// kInvalidArgument for an address that is not 127.0.0.1 or localhost (a local run's page is
// served on this machine only).
StatusOr<LocalDashboard> StartLocalDashboard(const std::string& address, const std::string& job);

// One message of the feed into the model (the child's side): {"k":"jobs"|"pods"|"events",
// "t":"ADDED"|"MODIFIED"|"DELETED","o":{...}} or {"log":"[worker-0] ..."}. kInvalidArgument for
// anything else.
Status ApplyFeedLine(Model& model, const std::string& job, std::string_view line);

class LocalFeed : public local::RunObserver {
 public:
  // `fd`: the pipe's write end (owned; closed by the destructor).
  LocalFeed(int fd, Clock& clock, size_t max_buffered = 8 << 20);
  ~LocalFeed() override;
  LocalFeed(const LocalFeed&) = delete;
  LocalFeed& operator=(const LocalFeed&) = delete;

  void Changed(const api::TfJob& job, const std::map<std::string, local::ReplicaOutcome>& replicas) override;
  void Event(const std::string& type, const std::string& reason, const std::string& message) override;
  void Output(const std::string& prefix, const std::string& line) override;

  size_t dropped_lines() const { return dropped_; }
  // The JSON of a local run's TFJob (pure: its spec, and the status), created at `created`.
  static nlohmann::json JobJson(const api::TfJob& job, api::Time created);
  // The pod of one attempt of a replica as a cluster would show it.
  struct Attempt {
    int number = 0;  // restarts before it
    std::string state;
    int exit_code = -1;
    std::optional<api::Time> created, started, finished;
  };
  static nlohmann::json PodJson(const std::string& job, const std::string& replica, const Attempt& a);

 private:
  // The attempt's times and state after the replica's outcome `o` seen at `now`; false when
  // nothing changed.
  static bool Advance(Attempt& a, const local::ReplicaOutcome& o, api::Time now);
  void Send(const nlohmann::json& message, bool droppable);
  void Flush();

  int fd_;
  Clock& clock_;
  const size_t max_buffered_;
  std::string buffer_;
  size_t dropped_ = 0;
  api::Time created_;
  std::string job_name_;
  nlohmann::json last_job_;
  std::map<std::string, Attempt> attempts_;                  // by replica name: the current attempt
  std::map<std::string, std::pair<std::string, int>> seen_;  // by replica name: state, exit code last pass
  int events_ = 0;
};

}  // namespace tfjob::cli::dashboard
