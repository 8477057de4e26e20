#include "local/local_runner.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "local/pod_supervisor.h"
#include "local/pod_zygote.h"
#include "local/process_tree.h"
#include "local/replica_view.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::local {
namespace {

namespace core = ::tfjob::tfjob::core;

std::string Errno(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// A wait status as an exit code: the code, or 128+N for signal N.
int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

// A socket bound to 127.0.0.1:`port` (0: a free one), not listening: nobody else can bind the
// port, and connections to it are refused as if nothing were there. -1 when it cannot be had.
int BindLoopback(int port, bool reuse) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// Replica ports come from below the kernel's ephemeral range (net.ipv4.ip_local_port_range),
// from a random start: nothing that asks the kernel for any free port (a bind to port 0, an
// outgoing connection, another `tfjob run`'s reservation) can take one in the moment between
// the release of its reservation and the replica's own bind. A range too small for the job
// falls back to ports the kernel picks.
class ReplicaPorts {
 public:
  explicit ReplicaPorts(size_t needed) {
    int ephemeral_low = 32768;
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    int low = 0, high = 0;
    if (range >> low >> high && low > 0) ephemeral_low = low;
    low_ = 10000;
    high_ = ephemeral_low - 1;
    if (high_ - low_ + 1 < static_cast<int>(needed) * 4) {
      low_ = high_ = 0;  // too few: let the kernel choose
      return;
    }
    next_ = low_ + static_cast<int>(std::random_device{}() % static_cast<unsigned>(high_ - low_ + 1));
  }
  // A socket bound to a free port of the range; -1 when there is none.
  int Bind() {
    if (low_ == 0) return BindLoopback(0, false);
    for (int tries = high_ - low_ + 1; tries > 0; --tries) {
      int port = next_;
      next_ = next_ == high_ ? low_ : next_ + 1;
      if (int fd = BindLoopback(port, false); fd >= 0) return fd;
    }
    return -1;
  }

 private:
  int low_ = 0, high_ = 0, next_ = 0;
};

int PortOf(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

std::string PathOf(const std::vector<std::string>& env) {
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->starts_with("PATH=")) return it->substr(5);
  return "/usr/bin:/bin";
}

bool Executable(const std::string& cmd, const std::string& path) {
  if (cmd.find('/') != std::string::npos) return access(cmd.c_str(), X_OK) == 0;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && access((dir + "/" + cmd).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

}  // namespace

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
  bool stopping = false;  // tfjob asked it to stop: its end is "Stopped", not a failure
  int exit_code = 0;
  std::string start_error;
  Clock::SteadyTime started;
  Clock::SteadyTime ended;
  const char* color = "";

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

LocalRunner::LocalRunner(api::TfJob job, RunOptions options, Clock& clock, std::ostream& out)
    : job_(std::move(job)), options_(std::move(options)), clock_(clock), out_(out) {
  if (job_.metadata.ns.empty()) job_.metadata.ns = "default";
  if (job_.metadata.uid.empty()) job_.metadata.uid = "local-" + std::to_string(getpid());
}

LocalRunner::~LocalRunner() {
  StopAll({});
  for (auto& [n, fd] : reserved_) close(fd);
  for (auto& [n, fd] : logs_) close(fd);
  if (status_read_ >= 0) close(status_read_);
  if (status_write_ >= 0) close(status_write_);
}

// First pass (ports not known yet): every container must be runnable here. Counts the output
// pipes and log files the job needs.
Status LocalRunner::CheckCommands(const std::vector<std::pair<api::ReplicaType, int32_t>>& all, size_t* pipes,
                                  size_t* log_files) {
  const core::RenderOptions render = LocalRenderOptions(ports_);
  const core::TfConfigGenerator tf_config(job_, render.tf_config);
  for (const auto& replica : all) {
    const auto type = replica.first;  // a named copy: lambdas cannot capture a binding (clang 14)
    TFJOB_ASSIGN_OR_RETURN(LocalReplica r, LocalReplicaFor(job_, type, replica.second, render, tf_config));
    size_t n = r.init_containers.size() + r.containers.size();
    *pipes += n;
    if (!options_.logs_dir.empty()) *log_files += n;
    auto check = [&](const LocalContainer& c) -> Status {
      if (!Executable(c.argv[0], PathOf(ProcessEnvironment(options_.base_env, c.env))))
        return InvalidArgumentError("spec.tfReplicaSpecs[" + std::string(api::ReplicaTypeName(type)) + "]: command \"" +
                                    c.argv[0] + "\" not found (or not executable) on this machine");
      return OkStatus();
    };
    for (const auto& c : r.init_containers) TFJOB_RETURN_IF_ERROR(check(c));
    for (const auto& c : r.containers) TFJOB_RETURN_IF_ERROR(check(c));
  }
  return OkStatus();
}

// File descriptors: the soft limit goes up to the hard one (the containers get the old one
// back); then the job (`need` files for `replicas` replicas) must fit, or it would stop
// half-started.
Status LocalRunner::RaiseFileLimit(size_t need, size_t replicas) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  nofile_soft_ = lim.rlim_cur;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur != RLIM_INFINITY && need > lim.rlim_cur)
    return InvalidArgumentError(
        "this job needs about " + std::to_string(need) + " open files (" + std::to_string(replicas) +
        " replicas: a reserved port each, an output pipe " + (options_.logs_dir.empty() ? "" : "and a log file ") +
        "per container), but the limit is " + std::to_string(lim.rlim_cur) + " (ulimit -n); raise it (ulimit -n " +
        std::to_string(need) + ") or run fewer replicas");
  return OkStatus();
}

// Ports: one bound socket per replica, held until that replica starts (ReplicaPorts: below the
// ephemeral range, so no other program is handed one in between).
Status LocalRunner::ReservePorts(const std::vector<std::pair<api::ReplicaType, int32_t>>& all) {
  std::set<int> seen;
  ReplicaPorts free_ports(all.size());
  for (const auto& [type, index] : all) {
    const std::string name = core::ReplicaName(job_.metadata.name, type, index);
    int fd = free_ports.Bind();
    if (fd < 0) return InvalidArgumentError("reserving a port on 127.0.0.1 for " + name + ": " + std::strerror(errno));
    int port = PortOf(fd);
    TFJOB_CHECK(seen.insert(port).second);  // a bound port is not handed out twice
    reserved_[name] = fd;
    port_of_[name] = port;
    ports_[{type, index}] = port;
  }
  return OkStatus();
}

// Opens --logs-dir's `key`.log below `dir_fd` into logs_.
Status LocalRunner::OpenLog(int dir_fd, const std::string& key) {
  const std::string& dir = options_.logs_dir;
  const std::string file = key + ".log";
  // Never through a link put there beforehand, never into a FIFO or a device.
  int fd = openat(dir_fd, file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::string why = errno == ELOOP ? "is a symbolic link (not followed)" : std::strerror(errno);
    return InvalidArgumentError("--logs-dir: " + dir + "/" + file + ": " + why);
  }
  struct stat fst {};
  if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
    close(fd);
    return InvalidArgumentError("--logs-dir: " + dir + "/" + file + ": not a regular file");
  }
  fcntl(fd, F_SETFL, 0);
  logs_[key] = fd;
  return OkStatus();
}

