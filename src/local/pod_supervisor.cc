#include "local/pod_supervisor.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "local/process_tree.h"

extern char** environ;

namespace tfjob::local {
namespace {

using Steady = std::chrono::steady_clock;

constexpr int kStageChdir = 1;
constexpr int kStageExec = 2;
constexpr int kExitCannotStart = 126;
// What the supervisor waits for (sigtimedwait): blocked from the fork on.
constexpr int kSupervisorSignals[] = {SIGCHLD, SIGTERM, SIGINT, SIGUSR1, SIGHUP};

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

class Supervisor {
 public:
  // `spec` is borrowed: the child runs inside ForkPodSupervisor, whose caller holds it.
  explicit Supervisor(const SupervisorSpec& spec) : spec_(spec) {
    sigemptyset(&signals_);
    for (int s : kSupervisorSignals) sigaddset(&signals_, s);
  }

  int Run() {
    if (std::optional<int> code = RunInitContainers()) return Finish(*code);
    if (stopping_) return Finish(128 + SIGTERM);
    if (spec_.port_fd >= 0) close(spec_.port_fd);  // the main container binds it now
    for (const auto& c : spec_.containers) {
      std::optional<pid_t> pid = Start(c);
      if (!pid) return Finish(kExitCannotStart);
      running_[*pid] = &c;
      Report("start", c.name, std::to_string(*pid));
    }
    const SupervisedContainer* main = &spec_.containers[spec_.main];
    for (;;) {
      if (exits_.contains(main) && !stopping_) BeginStop();  // the others end with the main container
      if (running_.empty()) break;
      Wait();
    }
    for (const auto& c : spec_.containers)
      if (&c != main && exits_.contains(&c)) Report("exit", c.name, std::to_string(exits_[&c]));
    return Finish(exits_.contains(main) ? exits_[main] : 128 + SIGKILL);
  }

 private:
  // The init containers one after the other, each to completion; the code to finish with when
  // the pod ends here (stopped, one cannot start, one failed), nullopt when all succeeded.
  std::optional<int> RunInitContainers() {
    for (const auto& c : spec_.init_containers) {
      if (stopping_) return 128 + SIGTERM;
      std::optional<pid_t> pid = Start(c);
      if (!pid) return kExitCannotStart;
      running_[*pid] = &c;
      Report("start", c.name, std::to_string(*pid));
      while (!exits_.contains(&c)) Wait();
      int code = exits_[&c];
      Report("exit", c.name, std::to_string(code));
      KillTree();  // what the init container left behind dies with it, as in a container
      if (code != 0) return code;
    }
    return std::nullopt;
  }

  int Finish(int code) {
    KillTree();
    return code;
  }

  void Report(const char* kind, const std::string& container, const std::string& text) {
    if (spec_.status_fd >= 0) WriteAll(spec_.status_fd, FormatStatusLine({spec_.uid, kind, container, text}));
  }

  // Starts one container in its own process group; nullopt (reported) when it cannot start.
  // vfork, not fork: the supervisor is a fork of the runner, and copying its address space once
  // more for every container only to replace it at the exec cost as much as the container's own
  // start (issue 25 item 6). The supervisor is single-threaded and waits while the child runs up
  // to its exec.
  std::optional<pid_t> Start(const SupervisedContainer& c) {
    // Everything the child needs is made before the vfork (ExecContainer allocates nothing).
    std::vector<char*> argv, envp;
    for (const auto& s : c.argv) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    for (const auto& s : c.env) envp.push_back(const_cast<char*>(s.c_str()));
    envp.push_back(nullptr);
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
      Report("error", c.name, std::string("pipe: ") + std::strerror(errno));
      return std::nullopt;
    }
    char** const saved_environ = environ;
    pid_t pid = vfork();
    if (pid == 0) ExecContainer(c, argv.data(), envp.data(), spec_.nofile_soft, report[1]);
    environ = saved_environ;  // the child pointed it at the container's environment (shared memory)
    close(report[1]);
    int failure[2] = {0, 0};
    ssize_t n = 0;
    if (pid >= 0) {  // the child has exec'd (the pipe closed) or failed (its report is there)
      do n = read(report[0], failure, sizeof failure);
      while (n < 0 && errno == EINTR);
    }
    close(report[0]);
    if (pid < 0) {
      Report("error", c.name, std::string("fork: ") + std::strerror(errno));
      return std::nullopt;
    }
    if (n == static_cast<ssize_t>(sizeof failure)) {
      int status;
      waitpid(pid, &status, 0);
      ReportStartFailure(c, failure[0], failure[1]);
      return std::nullopt;
    }
    return pid;
  }

