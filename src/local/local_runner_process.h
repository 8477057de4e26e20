#pragma once
// The runner's record of one local pod (LocalRunner::Process) and of one container's output
// (LocalRunner::Stream), shared by the runner's files: local_runner.cc (the passes),
// local_runner_spawn.cc (starting pods) and local_runner_io.cc (output, exits, stops). Only they
// include it.

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "local/local_runner.h"

namespace tfjob::local {

// One container's output pipe (read end) and where its lines go.
struct LocalRunner::Stream {
  std::string prefix;  // "worker-0" or "worker-0/sidecar"
  int fd = -1;
  int log_fd = -1;
  std::string partial;
};

struct LocalRunner::Process {
  std::string name;
  std::string uid;
  pid_t pid = -1;  // the pod supervisor
  std::vector<Stream> streams;
  bool exited = false;
  bool stopping = false;   // tfjob asked it to stop: its end is "Stopped", not a failure
  bool explained = false;  // its failure's line is printed (LocalRunner::ExplainFailures)
  int attempt = 0;         // 1 for the replica's first
  int exit_code = 0;
  std::string start_error;
  Clock::SteadyTime started;
  Clock::SteadyTime ended;
  const char* color = "";

  // It ended in a failure of its own (not stopped by tfjob, not a start failure) whose line is
  // not printed yet (LocalRunner::ExplainFailures).
  bool unexplained_failure() const {
    return exited && !explained && !stopping && start_error.empty() && exit_code != 0;
  }
  bool drained() const {
    for (const auto& s : streams)
      if (s.fd >= 0) return false;
    return true;
  }
  void CloseStreams() {
    for (auto& s : streams)
      if (s.fd >= 0) {
        close(s.fd);
        s.fd = -1;
      }
  }
};

// "<what>: <strerror(errno)>".
inline std::string ErrnoMessage(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace tfjob::local