// One log file per container in --logs-dir (created when missing).
Status LocalRunner::OpenLogs() {
  const std::string& dir = options_.logs_dir;
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return InvalidArgumentError("--logs-dir " + dir + ": not a directory");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgumentError("--logs-dir " + dir + ": cannot create it: " + ec.message());
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return InvalidArgumentError("--logs-dir " + dir + ": " + std::strerror(errno));
  Status opened = OkStatus();
  for (const auto& [name, r] : replicas_) {
    for (const auto& c : r.init_containers)
      if (opened.ok()) opened = OpenLog(dir_fd, name + "." + c.name);
    for (size_t i = 0; i < r.containers.size(); ++i)
      if (opened.ok()) opened = OpenLog(dir_fd, i == r.main ? name : name + "." + r.containers[i].name);
  }
  close(dir_fd);
  return opened;
}

Status LocalRunner::Prepare() {
  const auto all = AllReplicas(job_);
  size_t pipes = 0, log_files = 0;
  TFJOB_RETURN_IF_ERROR(CheckCommands(all, &pipes, &log_files));
  TFJOB_RETURN_IF_ERROR(RaiseFileLimit(16 + log_files + std::max(all.size(), pipes), all.size()));
  TFJOB_RETURN_IF_ERROR(ReservePorts(all));
  const core::RenderOptions render = LocalRenderOptions(ports_);
  const core::TfConfigGenerator tf_config(job_, render.tf_config);
  for (const auto& [type, index] : all) {
    TFJOB_ASSIGN_OR_RETURN(LocalReplica r, LocalReplicaFor(job_, type, index, render, tf_config));
    outcomes_[r.name] = ReplicaOutcome{r.name, "Pending", 0, -1, {}, {}};
    replicas_.emplace(r.name, std::move(r));
  }
  if (!options_.logs_dir.empty()) TFJOB_RETURN_IF_ERROR(OpenLogs());

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return InvalidArgumentError(Errno("status pipe"));
  status_read_ = fds[0];
  status_write_ = fds[1];
  fcntl(status_read_, F_SETFL, O_NONBLOCK);

  std::string image;
  for (const auto& [n, r] : replicas_) image = image.empty() ? r.image : image;
  if (!image.empty()) Print("note: images are not used locally (" + image + "); each replica runs its command here");
  return OkStatus();
}