  // The vforked child's side of Start, between vfork() and execvp(): it shares the supervisor's
  // memory, so only system calls (no allocation, no locks, no formatting; `argv` and `envp` are
  // made before the vfork). On a failure the stage and errno go to `report_fd`.
  [[noreturn]] static void ExecContainer(const SupervisedContainer& c, char* const* argv, char** envp,
                                         uint64_t nofile_soft, int report_fd) {
    setpgid(0, 0);
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (nofile_soft > 0) {
      rlimit lim{};
      getrlimit(RLIMIT_NOFILE, &lim);
      lim.rlim_cur = std::min<rlim_t>(nofile_soft, lim.rlim_max);
      setrlimit(RLIMIT_NOFILE, &lim);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(c.out_fd, 1);
    dup2(c.out_fd, 2);
    // Only 0, 1, 2 reach the program (the report pipe closes at exec).
    syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
    int failure[2] = {0, 0};
    if (!c.working_dir.empty() && chdir(c.working_dir.c_str()) != 0) {
      failure[0] = kStageChdir;
      failure[1] = errno;
    } else {
      environ = envp;  // the command is looked up in the container's PATH
      execvp(argv[0], argv);
      failure[0] = kStageExec;
      failure[1] = errno;
    }
    ssize_t ignored = write(report_fd, failure, sizeof failure);
    (void)ignored;
    _exit(127);
  }

  // What ExecContainer reported: the stage that failed and its errno.
  void ReportStartFailure(const SupervisedContainer& c, int stage, int err) {
    if (stage == kStageChdir)
      Report("error", c.name, "working directory \"" + c.working_dir + "\" cannot be used: " + std::strerror(err));
    else
      Report("error", c.name, "cannot execute \"" + c.argv[0] + "\": " + std::strerror(err));
  }

  void BeginStop() {
    stopping_ = true;
    deadline_ = Steady::now() + spec_.grace_period;
    for (const auto& [pid, c] : running_) kill(-pid, SIGTERM);
  }

  void Reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      auto it = running_.find(pid);
      if (it == running_.end()) continue;  // an orphan that came back to us
      exits_[it->second] = ExitCodeOf(status);
      running_.erase(it);
    }
  }

  void KillTree() {
    KillDescendants(getpid(), [this] { Reap(); });
    Reap();
  }

  // Waits for one signal (or the stop deadline) and acts on it.
  void Wait() {
    size_t before = exits_.size();
    Reap();
    if (running_.empty() || exits_.size() != before) return;  // let the caller act on the exit first
    timespec timeout{1, 0};
    if (stopping_) {
      auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline_ - Steady::now());
      if (left.count() <= 0) {
        KillTree();  // the grace period is over
        return;
      }
      timeout = {static_cast<time_t>(left.count() / 1000000000), static_cast<long>(left.count() % 1000000000)};
    }
    siginfo_t info;
    int sig = sigtimedwait(&signals_, &info, &timeout);
    if (sig == SIGUSR1 || sig == SIGHUP || getppid() != static_cast<pid_t>(spec_.parent)) {
      KillTree();  // the runner is gone: nobody else will stop these processes
      _exit(128 + SIGKILL);
    }
    if ((sig == SIGTERM || sig == SIGINT) && !stopping_) BeginStop();
  }

  const SupervisorSpec& spec_;
  sigset_t signals_;
  std::map<pid_t, const SupervisedContainer*> running_;
  std::map<const SupervisedContainer*, int> exits_;
  bool stopping_ = false;
  Steady::time_point deadline_{};
};

}  // namespace

std::string FormatStatusLine(const StatusLine& line) {
  std::string text = line.text;
  for (char& ch : text)
    if (ch == '\n' || ch == '\t') ch = ' ';
  std::string out = line.uid + "\t" + line.kind + "\t" + line.container + "\t" + text;
  if (out.size() > PIPE_BUF - 1) out.resize(PIPE_BUF - 1);
  return out + "\n";
}

