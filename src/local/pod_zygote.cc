#include "local/pod_zygote.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "local/supervisor_wire.h"

// The zygote's executable, linked in by pod_zygote_image.S (CMake builds it static first).
extern "C" const char tfjob_pod_zygote_start[];
extern "C" const char tfjob_pod_zygote_end[];

namespace tfjob::local {
namespace {

Status Errno(const std::string& what) {
  return UnavailableError("pod zygote: " + what + ": " + std::strerror(errno));
}

// A memfd holding the zygote's image, as a descriptor above 3 (closed on exec: the zygote does
// not keep it).
StatusOr<int> ImageFd() {
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
  // MFD_EXEC where vm.memfd_noexec would seal it non-executable; kernels before 6.3 reject it.
  int fd = memfd_create("tfjob-pod-zygote", MFD_CLOEXEC | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) fd = memfd_create("tfjob-pod-zygote", MFD_CLOEXEC);
  if (fd < 0) return Errno("memfd_create");
  const char* p = tfjob_pod_zygote_start;
  while (p < tfjob_pod_zygote_end) {
    ssize_t n = write(fd, p, static_cast<size_t>(tfjob_pod_zygote_end - p));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Errno("writing the image");
      close(fd);
      return s;
    }
    p += n;
  }
  // Above 3, where the zygote's socket goes in the child.
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 4);
  if (moved < 0) {
    Status s = Errno("fcntl");
    close(fd);
    return s;
  }
  close(fd);
  return moved;
}

}  // namespace

StatusOr<std::unique_ptr<PodZygote>> PodZygote::Start() {
  StatusOr<int> image = ImageFd();
  if (!image.ok()) return image.status();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    Status s = Errno("socketpair");
    close(*image);
    return s;
  }
  const std::string parent = std::to_string(getpid());
  char name[] = "tfjob-pod-zygote";
  char* argv[] = {name, const_cast<char*>(parent.c_str()), nullptr};
  char* envp[] = {nullptr};
  volatile int exec_errno = 0;  // written by the vforked child (shared memory) when the exec fails
  pid_t pid = vfork();
  if (pid == 0) {
    // Between vfork and exec: system calls only. The zygote gets its socket as 3 and nothing else
    // but 0, 1, 2; its own process group, so a Ctrl-C meant for tfjob does not reach it.
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if ((sv[1] == 3 ? fcntl(3, F_SETFD, 0) : dup2(sv[1], 3)) < 0) {
      exec_errno = errno;
      _exit(127);
    }
    syscall(SYS_close_range, 4U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC: the image fd stays until the exec */);
    syscall(SYS_execveat, *image, "", argv, envp, AT_EMPTY_PATH);
    exec_errno = errno;
    _exit(127);
  }
  int fork_errno = errno;
  close(sv[1]);
  close(*image);
  if (pid < 0 || exec_errno != 0) {
    errno = pid < 0 ? fork_errno : exec_errno;
    Status s = Errno(pid < 0 ? "vfork" : "exec");
    if (pid > 0) waitpid(pid, nullptr, 0);
    close(sv[0]);
    return s;
  }
  return std::unique_ptr<PodZygote>(new PodZygote(pid, sv[0]));
}

PodZygote::~PodZygote() {
  Close();
}

void PodZygote::Close() {
  if (sock_ >= 0) close(sock_);  // the zygote reads EOF and exits
  sock_ = -1;
  if (pid_ > 0) {
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

StatusOr<pid_t> PodZygote::Spawn(const SupervisorSpec& spec) {
  if (sock_ < 0) return UnavailableError("pod zygote: gone");
  EncodedSpec encoded = EncodeSupervisorSpec(spec);
  if (encoded.fds.size() > kMaxSpecMessageFds)
    return InvalidArgumentError("pod zygote: " + std::to_string(encoded.fds.size()) + " descriptors in one pod");
  if (Status sent = SendSpecMessage(sock_, encoded.bytes, encoded.fds); !sent.ok()) {
    Close();  // the zygote did not read the whole spec: it forked nothing
    return UnavailableError("pod zygote: " + sent.message());
  }
  StatusOr<SpecMessage> reply = ReceiveSpecMessage(sock_);
  if (!reply.ok() || reply->body.size() < 4) {
    Close();  // gone or out of step after it read the spec: whether it forked is not known
    return InternalError("pod zygote: " + (reply.ok() ? std::string("short reply") : reply.status().message()));
  }
  for (int fd : reply->fds) close(fd);
  int32_t pid = 0;
  std::memcpy(&pid, reply->body.data(), sizeof pid);
  if (pid <= 0) return InternalError(reply->body.substr(4));  // its clone failed, or a bad spec
  setpgid(pid, pid);  // also in the supervisor: whichever runs first, the group exists before a kill
  return static_cast<pid_t>(pid);
}

}  // namespace tfjob::local
