// `tfjob logs NAME [-f] [--replica R | --type T] [-p] [--since D]` (docs/cli.md): the merged,
// prefixed logs of a job's replicas.
#include <algorithm>

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/job_view.h"
#include "cli/log_follower.h"
#include "cli/session.h"
#include "cli/tracker.h"
#include "kube/tfjob_resources.h"
#include "local/replica_view.h"

namespace tfjob::cli {
namespace {

using Ms = std::chrono::milliseconds;
using api::kExitFailed;
using api::kExitInterrupted;
using api::kExitOk;
using api::kExitUsage;
using kube::kTfJobs;

// A pod's log as `tfjob logs` reads it without -f: at most this much of each container.
constexpr size_t kMaxLogBytes = 16 * 1024 * 1024;

bool MatchesReplica(const PodView& p, const std::string& job, const CliArgs& a) {
  if (!a.replica.empty()) return p.name == a.replica || p.name == job + "-" + a.replica;
  if (!a.type.empty()) {
    std::string t = a.type, l = p.replica_type;
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t == l;
  }
  return true;
}

// One line of a log read without -f, with its timestamp.
struct LogLine {
  std::string time, prefix, text;
  const char* color;
};

// Splits the body of a log read with timestamps=true into its lines.
void AddLogLines(const std::string& body, const std::string& prefix, const char* color, std::vector<LogLine>& lines) {
  size_t start = 0;
  while (start < body.size()) {
    size_t nl = body.find('\n', start);
    if (nl == std::string::npos) nl = body.size();
    std::string l = body.substr(start, nl - start);
    start = nl + 1;
    size_t sp = l.find(' ');
    std::string t = sp == std::string::npos ? "" : l.substr(0, sp);
    lines.push_back({t, prefix, sp == std::string::npos ? l : l.substr(sp + 1), color});
  }
}

// Without -f: the logs of the pods' containers so far, merged across the replicas by time.
int PrintLogs(Session& s, const CliArgs& a, const CliIo& io, const JobView& job, Output& out, bool color,
              const std::string& extra) {
  kube::ListOptions o;
  o.label_selector = JobPodSelector(a.name);
  auto list = s.client->ListAll(kube::kPods, s.ns, o, nullptr);
  if (!list.ok()) return Fail(s, list.status(), *io.err);
  std::vector<PodView> pods = JobPods(*list, job.uid);
  std::erase_if(pods, [&](const PodView& p) { return !MatchesReplica(p, a.name, a); });
  if (pods.empty()) {
    *io.err << "tfjob: " << JobRef(s.ns, a.name) << " has no pods"
            << (a.replica.empty() && a.type.empty() ? "" : " matching the --replica/--type given") << "\n";
    return kExitFailed;
  }
  std::vector<LogLine> lines;
  int rc = kExitOk;
  for (const auto& p : pods) {
    for (const auto& c : p.containers) {
      bool main = c.name == p.main.name;
      std::string prefix = LogPrefix(a.name, p.name, c.name, main);
      auto body = s.client->GetText(
          LogPath(s.ns, p.name, c.name, "&timestamps=true&limitBytes=" + std::to_string(kMaxLogBytes) + extra),
          kMaxLogBytes + 4096);
      const char* pc = color ? local::PrefixColor(p.name) : "";
      if (!body.ok()) {
        if (body.status().code() == StatusCode::kUnavailable) return Fail(s, body.status(), *io.err);
        *io.err << "tfjob: [" << prefix << "] " << Esc(body.status().message()) << "\n";
        rc = kExitFailed;
        continue;
      }
      AddLogLines(*body, prefix, pc, lines);
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const LogLine& x, const LogLine& y) { return x.time < y.time; });
  for (auto& l : lines) {
    if (!l.text.empty() && l.text.back() == '\r') l.text.pop_back();
    out.Line(local::PrefixedLine(l.prefix, l.color, Esc(l.text)));
  }
  return rc;
}

// -f: every current and future container instance, until Ctrl-C or the job has ended and
// every stream with it.
int FollowLogs(Session& s, const CliArgs& a, const CliIo& io, JobView job, Output& out, bool color,
               const std::string& extra) {
  return WithStops(io, [&](std::stop_token stop, std::stop_token) {
    Signal signal;
    Tracker job_tracker(*s.client, {kTfJobs, s.ns, "", "metadata.name=" + a.name}, [&] { signal.Notify(); });
    Tracker pod_tracker(*s.client, {kube::kPods, s.ns, JobPodSelector(a.name), ""}, [&] { signal.Notify(); });
    job_tracker.Start();
    pod_tracker.Start();
    LogFollowOptions lo;
    lo.max_requests = a.max_log_requests;
    lo.first_query = extra;
    lo.color = color;
    LogFollower follower(
        *s.client, s.ns, a.name, [&out](const std::string& line) { out.Line(line); }, lo);
    while (!stop.stop_requested()) {
      signal.Wait(Ms(500));
      for (const Tracker* t : {&job_tracker, &pod_tracker})
        if (std::string why = t->GaveUp(); !why.empty()) {
          follower.StopAll();
          SayGaveUp(s, why, *io.err);
          return kExitUsage;
        }
      auto jobs = job_tracker.Snapshot();
      if (jobs.empty() && job_tracker.synced()) break;  // deleted
      if (!jobs.empty()) job = DecodeJobView(jobs.front());
      auto pods = JobPods(pod_tracker.Snapshot(), job.uid);
      std::erase_if(pods, [&](const PodView& p) { return !MatchesReplica(p, a.name, a); });
      if (Status st = follower.Update(pods); !st.ok()) {
        follower.StopAll();
        *io.err << "tfjob: " << JobRef(s.ns, a.name) << ": " << Esc(st.message()) << "\n";
        return kExitUsage;
      }
      if (pod_tracker.synced() && JobFinished(job) && follower.Idle()) break;
    }
    follower.StopAll();
    return stop.stop_requested() ? kExitInterrupted : 0;
  });
}

int Logs(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return kExitUsage;
  Session& s = *session;
  auto j = s.client->Get(kTfJobs, s.ns, a.name);
  if (!j.ok()) return JobGetFailed(s, a.name, j.status(), *io.err);
  JobView job = DecodeJobView(*j);
  Output out(*io.out);
  bool color = io.out_is_terminal;
  std::string extra;
  if (a.previous) extra += "&previous=true";
  if (a.since) extra += "&sinceSeconds=" + std::to_string(a.since->count());
  if (!a.follow) return PrintLogs(s, a, io, job, out, color, extra);
  return FollowLogs(s, a, io, std::move(job), out, color, extra);
}

class LogsCommand : public ClusterCommand {
 public:
  explicit LogsCommand(CLI::App& root)
      : ClusterCommand(root, "logs", "The merged, prefixed logs of a TFJob's replicas") {
    CLI::App& app = this->app();
    app.add_option("NAME", args_.name, "The TFJob")->required();
    auto* replica = app.add_option("--replica", args_.replica, "One replica: worker-0 (or the pod's name)");
    app.add_option("--type", args_.type, "The replicas of one type: Worker, PS, Chief, ...")->excludes(replica);
    app.add_flag("-f,--follow", args_.follow, "Follow the logs, and the new pods after restarts (Ctrl-C ends)");
    app.add_flag("-p,--previous", args_.previous, "The logs of the previous (restarted) container");
    app.add_option("--since", since_, "Only lines newer than this (5s, 2m, 3h)");
    AddMaxLogRequests("a job with more containers to follow at once is refused (exit 2)");
  }

 protected:
  int RunCluster(const CliArgs& a, const CliIo& io) override { return Logs(a, io); }
};

}  // namespace

std::unique_ptr<Command> DefineLogs(CLI::App& root) {
  return std::make_unique<LogsCommand>(root);
}

}  // namespace tfjob::cli