void LocalRunner::Print(const std::string& line) {
  out_ << line << "\n" << std::flush;
}

void LocalRunner::ReservePort(const std::string& name) {
  if (reserved_.contains(name)) return;
  // Held again until the restart; after a replica that accepted connections, TIME_WAIT needs
  // SO_REUSEADDR (which still keeps the port from other binders that don't set it, and from
  // outgoing connections).
  int fd = BindLoopback(port_of_[name], false);
  if (fd < 0) fd = BindLoopback(port_of_[name], true);
  if (fd >= 0) reserved_[name] = fd;
}

void LocalRunner::StartFailed(const std::string& name, const std::string& reason) {
  Print("tfjob: " + name + " cannot start: " + reason);
  auto& o = outcomes_[name];
  o.state = "Failed";
  o.reason = reason;
  start_failures_.push_back(name + ": " + reason);
  DrawTable();
}

// The runner's copies of one Spawn's descriptors: the supervisor's ends of the output pipes,
// closed once the supervisor has its own.
struct LocalRunner::SpawnPipes {
  std::vector<int> write_ends;

  void Close() {
    for (int fd : write_ends) close(fd);
    write_ends.clear();
  }
};

// An output pipe per container of `r`, init containers first (a Stream of `p`, the write end in
// `pipes`). False with `failure` set when a pipe cannot be had.
bool LocalRunner::OpenPipes(Process& p, const LocalReplica& r, SpawnPipes& pipes, std::string* failure) {
  const std::string short_name = p.name.substr(job_.metadata.name.size() + 1);
  auto add = [&](const LocalContainer& c, bool is_main) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      *failure = Errno("output pipe");
      return false;
    }
    Stream s;
    s.prefix = is_main ? short_name : short_name + "/" + c.name;
    s.fd = fds[0];
    fcntl(s.fd, F_SETFL, O_NONBLOCK);
    auto log = logs_.find(is_main ? p.name : p.name + "." + c.name);
    s.log_fd = log == logs_.end() ? -1 : log->second;
    p.streams.push_back(std::move(s));
    pipes.write_ends.push_back(fds[1]);
    return true;
  };
  for (const auto& c : r.init_containers)
    if (!add(c, false)) return false;
  for (size_t i = 0; i < r.containers.size(); ++i)
    if (!add(r.containers[i], i == r.main)) return false;
  return true;
}

// Through the pod zygote, started at the first pod; forked from this process when the zygote
// cannot be started or is gone before it read the spec (nothing forked: falling back is safe).
StatusOr<pid_t> LocalRunner::SpawnSupervisor(const SupervisorSpec& spec) {
  if (options_.pod_zygote && !zygote_tried_) {
    zygote_tried_ = true;
    StatusOr<std::unique_ptr<PodZygote>> z = PodZygote::Start();
    if (z.ok()) zygote_ = std::move(*z);
  }
  if (zygote_) {
    StatusOr<pid_t> pid = zygote_->Spawn(spec);
    if (pid.ok() || pid.status().code() == StatusCode::kInternal) return pid;
    if (pid.status().code() == StatusCode::kUnavailable) zygote_.reset();  // else too big for it: fork this one
  }
  return ForkPodSupervisor(spec);
}

