#include "cli/dashboard_local.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/labels.h"
#include "api/manifest.h"
#include "api/tfjob_json.h"
#include "cli/dashboard_server.h"
#include "local/replica_view.h"

namespace tfjob::cli::dashboard {
namespace {

using nlohmann::json;

json TimeOrNull(const std::optional<api::Time>& t) {
  return t ? json(api::FormatTime(*t)) : json(nullptr);
}

// The child: serves until tfjob (its parent) ends. Never returns.
[[noreturn]] void ServeChild(int feed, int ready, const std::string& address, const std::string& title,
                             const std::string& job, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(api::kExitOk);  // tfjob ended before the line above
  signal(SIGPIPE, SIG_IGN);
  // Ctrl-C reaches the whole process group: the page stays while tfjob stops its replicas, and
  // goes with tfjob.
  sigset_t interrupt;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  pthread_sigmask(SIG_BLOCK, &interrupt, nullptr);
  // Nothing of tfjob's terminal or pipes is held (a caller reading tfjob's output to its end).
  if (int null = open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0)
    for (int fd : {0, 1, 2}) dup2(null, fd);
  RealClock clock;
  Model model(clock);
  ServerOptions options;
  options.address = address;
  options.mode = "local";
  options.title = title;
  Server server(model, options);
  std::string answer;
  if (Status s = server.Start(); !s.ok())
    answer = "error " + s.message() + "\n";
  else
    answer = "ok " + server.Url() + "\n";
  (void)!write(ready, answer.data(), answer.size());
  close(ready);
  if (answer.rfind("ok ", 0) != 0) _exit(api::kExitUsage);
  std::string partial;
  char buf[65536];
  for (;;) {
    ssize_t n = read(feed, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // tfjob closed the feed: the run is over
    partial.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1)
      (void)ApplyFeedLine(model, job, std::string_view(partial).substr(start, nl - start));
    partial.erase(0, start);
  }
  // The page keeps showing the finished run until tfjob exits (PR_SET_PDEATHSIG).
  for (;;) pause();
}

}  // namespace

StatusOr<LocalDashboard> StartLocalDashboard(const std::string& address, const std::string& title) {
  TFJOB_ASSIGN_OR_RETURN(bool loopback, LoopbackAddress(address));
  if (!loopback)
    return InvalidArgumentError("--dashboard-address " + address + ": a local run's dashboard serves 127.0.0.1 only");
  int feed[2], ready[2];
  if (pipe2(feed, O_CLOEXEC) != 0) return UnavailableError(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(ready, O_CLOEXEC) != 0) {
    close(feed[0]);
    close(feed[1]);
    return UnavailableError(std::string("pipe: ") + std::strerror(errno));
  }
  const std::string job = title;
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return UnavailableError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(feed[1]);
    close(ready[0]);
    ServeChild(feed[0], ready[1], address, title, job, parent);
  }
  close(feed[0]);
  close(ready[1]);
  std::string answer;
  char buf[512];
  pollfd p{ready[0], POLLIN, 0};
  while (answer.find('\n') == std::string::npos && poll(&p, 1, 10000) > 0) {
    ssize_t n = read(ready[0], buf, sizeof buf);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(ready[0]);
  if (answer.rfind("ok ", 0) != 0) {
    close(feed[1]);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::string why = answer.rfind("error ", 0) == 0 ? answer.substr(6) : "the dashboard's process did not start";
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return UnavailableError(why);
  }
  fcntl(feed[1], F_SETFL, fcntl(feed[1], F_GETFL) | O_NONBLOCK);
  return LocalDashboard{pid, feed[1], answer.substr(3, answer.find('\n') - 3)};
}

Status ApplyFeedLine(Model& model, const std::string& job, std::string_view line) {
  auto m = api::ParseJsonStrict(line);
  if (!m.ok() || !m->is_object()) return InvalidArgumentError("not a JSON object");
  if (auto log = m->find("log"); log != m->end() && log->is_string()) {
    model.Log(kLocalNamespace, job, log->get<std::string>());
    return OkStatus();
  }
  auto kind = KindNamed(api::StringField(*m, "k"));
  const std::string t = api::StringField(*m, "t");
  auto o = m->find("o");
  if (!kind || o == m->end() || !o->is_object()) return InvalidArgumentError("not a feed message");
  auto type = t == "DELETED" ? kube::WatchEventType::kDeleted
              : t == "ADDED" ? kube::WatchEventType::kAdded
                             : kube::WatchEventType::kModified;
  model.Apply(*kind, type, std::move(*o));
  return OkStatus();
}

LocalFeed::LocalFeed(int fd, Clock& clock, size_t max_buffered)
    : fd_(fd), clock_(clock), max_buffered_(max_buffered), created_(clock.Now()) {}

LocalFeed::~LocalFeed() {
  if (fd_ >= 0) close(fd_);
}

json LocalFeed::JobJson(const api::TfJob& job, api::Time created) {
  json specs = json::object();
  for (const auto& [type, spec] : job.spec.replica_specs) {
    if (!spec) continue;
    json s = {{"replicas", api::ReplicasOrDefault(*spec)}, {"template", spec->pod_template}};
    json policy = spec->restart_policy;
    if (policy.is_string() && !policy.get<std::string>().empty()) s["restartPolicy"] = policy;
    specs[type] = s;
  }
  json meta = api::EncodeObjectMeta(job.metadata);
  meta["namespace"] = kLocalNamespace;
  meta["uid"] = "local-" + job.metadata.name;
  meta["creationTimestamp"] = api::FormatTime(created);
  return {{"apiVersion", job.api_version},
          {"kind", job.kind},
          {"metadata", meta},
          {"spec", {{"runPolicy", {{"suspend", false}}}, {"tfReplicaSpecs", specs}}},
          {"status", api::EncodeStatus(job.status)}};
}

json LocalFeed::PodJson(const std::string& job, const std::string& replica, const Attempt& a) {
  std::string short_name = replica.substr(std::min(replica.size(), job.size() + 1));
  auto dash = short_name.rfind('-');
  json labels = {{api::kLabelJobName, job},
                 {api::kLabelReplicaType, dash == std::string::npos ? short_name : short_name.substr(0, dash)},
                 {api::kLabelReplicaIndex, dash == std::string::npos ? "0" : short_name.substr(dash + 1)}};
  json container = {{"name", "tensorflow"}, {"restartCount", 0}};
  if (a.state == "Running") {
    container["state"] = {{"running", {{"startedAt", TimeOrNull(a.started)}}}};
  } else if (a.state == "Succeeded" || a.state == "Failed" || a.state == "Stopped") {
    container["state"] = {{"terminated",
                           {{"exitCode", std::max(a.exit_code, a.state == "Succeeded" ? 0 : 1)},
                            {"reason", a.state == "Stopped"  ? "Stopped"
                                       : a.state == "Failed" ? "Error"
                                                             : "Completed"},
                            {"startedAt", TimeOrNull(a.started)},
                            {"finishedAt", TimeOrNull(a.finished)}}}};
  } else {
    container["state"] = {{"waiting", {{"reason", "ContainerCreating"}}}};
  }
  std::string phase = a.state == "Running"     ? "Running"
                      : a.state == "Succeeded" ? "Succeeded"
                      : a.state == "Pending"   ? "Pending"
                      : a.state.empty()        ? "Pending"
                                               : "Failed";
  return {{"metadata",
           {{"name", replica},
            {"namespace", kLocalNamespace},
            {"uid", replica + "-" + std::to_string(a.number)},
            {"labels", labels},
            {"creationTimestamp", TimeOrNull(a.created)}}},
          {"spec", {{"nodeName", "localhost"}}},
          {"status",
           {{"phase", phase}, {"startTime", TimeOrNull(a.started)}, {"containerStatuses", json::array({container})}}}};
}

bool LocalFeed::Advance(Attempt& a, const local::ReplicaOutcome& o, api::Time now) {
  if (o.state == a.state && o.exit_code == a.exit_code) return false;
  if (o.state == "Running" && !a.started) a.started = now;
  if ((o.state == "Succeeded" || o.state == "Failed" || o.state == "Stopped") && !a.finished) {
    a.finished = now;
    if (!a.started) a.started = now;
  }
  a.state = o.state;
  a.exit_code = o.exit_code;
  return true;
}

void LocalFeed::Changed(const api::TfJob& job, const std::map<std::string, local::ReplicaOutcome>& replicas) {
  job_name_ = job.metadata.name;
  json j = JobJson(job, created_);
  if (j != last_job_) {
    Send({{"k", "jobs"}, {"t", "MODIFIED"}, {"o", j}}, false);
    last_job_ = std::move(j);
  }
  const api::Time now = clock_.Now();
  for (const auto& [name, o] : replicas) {
    auto [it, fresh] = attempts_.try_emplace(name);
    Attempt& a = it->second;
    // Only a change of the outcome since the last pass moves an attempt: after a restart the
    // outcome keeps the last exit until the next process runs, which is not the new attempt's.
    const std::pair<std::string, int> outcome{o.state, o.exit_code};
    const bool changed = fresh || seen_[name] != outcome;
    seen_[name] = outcome;
    if (fresh) a.created = now;
    if (!fresh && o.restarts != a.number) {
      // The previous attempt ended (its exit is still the replica's outcome in this pass) and
      // its pod goes; the next one is created now, pending until its process starts.
      if (Advance(a, o, now)) Send({{"k", "pods"}, {"t", "MODIFIED"}, {"o", PodJson(job_name_, name, a)}}, false);
      Send({{"k", "pods"}, {"t", "DELETED"}, {"o", PodJson(job_name_, name, a)}}, false);
      a = Attempt{o.restarts, "Pending", -1, now, {}, {}};
      Send({{"k", "pods"}, {"t", "ADDED"}, {"o", PodJson(job_name_, name, a)}}, false);
      continue;
    }
    if (!changed || (!Advance(a, o, now) && !fresh)) continue;
    Send({{"k", "pods"}, {"t", "MODIFIED"}, {"o", PodJson(job_name_, name, a)}}, false);
  }
  Flush();
}

void LocalFeed::Event(const std::string& type, const std::string& reason, const std::string& message) {
  const std::string when = api::FormatTime(clock_.Now());
  json e = {{"metadata", {{"name", "local-event-" + std::to_string(++events_)}, {"namespace", kLocalNamespace}}},
            {"involvedObject", {{"kind", "TFJob"}, {"name", job_name_}, {"namespace", kLocalNamespace}}},
            {"type", type},
            {"reason", reason},
            {"message", message},
            {"count", 1},
            {"lastTimestamp", when}};
  Send({{"k", "events"}, {"t", "ADDED"}, {"o", e}}, false);
}

void LocalFeed::Output(const std::string& prefix, const std::string& line) {
  Send({{"log", local::PrefixedLine(prefix, "", local::ShownOutputLine(line))}}, true);
}

void LocalFeed::Send(const json& message, bool droppable) {
  if (fd_ < 0) return;
  // Log lines past the bound are dropped; the job's state never (it is small, and the bound x2
  // still holds it).
  if (buffer_.size() > (droppable ? max_buffered_ : 2 * max_buffered_)) {
    ++dropped_;
    return;
  }
  buffer_ += message.dump(-1, ' ', false, json::error_handler_t::replace);
  buffer_ += '\n';
  Flush();
}

void LocalFeed::Flush() {
  while (fd_ >= 0 && !buffer_.empty()) {
    ssize_t n = write(fd_, buffer_.data(), buffer_.size());
    if (n > 0) {
      buffer_.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close(fd_);  // the dashboard's process is gone: the run goes on without it
    fd_ = -1;
    buffer_.clear();
  }
}

}  // namespace tfjob::cli::dashboard