bool ParseStatusLine(std::string_view line, StatusLine* out) {
  std::string_view parts[4];
  for (int i = 0; i < 3; ++i) {
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos) return false;
    parts[i] = line.substr(0, tab);
    line.remove_prefix(tab + 1);
  }
  parts[3] = line;
  *out = {std::string(parts[0]), std::string(parts[1]), std::string(parts[2]), std::string(parts[3])};
  return true;
}

void AwaitStartBarrier(int fd) {
  if (fd < 0) return;
  char c;
  ssize_t n;
  do {
    n = read(fd, &c, 1);
  } while (n > 0 || (n < 0 && errno == EINTR));
  close(fd);
}

namespace {

// What the child needs, made before the fork: the descriptors the pod keeps (all others close in
// the child), sorted, and the signals it waits for.
struct ChildSetup {
  std::vector<int> keep;
  sigset_t signals;
};

ChildSetup PrepareChild(const SupervisorSpec& spec) {
  TFJOB_CHECK(!spec.containers.empty() && spec.main < spec.containers.size());  // LocalReplicaFor makes one
  ChildSetup setup;
  for (int fd : {spec.status_fd, spec.port_fd, spec.start_barrier_fd})
    if (fd > 2) setup.keep.push_back(fd);
  for (const auto* list : {&spec.init_containers, &spec.containers})
    for (const auto& c : *list)
      if (c.out_fd > 2) setup.keep.push_back(c.out_fd);
  std::sort(setup.keep.begin(), setup.keep.end());
  sigemptyset(&setup.signals);
  for (int s : kSupervisorSignals) sigaddset(&setup.signals, s);
  return setup;
}

// The supervisor's side of the fork (or clone): never returns.
[[noreturn]] void RunChild(const SupervisorSpec& spec, const ChildSetup& setup) {
  const pid_t parent = static_cast<pid_t>(spec.parent);
  setpgid(0, 0);                                    // out of the terminal's foreground group: Ctrl-C reaches tfjob only
  sigprocmask(SIG_BLOCK, &setup.signals, nullptr);  // waited for with sigtimedwait
  prctl(PR_SET_PDEATHSIG, SIGUSR1);
  if (getppid() != parent) _exit(128 + SIGKILL);  // the runner died before prctl
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_NAME, "tfjob-pod");  // what ps and top show for it
  // Every descriptor of the runner (or the zygote) but the pod's own: another replica's reserved
  // port or output pipe held here would keep the port taken or that replica's output open after
  // it ends.
  unsigned next = 3;
  for (int fd : setup.keep) {
    if (static_cast<unsigned>(fd) > next) syscall(SYS_close_range, next, static_cast<unsigned>(fd) - 1, 0U);
    next = std::max(next, static_cast<unsigned>(fd) + 1);
  }
  syscall(SYS_close_range, next, ~0U, 0U);
  AwaitStartBarrier(spec.start_barrier_fd);
  // No copy of the spec: the child's memory is a copy of the caller's already (the caller holds
  // `spec` until the fork returns, which in the child it never does).
  Supervisor supervisor(spec);
  _exit(supervisor.Run());
}

}  // namespace

StatusOr<pid_t> ForkPodSupervisor(const SupervisorSpec& spec) {
  const ChildSetup setup = PrepareChild(spec);
  pid_t pid = fork();
  if (pid < 0) return UnavailableError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) RunChild(spec, setup);
  setpgid(pid, pid);  // also in the child: whichever runs first, the group exists before a kill
  return pid;
}

StatusOr<pid_t> ForkSiblingPodSupervisor(const SupervisorSpec& spec) {
  const ChildSetup setup = PrepareChild(spec);
  // The raw system call: glibc's clone() wants a stack of its own, fork() takes no flags. The
  // child goes on on a copy of this stack, as after fork().
  long pid = syscall(SYS_clone, static_cast<unsigned long>(CLONE_PARENT | SIGCHLD), nullptr, nullptr, nullptr, 0UL);
  if (pid < 0) return UnavailableError(std::string("clone: ") + std::strerror(errno));
  if (pid == 0) RunChild(spec, setup);
  return static_cast<pid_t>(pid);
}

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace tfjob::local