// The supervisor `pid` of `p` has started (the runner's copies of the port and the pipes closed).
void LocalRunner::Started(std::unique_ptr<Process> p, pid_t pid) {
  const std::string name = p->name;
  reserved_.erase(name);
  p->pid = pid;
  processes_[name] = std::move(p);
  outcomes_[name].state = "Running";
  Print("tfjob: " + name + " started (pid " + std::to_string(pid) + ")");
  DrawTable();
}

// One replica between its pipes and its fork.
struct LocalRunner::PendingSpawn {
  std::unique_ptr<Process> process;
  SpawnPipes pipes;
  SupervisorSpec spec;
};

bool LocalRunner::PrepareSpawn(const std::string& name, PendingSpawn& out) {
  const LocalReplica& r = replicas_.at(name);
  out.process = std::make_unique<Process>();
  Process& p = *out.process;
  p.name = name;
  p.uid = name + "-" + std::to_string(++spawned_);
  p.started = clock_.SteadyNow();
  p.color = options_.color ? PrefixColor(name) : "";
  std::string failure;
  if (!OpenPipes(p, r, out.pipes, &failure)) {
    out.pipes.Close();
    p.CloseStreams();
    StartFailed(name, failure);
    return false;
  }
  SupervisorSpec& spec = out.spec;
  auto reserved = reserved_.find(name);
  spec.uid = p.uid;
  spec.parent = getpid();
  spec.status_fd = status_write_;
  spec.port_fd = reserved == reserved_.end() ? -1 : reserved->second;
  spec.grace_period = options_.grace_period;
  spec.nofile_soft = nofile_soft_;
  spec.main = r.main;
  size_t pipe = 0;
  auto add = [&](const LocalContainer& c, std::vector<SupervisedContainer>* into) {
    into->push_back(
        {c.name, c.argv, ProcessEnvironment(options_.base_env, c.env), c.working_dir, out.pipes.write_ends[pipe++]});
  };
  for (const auto& c : r.init_containers) add(c, &spec.init_containers);
  for (const auto& c : r.containers) add(c, &spec.containers);
  return true;
}

void LocalRunner::Output(Process& p, const Stream& s, const std::string& line) {
  if (s.log_fd >= 0) WriteAll(s.log_fd, line + "\n");
  if (options_.quiet) return;
  out_ << PrefixedLine(s.prefix, p.color, ShownOutputLine(line)) << "\n";
  out_.flush();
}

void LocalRunner::ReadStream(Process& p, Stream& s) {
  char buf[8192];
  while (s.fd >= 0) {
    ssize_t n = read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.partial.append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = s.partial.find('\n', start)) != std::string::npos) {
        Output(p, s, s.partial.substr(start, nl - start));
        start = nl + 1;
      }
      s.partial.erase(0, start);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    // EOF (every process of the container has closed it) or an error.
    if (!s.partial.empty()) Output(p, s, s.partial);
    s.partial.clear();
    close(s.fd);
    s.fd = -1;
  }
}

