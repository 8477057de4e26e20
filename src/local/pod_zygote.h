#pragma once
// PodZygote: the runner's end of the pod zygote, a small static program embedded in this binary
// that forks every pod supervisor of one `tfjob run` (issue 25 item 6; bench/README.md). A fork
// of tfjob itself copies its 39 shared libraries' mappings and heap once per replica, and the
// runner then pays copy-on-write faults for every page it writes while those copies live; a fork
// of the zygote copies next to nothing. The runner starts it once (its image written to a
// memfd and executed: tfjob stays one file), sends it each pod's SupervisorSpec with the pod's
// descriptors (local/supervisor_wire.h), and gets the supervisor's pid back. The zygote clones
// the supervisor with CLONE_PARENT, so the supervisor is the runner's child exactly as a fork of
// the runner would be: the runner reaps it, it dies with the runner (PR_SET_PDEATHSIG, the runner
// thread that started the zygote), and everything local/pod_supervisor.h says holds.
//
// The zygote closes its copies of the pod's descriptors before it answers, keeps no other
// descriptor than its socket (and 0, 1, 2), ends at the socket's EOF, and is killed when the
// runner dies. When it cannot be started (no memfd, executing a memfd forbidden by
// vm.memfd_noexec) or dies, the caller forks the supervisors itself (ForkPodSupervisor).

#include <sys/types.h>

#include <memory>

#include "common/status.h"
#include "local/pod_supervisor.h"

namespace tfjob::local {

class PodZygote final {
 public:
  // Starts the zygote as a child of the calling thread, which must live as long as every pod it
  // forks (PR_SET_PDEATHSIG follows that thread). kUnavailable naming the step that failed.
  static StatusOr<std::unique_ptr<PodZygote>> Start();
  // Closes the socket and waits for the zygote to exit (unless Reaped() said it is gone).
  ~PodZygote();
  PodZygote(const PodZygote&) = delete;
  PodZygote& operator=(const PodZygote&) = delete;

  // ForkPodSupervisor through the zygote: the supervisor's pid, a child of the caller (in a
  // process group of its own). The caller keeps its copies of the spec's descriptors and closes
  // them as after ForkPodSupervisor. kUnavailable when the zygote is gone before it read the
  // spec (nothing was forked: the caller may fork the supervisor itself); kInternal when the
  // zygote could not fork (its errno's text) or ended after it read the spec; kInvalidArgument
  // for a spec the wire cannot carry (over kMaxSpecMessageFds descriptors). After kUnavailable
  // or a lost zygote every later call returns kUnavailable.
  // REQUIRES: `spec.parent` is the calling process; called from the thread that called Start.
  StatusOr<pid_t> Spawn(const SupervisorSpec& spec);

  pid_t pid() const { return pid_; }
  // The caller reaped the zygote (a waitpid(-1) of its own): the destructor does not wait for it.
  void Reaped() { pid_ = -1; }

 private:
  PodZygote(pid_t pid, int sock) : pid_(pid), sock_(sock) {}
  void Close();

  pid_t pid_;
  int sock_;
};

}  // namespace tfjob::local
