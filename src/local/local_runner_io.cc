// LocalRunner's side of the running pods: their output read and printed, their exits reaped,
// and their stop (SIGTERM, the grace period, SIGKILL, what escaped).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <thread>

#include "local/local_runner_process.h"
#include "local/pod_supervisor.h"
#include "local/pod_zygote.h"
#include "local/process_tree.h"
#include "local/replica_view.h"

namespace tfjob::local {
namespace {

// A wait status as an exit code: the code, or 128+N for signal N.
int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace

void LocalRunner::Output(Process& p, const Stream& s, const std::string& line) {
  if (s.log_fd >= 0) WriteAll(s.log_fd, line + "\n");
  if (options_.observer != nullptr) options_.observer->Output(s.prefix, line);
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
        else if (line.kind == "start")
          Print("tfjob: " + n + (line.container == replicas_.at(n).main_container().name ? "" : "/" + line.container) +
                " started (pid " + line.text + ")");
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
    o.total_run_time += o.run_time;
    ports_reserved_.ReserveAgain(p->name);
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
      outcomes_[n].total_run_time += outcomes_[n].run_time;
    }
  }
  // A restart that waited for its back-off never comes.
  for (const auto& [n, ended] : held_restarts_) {
    outcomes_[n].state = "Stopped";
    outcomes_[n].next_start.reset();
  }
  held_restarts_.clear();
}

}  // namespace tfjob::local