void LocalRunner::DrainStatus() {
  char buf[8192];
  for (;;) {
    ssize_t n = read(status_read_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    status_partial_.append(buf, static_cast<size_t>(n));
  }
  size_t start = 0, nl;
  while ((nl = status_partial_.find('\n', start)) != std::string::npos) {
    StatusLine line;
    if (ParseStatusLine(std::string_view(status_partial_).substr(start, nl - start), &line)) {
      for (auto& [n, p] : processes_) {
        if (p->uid != line.uid) continue;
        if (line.kind == "error")
          p->start_error = "container " + line.container + ": " + line.text;
        else if (line.kind == "exit")
          Print("tfjob: " + n + "/" + line.container + " exited with code " + line.text);
      }
    }
    start = nl + 1;
  }
  status_partial_.erase(0, start);
}

void LocalRunner::Pump(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Process*, Stream*>> owners;
  if (status_read_ >= 0) {
    fds.push_back({status_read_, POLLIN, 0});
    owners.emplace_back(nullptr, nullptr);
  }
  for (auto& [n, p] : processes_)
    for (auto& s : p->streams)
      if (s.fd >= 0) {
        fds.push_back({s.fd, POLLIN, 0});
        owners.emplace_back(p.get(), &s);
      }
  if (fds.empty()) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  if (poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    if (owners[i].first == nullptr)
      DrainStatus();
    else
      ReadStream(*owners[i].first, *owners[i].second);
  }
}

void LocalRunner::Reap() {
  // tfjob is a child subreaper: besides the supervisors, orphans may come here; reap them too.
  std::vector<std::pair<Process*, int>> ended;
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    if (zygote_ && pid == zygote_->pid()) zygote_->Reaped();  // killed from outside
    for (auto& [n, p] : processes_)
      if (p->pid == pid && !p->exited) ended.emplace_back(p.get(), ExitCodeOf(status));
  }
  if (ended.empty()) return;
  DrainStatus();  // a supervisor writes its status lines before it exits
  for (auto& [p, code] : ended) {
    p->exited = true;
    p->ended = clock_.SteadyNow();
    p->exit_code = code;
    for (auto& s : p->streams) ReadStream(*p, s);  // its processes are gone: all of it is there
    auto& o = outcomes_[p->name];
    o.run_time = std::chrono::duration_cast<std::chrono::milliseconds>(p->ended - p->started);
    ReservePort(p->name);
    if (!p->start_error.empty()) {
      StartFailed(p->name, p->start_error);
      continue;
    }
    o.exit_code = code;
    o.state = p->stopping ? "Stopped" : code == 0 ? "Succeeded" : "Failed";
    Print("tfjob: " + p->name + " exited with code " + std::to_string(code));
    DrawTable();
  }
}

bool LocalRunner::AllEnded(const std::vector<Process*>& targets) {
  bool done = true;
  for (Process* p : targets) done = done && p->exited && p->drained();
  return done;
}

// SIGKILL to every target left and to everything below it.
void LocalRunner::KillNow(const std::vector<Process*>& targets) {
  auto reap = [this] { Reap(); };
  for (Process* p : targets)
    if (!p->exited) {
      KillDescendants(p->pid, reap, std::chrono::seconds(1));
      kill(p->pid, SIGKILL);
    }
}

// A pipe still open after the kill: a process that escaped its supervisor (one killed from
// outside) holds it. Reads what is there and closes them; true when every target has exited.
bool LocalRunner::CloseEscaped(const std::vector<Process*>& targets) {
  for (Process* p : targets) {
    for (auto& s : p->streams) ReadStream(*p, s);
    p->CloseStreams();
  }
  return std::all_of(targets.begin(), targets.end(), [](Process* p) { return p->exited; });
}

void LocalRunner::StopProcesses(const std::vector<Process*>& targets, std::stop_token kill_now) {
  for (Process* p : targets)
    if (!p->exited) {
      p->stopping = true;
      kill(p->pid, SIGTERM);
    }  // all at once; each supervisor keeps its own grace period
  // The supervisors SIGKILL what is left after the grace period; this is the backstop.
  const auto deadline = clock_.SteadyNow() + options_.grace_period + std::chrono::seconds(2);
  std::optional<Clock::SteadyTime> forced;
  for (;;) {
    Reap();
    if (AllEnded(targets)) return;
    if (!forced && (kill_now.stop_requested() || clock_.SteadyNow() >= deadline)) {
      if (kill_now.stop_requested()) Print("tfjob: interrupted again; killing every replica now");
      KillNow(targets);
      forced = clock_.SteadyNow();
    }
    if (forced && clock_.SteadyNow() - *forced > std::chrono::seconds(2) && CloseEscaped(targets)) return;
    Pump(std::chrono::milliseconds(20));
  }
}

