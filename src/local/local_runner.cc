#include "local/local_runner.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tfjob/core/conditions.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::local {
namespace {

namespace core = ::tfjob::tfjob::core;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

bool Executable(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return access(cmd.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && access((dir + "/" + cmd).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

const char* kColors[] = {"\033[36m", "\033[32m", "\033[33m", "\033[35m", "\033[34m", "\033[91m"};

}  // namespace

struct LocalRunner::Process {
  std::string name;
  std::string uid;
  pid_t pid = -1;
  int out_fd = -1;
  std::string partial;
  bool exited = false;
  int exit_code = 0;
  Clock::SteadyTime started;
  Clock::SteadyTime ended;
  std::unique_ptr<std::ofstream> log;
  const char* color = "";
};

LocalRunner::LocalRunner(api::TfJob job, RunOptions options, Clock& clock, std::ostream& out)
    : job_(std::move(job)), options_(std::move(options)), clock_(clock), out_(out) {
  if (job_.metadata.ns.empty()) job_.metadata.ns = "default";
  if (job_.metadata.uid.empty()) job_.metadata.uid = "local-" + std::to_string(getpid());
}

LocalRunner::~LocalRunner() {
  StopAll();
}

Status LocalRunner::Prepare() {
  for (const auto& [type, index] : AllReplicas(job_)) ports_[{type, index}] = FreePort();
  for (const auto& [type, index] : AllReplicas(job_)) {
    TFJOB_ASSIGN_OR_RETURN(LocalReplica r, LocalReplicaFor(job_, type, index, ports_));
    if (!Executable(r.argv[0]))
      return InvalidArgumentError("spec.tfReplicaSpecs[" + std::string(api::ReplicaTypeName(type)) + "]: command \"" +
                                  r.argv[0] + "\" not found (or not executable) on this machine");
    outcomes_[r.name] = ReplicaOutcome{r.name, "Pending", 0, -1, {}};
    replicas_.emplace(r.name, std::move(r));
  }
  if (!options_.logs_dir.empty()) std::filesystem::create_directories(options_.logs_dir);
  std::string image;
  for (const auto& [n, r] : replicas_) image = image.empty() ? r.image : image;
  if (!image.empty()) Print("note: images are not used locally (" + image + "); each replica runs its command here");
  return OkStatus();
}

void LocalRunner::Print(const std::string& line) {
  out_ << line << "\n" << std::flush;
}

void LocalRunner::Spawn(const std::string& name) {
  const LocalReplica& r = replicas_.at(name);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  auto p = std::make_unique<Process>();
  p->name = name;
  p->uid = name + "-" + std::to_string(++spawned_);
  p->started = clock_.SteadyNow();
  size_t color_index = std::hash<std::string>{}(name) % (sizeof kColors / sizeof kColors[0]);
  p->color = options_.color ? kColors[color_index] : "";
  if (!options_.logs_dir.empty())
    p->log = std::make_unique<std::ofstream>(options_.logs_dir + "/" + name + ".log", std::ios::app);
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& [k, v] : r.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = r.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // A guardian leads the replica's process group: it runs the command as its own child and,
    // when the runner dies (even by SIGKILL), kills the whole group, grandchildren included
    // (PR_SET_PDEATHSIG reaches direct children only). It passes the command's exit code on.
    setpgid(0, 0);
    sigset_t guard;
    sigemptyset(&guard);
    sigaddset(&guard, SIGCHLD);
    sigaddset(&guard, SIGUSR1);
    sigaddset(&guard, SIGTERM);
    sigaddset(&guard, SIGINT);
    sigprocmask(SIG_SETMASK, &guard, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGUSR1);
    if (getppid() != parent) _exit(137);  // the runner died before prctl
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    pid_t command = fork();
    if (command == 0) {
      if (!r.working_dir.empty() && chdir(r.working_dir.c_str()) != 0) _exit(126);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execvpe(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    for (;;) {
      siginfo_t info;
      if (sigwaitinfo(&guard, &info) < 0) continue;
      if (info.si_signo == SIGUSR1) {  // the runner is gone
        kill(0, SIGKILL);
        _exit(137);
      }
      if (info.si_signo == SIGTERM || info.si_signo == SIGINT) {
        kill(command, info.si_signo);  // a stop: the command decides how to end
        continue;
      }
      int status = 0;
      if (waitpid(command, &status, WNOHANG) == command) {
        if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
        _exit(128 + WTERMSIG(status));
      }
    }
  }
  close(fds[1]);
  p->pid = pid;
  p->out_fd = fds[0];
  fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
  if (pid > 0) setpgid(pid, pid);
  processes_[name] = std::move(p);
  outcomes_[name].state = "Running";
  Print("tfjob: " + name + " started (pid " + std::to_string(pid) + ")");
  DrawTable();
}

void LocalRunner::Output(Process& p, const std::string& line) {
  const std::string short_name = p.name.substr(job_.metadata.name.size() + 1);
  if (p.log) *p.log << line << "\n" << std::flush;
  if (options_.quiet) return;
  if (options_.color)
    out_ << p.color << "[" << short_name << "]\033[0m " << line << "\n";
  else
    out_ << "[" << short_name << "] " << line << "\n";
  out_.flush();
}

void LocalRunner::Pump(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<Process*> owners;
  for (auto& [n, p] : processes_)
    if (p->out_fd >= 0) {
      fds.push_back({p->out_fd, POLLIN, 0});
      owners.push_back(p.get());
    }
  if (fds.empty()) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  if (poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return;
  char buf[8192];
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Process& p = *owners[i];
    for (;;) {
      ssize_t n = read(p.out_fd, buf, sizeof buf);
      if (n > 0) {
        p.partial.append(buf, static_cast<size_t>(n));
        size_t nl;
        while ((nl = p.partial.find('\n')) != std::string::npos) {
          Output(p, p.partial.substr(0, nl));
          p.partial.erase(0, nl + 1);
        }
        continue;
      }
      if (n == 0) {  // EOF: the process closed its output
        if (!p.partial.empty()) Output(p, p.partial);
        p.partial.clear();
        close(p.out_fd);
        p.out_fd = -1;
      }
      break;
    }
  }
}

void LocalRunner::Reap() {
  for (auto& [n, p] : processes_) {
    if (p->exited || p->pid <= 0) continue;
    int status = 0;
    if (waitpid(p->pid, &status, WNOHANG) != p->pid) continue;
    p->exited = true;
    p->ended = clock_.SteadyNow();
    p->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    auto& o = outcomes_[n];
    o.exit_code = p->exit_code;
    o.state = p->exit_code == 0 ? "Succeeded" : "Failed";
    o.run_time = std::chrono::duration_cast<std::chrono::milliseconds>(p->ended - p->started);
    Print("tfjob: " + n + " exited with code " + std::to_string(p->exit_code));
    DrawTable();
  }
}

void LocalRunner::Kill(Process& p, bool wait) {
  if (p.exited || p.pid <= 0) return;
  kill(-p.pid, SIGTERM);
  if (!wait) return;
  auto deadline = clock_.SteadyNow() + options_.grace_period;
  while (clock_.SteadyNow() < deadline) {
    int status;
    if (waitpid(p.pid, &status, WNOHANG) == p.pid) {
      p.exited = true;
      p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!p.exited) {
    kill(-p.pid, SIGKILL);
    int status;
    waitpid(p.pid, &status, 0);
    p.exited = true;
    p.exit_code = 137;
  }
  p.ended = clock_.SteadyNow();
}

void LocalRunner::StopAll() {
  for (auto& [n, p] : processes_) kill(-p->pid, SIGTERM);  // all at once, then wait for each
  for (auto& [n, p] : processes_) {
    bool was_running = !p->exited;
    Kill(*p, true);
    if (p->out_fd >= 0) {
      close(p->out_fd);
      p->out_fd = -1;
    }
    if (was_running && outcomes_[n].state == "Running") {
      outcomes_[n].state = "Stopped";
      outcomes_[n].run_time = std::chrono::duration_cast<std::chrono::milliseconds>(p->ended - p->started);
    }
  }
}

std::vector<std::string> LocalRunner::TableRows() const {
  std::vector<std::string> rows;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-10s %8s %9s %10s", "REPLICA", "STATE", "RESTARTS", "EXIT CODE", "RUN TIME");
  rows.emplace_back(line);
  auto now = clock_.SteadyNow();
  for (const auto& [n, o] : outcomes_) {
    auto run_time = o.run_time;
    if (auto it = processes_.find(n); it != processes_.end() && !it->second->exited)
      run_time = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second->started);
    std::snprintf(line, sizeof line, "%-28s %-10s %8d %9s %9.1fs", n.c_str(), o.state.c_str(), o.restarts,
                  o.exit_code < 0 ? "-" : std::to_string(o.exit_code).c_str(),
                  std::chrono::duration<double>(run_time).count());
    rows.emplace_back(line);
  }
  return rows;
}

std::string LocalRunner::FormatTable() const {
  std::string out;
  for (const auto& r : TableRows()) out += r + "\n";
  return out;
}

void LocalRunner::DrawTable() {
  if (!live_table()) return;
  last_draw_ = clock_.SteadyNow();
  std::string frame = "\0337\033[H";  // save the cursor, go to the top
  for (const auto& r : TableRows()) frame += "\033[1m" + r + "\033[0m\033[K\n";
  frame += "\033[K\0338";  // blank separator, restore the cursor
  out_ << frame << std::flush;
}

std::vector<ReplicaOutcome> LocalRunner::Outcomes() const {
  std::vector<ReplicaOutcome> out;
  for (const auto& [n, o] : outcomes_) out.push_back(o);
  return out;
}

int LocalRunner::Run(std::stop_token stop) {
  if (live_table()) {
    // Rows 1..h hold the table; output scrolls in the region below it.
    int h = static_cast<int>(replicas_.size()) + 2;
    out_ << "\033[2J\033[" << h + 1 << ";" << options_.terminal_rows << "r\033[" << h + 1 << ";1H" << std::flush;
  }
  struct RestoreTerminal {
    LocalRunner* r;
    ~RestoreTerminal() {
      if (r->live_table()) r->out_ << "\033[r\033[" << r->options_.terminal_rows << ";1H\n" << std::flush;
    }
  } restore{this};
  core::ReconcileOptions options;
  options.render.tf_config.endpoint = [this](api::ReplicaType t, int32_t i, int32_t) {
    return "127.0.0.1:" + std::to_string(ports_[{t, i}]);
  };
  std::vector<std::string> last_conditions;
  for (;;) {
    Reap();
    // The processes as the core sees pods.
    core::ObservedState observed{job_, {}, {}, std::nullopt, clock_.Now()};
    for (const auto& [n, p] : processes_) {
      const LocalReplica& r = replicas_.at(n);
      api::Pod pod;
      pod.meta.name = n;
      pod.meta.ns = job_.metadata.ns;
      pod.meta.uid = p->uid;
      pod.meta.job_name = job_.metadata.name;
      pod.meta.replica_type = std::string(api::ReplicaTypeLabel(r.type));
      pod.meta.replica_index = r.index;
      pod.meta.controller_uid = job_.metadata.uid;
      pod.phase = !p->exited          ? api::PodPhase::kRunning
                  : p->exit_code == 0 ? api::PodPhase::kSucceeded
                                      : api::PodPhase::kFailed;
      api::ContainerStatus cs;
      cs.name = std::string(api::kDefaultContainerName);
      cs.terminated = p->exited;
      cs.exit_code = p->exit_code;
      pod.container_statuses.push_back(cs);
      observed.pods.push_back(std::move(pod));
    }
    // Every replica's "service" exists already: its port was allocated up front.
    for (const auto& [n, r] : replicas_) {
      api::Service svc;
      svc.meta.name = n;
      svc.meta.controller_uid = job_.metadata.uid;
      svc.meta.replica_type = std::string(api::ReplicaTypeLabel(r.type));
      svc.meta.replica_index = r.index;
      observed.services.push_back(svc);
    }
    core::Plan plan = core::Reconcile(observed, options);
    for (const auto& d : plan.delete_pods) {
      auto it = processes_.find(d.name);
      if (it == processes_.end()) continue;
      Kill(*it->second, true);
      if (!it->second->exited) continue;
      outcomes_[d.name].restarts += 1;
      processes_.erase(it);
    }
    for (const auto& e : plan.events)
      if (e.reason != "SuccessfulCreatePod") Print("tfjob: " + e.type + " " + e.reason + ": " + e.message);
    if (plan.status) job_.status = *plan.status;
    std::vector<std::string> conditions;
    for (const auto& c : job_.status.conditions) conditions.push_back(c.type + "=" + c.status);
    if (live_table() && clock_.SteadyNow() - last_draw_ >= std::chrono::milliseconds(500)) DrawTable();
    if (conditions != last_conditions) {
      std::string text;
      for (const auto& c : conditions) text += (text.empty() ? "" : ", ") + c;
      Print("tfjob: TFJob " + job_.metadata.name + " conditions: " + text);
      last_conditions = conditions;
    }
    if (core::IsFinished(job_.status)) {
      StopAll();
      DrawTable();
      return core::IsSucceeded(job_.status) ? 0 : 1;
    }
    if (stop.stop_requested()) {
      Print("tfjob: interrupted; stopping every replica");
      StopAll();
      return 130;
    }
    for (const auto& c : plan.create_pods) Spawn(c.name);
    auto wait = std::chrono::milliseconds(200);
    if (plan.requeue_after)
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(*plan.requeue_after) +
                                std::chrono::milliseconds(1));
    Pump(wait);
  }
}

}  // namespace tfjob::local
