// The pod zygote (local/pod_zygote.h): a small static program that `tfjob run` starts once and
// that forks the pod supervisors for it. Its socket is descriptor 3, its argument the runner's
// pid. For each message (local/supervisor_wire.h) it forks the supervisor as the runner's child,
// closes the pod's descriptors and answers with the pid (4 bytes, then nothing) or 0 and why. A
// message it cannot read ends it (the stream is out of step); so does the socket's EOF.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/exit_codes.h"
#include "local/pod_supervisor.h"
#include "local/supervisor_wire.h"

namespace {

constexpr int kSocket = 3;

void Reply(int32_t pid, const std::string& why) {
  std::string body(sizeof pid, '\0');
  std::memcpy(body.data(), &pid, sizeof pid);
  body += why;
  if (!tfjob::local::SendSpecMessage(kSocket, body, {}).ok()) _exit(tfjob::api::kExitFailed);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return tfjob::api::kExitUsage;
  const pid_t runner = static_cast<pid_t>(std::atol(argv[1]));
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != runner) return tfjob::api::kExitFailed;  // the runner died before prctl
  prctl(PR_SET_NAME, "tfjob-zygote");  // what ps and top show (else the memfd's name)
  signal(SIGPIPE, SIG_IGN);
  for (;;) {
    tfjob::StatusOr<tfjob::local::SpecMessage> m = tfjob::local::ReceiveSpecMessage(kSocket);
    if (!m.ok()) {
      if (tfjob::IsNotFound(m.status())) return tfjob::api::kExitOk;  // the runner is done
      Reply(0, m.status().message());
      return tfjob::api::kExitFailed;
    }
    tfjob::StatusOr<tfjob::local::SupervisorSpec> spec = tfjob::local::DecodeSupervisorSpec(m->body, m->fds);
    tfjob::StatusOr<pid_t> pid =
        spec.ok() ? tfjob::local::ForkSiblingPodSupervisor(*spec) : tfjob::StatusOr<pid_t>(spec.status());
    for (int fd : m->fds) close(fd);  // before the answer: then only the runner and the pod hold them
    Reply(pid.ok() ? *pid : 0, pid.ok() ? "" : pid.status().message());
  }
}