void LocalRunner::StopAll(std::stop_token kill_now) {
  std::vector<Process*> targets;
  std::set<std::string> running;
  for (auto& [n, p] : processes_) {
    targets.push_back(p.get());
    if (!p->exited) running.insert(n);
  }
  StopProcesses(targets, kill_now);
  zygote_.reset();  // no more pods: it ends at its socket's EOF
  // Whatever reached tfjob as an orphan (its supervisor killed from outside) goes too.
  KillDescendants(getpid(), [this] { Reap(); });
  for (auto& [n, p] : processes_) {
    p->CloseStreams();
    if (running.contains(n) && outcomes_[n].state == "Running") {  // never reaped (not ours any more)
      outcomes_[n].state = "Stopped";
      outcomes_[n].run_time = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.SteadyNow() - p->started);
    }
  }
}

std::vector<std::string> LocalRunner::TableRows() const {
  std::vector<ReplicaRow> rows;
  auto now = clock_.SteadyNow();
  for (const auto& [n, o] : outcomes_) {
    auto run_time = o.run_time;
    if (auto it = processes_.find(n); it != processes_.end() && !it->second->exited)
      run_time = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second->started);
    rows.push_back({n, o.state, o.restarts, o.exit_code, run_time, ""});
  }
  return FormatReplicaTable(rows);
}

bool LocalRunner::live_table() const {
  return LiveTableFits(replicas_.size(), options_.terminal_rows);
}

std::string LocalRunner::FormatTable() const {
  std::string out;
  for (const auto& r : TableRows()) out += r + "\n";
  return out;
}

void LocalRunner::DrawTable() {
  if (!live_table()) return;
  last_draw_ = clock_.SteadyNow();
  out_ << LiveTableFrame(TableRows()) << std::flush;
}

