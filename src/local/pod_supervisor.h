#pragma once
// PodSupervisor: one per running replica, the local stand-in for the kubelet and the container
// runtime of its pod. `tfjob run` has the pod zygote (local/pod_zygote.h) fork it with
// ForkSiblingPodSupervisor, or, when the zygote cannot be used, forks it from the runner with
// ForkPodSupervisor. Either way it is a child of the runner that runs the SupervisorSpec it was
// handed in memory, with no exec (issue 25 item 6: re-executing the whole tfjob binary, its 39
// shared libraries and their initialisers, cost 12 ms of CPU per replica, 16 times a `true`;
// bench/README.md), and starts each container with vfork + exec. It
//   - keeps only the spec's file descriptors (and 0, 1, 2) of its parent's (the zygote's or the
//     runner's), so no other replica's reserved port or pipe stays open in it;
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER) so every process of the pod, even one that
//     calls setsid(), stays below it, and it dies with the runner (PR_SET_PDEATHSIG, set right
//     after the fork), killing every process below it first: a SIGKILLed runner leaves nothing
//     behind;
//   - runs the init containers one after the other, each to completion (a failing one ends the
//     attempt with its exit code), then keeps the replica's port reserved until just before it
//     starts the containers side by side;
//   - reports what the runner must print over the shared status pipe (one line per event, at
//     most PIPE_BUF bytes, so lines of several supervisors never mix): each container's start
//     with its pid (the program's, which `tfjob run` shows), a container that cannot
//     start (its working directory, its command: errno from the child through an O_CLOEXEC
//     pipe) and the exits of the other containers;
//   - on SIGTERM stops every container (SIGTERM to its process group, SIGKILL to everything
//     below it after the grace period); when the main container exits on its own, the others are
//     stopped the same way. Its exit code is the main container's (128+N for signal N).
// See docs/local.md.

#include <sys/types.h>

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
  // Read end of the batch's start barrier (-1: none): the containers start only once it reads
  // EOF, which is when the runner (and, forked from the runner, every supervisor of the same
  // batch) has closed the descriptors of the batch. Until then the runner, or another
  // supervisor, may still hold a copy of this pod's reserved port, and the container's bind
  // would fail (EADDRINUSE).
  int start_barrier_fd = -1;
  std::chrono::milliseconds grace_period{5000};
  uint64_t nofile_soft = 0;  // RLIMIT_NOFILE soft limit to give the containers (0: leave)
  std::vector<SupervisedContainer> init_containers;
  std::vector<SupervisedContainer> containers;
  size_t main = 0;
};

// A line of the status pipe: "<uid>\t<kind>\t<container>\t<text>\n", kind "start" (text: the
// container's pid, the program's own), "error" (text: why the container could not start) or
// "exit" (text: the exit code).
struct StatusLine {
  std::string uid, kind, container, text;
};
std::string FormatStatusLine(const StatusLine& line);  // truncated to fit PIPE_BUF
bool ParseStatusLine(std::string_view line, StatusLine* out);

// Forks the pod's supervisor process from the calling process and returns its pid (in a process
// group of its own); kUnavailable with errno's text when the fork fails. The child runs the pod
// from its own copy of `spec` (no copy is made: its memory is a copy of the caller's), closes
// every file descriptor but 0, 1, 2 and the spec's, and _exits with the main container's exit
// code (126 when a container could not start, 137 when `spec.parent` is gone). It never returns
// into the caller's code. The caller reaps it (waitpid) and closes its own copies of the spec's
// descriptors.
//
// REQUIRES: `spec.parent` is the calling process and the calling thread lives as long as the pod
// (PR_SET_PDEATHSIG follows the thread that forked); at least one container; no other thread
// of the caller holds a lock the child needs. The child uses the heap (glibc's fork leaves
// malloc usable in the child) and system calls only: no stdio, iostream or logging, whose locks
// another thread might hold. In `tfjob run` the only other thread is cmd's signal waiter, which
// touches nothing but its stop sources.
StatusOr<pid_t> ForkPodSupervisor(const SupervisorSpec& spec);

// ForkPodSupervisor for the pod zygote (local/pod_zygote.h): the supervisor is cloned with
// CLONE_PARENT, so it is a child of the caller's parent (the runner, which reaps it and which
// `spec.parent` names), not of the caller. The caller cannot set its process group (the child
// does, and the runner does when it learns the pid).
//
// REQUIRES: as ForkPodSupervisor, and the caller is single-threaded and uses no pthread
// function after it (the raw clone leaves glibc's idea of the thread id in the child stale).
StatusOr<pid_t> ForkSiblingPodSupervisor(const SupervisorSpec& spec);

// Reads `fd` (a pipe's read end; -1: nothing to wait for) until EOF, then closes it: the start
// barrier of a batch of supervisors (SupervisorSpec::start_barrier_fd), for the runner and for
// each supervisor alike.
void AwaitStartBarrier(int fd);

// Writes all of data to fd, retrying short writes and EINTR; gives up silently on an error
// (a closed pipe or log file: the output has nowhere to go).
void WriteAll(int fd, std::string_view data);

}  // namespace tfjob::local
