#pragma once
// PodSupervisor: one per running replica, the local stand-in for the kubelet and the container
// runtime of its pod. `tfjob run` starts it as `tfjob __pod-supervisor FD` (the same binary, a
// fresh process: no state shared with the runner's threads) and sends it a SupervisorSpec
// through FD. It
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER) so every process of the pod, even one that
//     calls setsid(), stays below it, and it dies with the runner (PR_SET_PDEATHSIG, set before
//     the exec), killing every process below it first: a SIGKILLed runner leaves nothing behind;
//   - runs the init containers one after the other, each to completion (a failing one ends the
//     attempt with its exit code), then keeps the replica's port reserved until just before it
//     starts the containers side by side;
//   - reports what the runner must print over the shared status pipe (one line per event, at
//     most PIPE_BUF bytes, so lines of several supervisors never mix): a container that cannot
//     start (its working directory, its command: errno from the child through an O_CLOEXEC
//     pipe) and the exits of the other containers;
//   - on SIGTERM stops every container (SIGTERM to its process group, SIGKILL to everything
//     below it after the grace period); when the main container exits on its own, the others are
//     stopped the same way. Its exit code is the main container's (128+N for signal N).
// See README.md, `tfjob run`.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tfjob::local {

struct SupervisedContainer {
  std::string name;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value", the whole environment of the process
  std::string working_dir;
  int out_fd = -1;  // write end of this container's output pipe (stdout and stderr)
};

struct SupervisorSpec {
  std::string uid;  // names this attempt in status lines
  int64_t parent = 0;
  int status_fd = -1;  // write end of the runner's status pipe
  int port_fd = -1;    // the reserved port's socket, closed just before the containers start
  std::chrono::milliseconds grace_period{5000};
  uint64_t nofile_soft = 0;  // RLIMIT_NOFILE soft limit to give the containers (0: leave)
  std::vector<SupervisedContainer> init_containers;
  std::vector<SupervisedContainer> containers;
  size_t main = 0;
};

std::string EncodeSupervisorSpec(const SupervisorSpec& spec);
// kDataLoss when the text is not a spec.
StatusOr<SupervisorSpec> DecodeSupervisorSpec(std::string_view text);

// A line of the status pipe: "<uid>\t<kind>\t<container>\t<text>\n", kind "error" (text: why the
// container could not start) or "exit" (text: the exit code).
struct StatusLine {
  std::string uid, kind, container, text;
};
std::string FormatStatusLine(const StatusLine& line);  // truncated to fit PIPE_BUF
bool ParseStatusLine(std::string_view line, StatusLine* out);

// The supervisor process's body: reads the spec from `spec_fd`, runs the pod, returns the exit
// code of the process (the main container's; 126 when a container could not start).
int RunPodSupervisor(int spec_fd);

// Writes all of data to fd, retrying short writes and EINTR; gives up silently on an error
// (a closed pipe or log file: the output has nowhere to go).
void WriteAll(int fd, std::string_view data);

}  // namespace tfjob::local