// The processes as the core sees pods; every replica's "service" exists already (its port was
// reserved up front).
core::ObservedState LocalRunner::Observe() const {
  core::ObservedState observed{job_, {}, {}, std::nullopt, clock_.Now()};
  for (const auto& [n, p] : processes_) {
    const LocalReplica& r = replicas_.at(n);
    api::Pod pod;
    pod.meta.name = n;
    pod.meta.ns = job_.metadata.ns;
    pod.meta.uid = p->uid;
    pod.meta.job_name = job_.metadata.name;
    pod.meta.replica_type = r.type;
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
  for (const auto& [n, r] : replicas_) {
    api::Service svc;
    svc.meta.name = n;
    svc.meta.controller_uid = job_.metadata.uid;
    svc.meta.replica_type = r.type;
    svc.meta.replica_index = r.index;
    observed.services.push_back(svc);
  }
  return observed;
}

// The plan's pod deletes: each process stopped, and counted as a restart once it has exited.
void LocalRunner::DeletePods(const core::Plan& plan, std::stop_token kill_now) {
  for (const auto& d : plan.delete_pods) {
    auto it = processes_.find(d.name);
    if (it == processes_.end()) continue;
    StopProcesses({it->second.get()}, kill_now);
    if (!it->second->exited) continue;
    it->second->CloseStreams();
    outcomes_[d.name].restarts += 1;
    processes_.erase(it);
  }
}

// The plan's events and status: printed, the live table redrawn, the conditions printed when
// they changed since `last_conditions`.
void LocalRunner::ReportPlan(const core::Plan& plan, std::vector<std::string>* last_conditions) {
  // ExitedWithCode repeats the runner's own "<replica> exited with code N" line.
  for (const auto& e : plan.events)
    if (e.reason != "SuccessfulCreatePod" && e.reason != "ExitedWithCode")
      Print("tfjob: " + std::string(api::EnumName(e.type)) + " " + e.reason + ": " + e.message);
  if (plan.status) job_.status = *plan.status;
  std::vector<std::string> conditions;
  for (const auto& c : job_.status.conditions) conditions.push_back(c.type + "=" + c.status);
  if (live_table() && clock_.SteadyNow() - last_draw_ >= std::chrono::milliseconds(500)) DrawTable();
  if (conditions != *last_conditions) {
    std::string text;
    for (const auto& c : conditions) text += (text.empty() ? "" : ", ") + c;
    Print("tfjob: TFJob " + job_.metadata.name + " conditions: " + text);
    *last_conditions = conditions;
  }
}

// The plan's pod creates, until one cannot start. When the supervisors are forked from this
// process (no zygote), between two forks it writes as little as it can: a page it writes while
// supervisors forked before share it is copied (copy-on-write). So each replica's spec stays until every fork is done
// (freeing one right after its fork touched tens of shared pages per replica), and the bookkeeping comes after the
// forks; only the descriptors are closed at once (the kernel's memory, not ours), so a job needs no more of them at a
// time than one replica's (issue 25 item 6).
void LocalRunner::CreatePods(const core::Plan& plan) {
  std::vector<PendingSpawn> pending(plan.create_pods.size());  // never reallocated while forking
  std::vector<pid_t> pids(pending.size(), -1);
  size_t tried = 0;
  std::string fork_error;
  // This process holds each pod's reserved port until the supervisor has started (and a
  // supervisor forked from this process, the fallback, holds copies of the other replicas'
  // reserved ports until it closes them): the batch's start barrier keeps every container from
  // starting (binding its port) before all of them are closed.
  int barrier[2] = {-1, -1};
  if (pipe2(barrier, O_CLOEXEC) != 0) barrier[0] = barrier[1] = -1;
  for (; tried < pending.size(); ++tried) {
    PendingSpawn& ps = pending[tried];
    if (!PrepareSpawn(plan.create_pods[tried].name, ps)) break;
    ps.spec.start_barrier_fd = barrier[0];
    StatusOr<pid_t> pid = SpawnSupervisor(ps.spec);
    if (!pid.ok()) {
      fork_error = pid.status().message();
      ps.pipes.Close();
      ps.process->CloseStreams();
      break;
    }
    pids[tried] = *pid;
    // The supervisor has its copies now; the port stays reserved in it until the containers start.
    if (auto reserved = reserved_.find(ps.process->name); reserved != reserved_.end()) {
      close(reserved->second);
      reserved->second = -1;
    }
    ps.pipes.Close();
  }
  if (barrier[1] >= 0) close(barrier[1]);
  AwaitStartBarrier(barrier[0]);  // also here: the next batch is forked only after this one let go
  for (size_t i = 0; i < tried; ++i) Started(std::move(pending[i].process), pids[i]);
  if (!fork_error.empty()) StartFailed(pending[tried].process->name, fork_error);
}

int LocalRunner::Run(std::stop_token stop, std::stop_token kill_now) {
  // Orphans of the replicas come back to tfjob (not to init), so StopAll can find them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (live_table()) {
    // Rows 1..h hold the table; output scrolls in the region below it.
    out_ << LiveTableBegin(replicas_.size(), options_.terminal_rows) << std::flush;
  }
  struct RestoreTerminal {
    LocalRunner* r;
    ~RestoreTerminal() {
      if (r->live_table()) r->out_ << LiveTableEnd(r->options_.terminal_rows) << std::flush;
    }
  } restore{this};
  core::ReconcileOptions options;
  // Spawn starts a replica from replicas_ (made in Prepare), never from the plan's pod: rendering
  // every pod to create (each with a TF_CONFIG naming every replica) cost O(replicas^2) per plan,
  // and the plan held it while every supervisor was forked from this process (issue 25 item 6).
  options.defer_pod_rendering = true;
  options.render.tf_config.endpoint = [this](api::ReplicaType t, int32_t i, int32_t) {
    return "127.0.0.1:" + std::to_string(ports_[{t, i}]);
  };
  std::vector<std::string> last_conditions;
  for (;;) {
    Reap();
    if (!start_failures_.empty()) {
      StopAll(kill_now);
      DrawTable();
      return kRunExitCannotStart;
    }
    core::Plan plan = core::Reconcile(Observe(), options);
    DeletePods(plan, kill_now);
    ReportPlan(plan, &last_conditions);
    if (core::IsFinished(job_.status)) {
      StopAll(kill_now);
      DrawTable();
      return core::IsSucceeded(job_.status) ? 0 : 1;
    }
    if (stop.stop_requested()) {
      Print("tfjob: interrupted; stopping every replica");
      StopAll(kill_now);
      return 130;
    }
    CreatePods(plan);
    auto wait = std::chrono::milliseconds(200);
    if (plan.requeue_after)
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(*plan.requeue_after) +
                                std::chrono::milliseconds(1));
    Pump(wait);
  }
}

}  // namespace tfjob::local
