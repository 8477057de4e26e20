#include "cli/job_wait.h"

#include <memory>
#include <vector>

#include "api/exit_codes.h"
#include "cli/job_view.h"
#include "cli/tracker.h"
#include "kube/tfjob_resources.h"
#include "local/replica_view.h"

namespace tfjob::cli {
namespace {

using nlohmann::json;
using Ms = std::chrono::milliseconds;
using api::kExitFailed;
using api::kExitInterrupted;
using api::kExitOk;
using api::kExitTimeout;
using api::kExitUsage;
using kube::kTfJobs;

// One `submit --wait` (WaitForJob): the trackers of the job and its pods, the log streams, and
// what was shown so far (the live table or the change lines, the conditions line).
class JobWait {
 public:
  JobWait(Session& s, const std::string& ns, const std::string& name, const WaitOptions& options, const CliIo& io)
      : s_(s),
        ns_(ns),
        name_(name),
        options_(options),
        io_(io),
        out_(*io.out),
        job_tracker_(*s.client, {kTfJobs, ns, "", "metadata.name=" + name}, [this] { signal_.Notify(); }),
        pod_tracker_(*s.client, {kube::kPods, ns, JobPodSelector(name), ""}, [this] { signal_.Notify(); }) {}

  int Run(std::stop_token stop) {
    stop_ = stop;
    job_tracker_.Start();
    pod_tracker_.Start();
    if (options_.follow) {
      LogFollowOptions lo;
      lo.max_requests = options_.max_log_requests;
      lo.color = io_.out_is_terminal;
      lo.queue_excess = true;  // the wait goes on; the excess containers wait for a slot
      logs_ = std::make_unique<LogFollower>(
          *s_.client, ns_, name_, [this](const std::string& line) { out_.Line(line); }, lo);
    }
    const auto started = std::chrono::steady_clock::now();
    for (;;) {
      signal_.Wait(Ms(500));
      if (std::optional<int> rc = GiveUpIfStreamsFail()) return *rc;
      auto jobs = job_tracker_.Snapshot();
      if (jobs.empty()) {
        if (seen_ && job_tracker_.synced()) return Finish(kExitFailed, JobRef(ns_, name_) + " was deleted");
      } else {
        seen_ = true;
        job_ = DecodeJobView(jobs.front());
        pods_ = JobPods(pod_tracker_.Snapshot(), job_.uid);
      }
      if (seen_) {
        if (JobFinished(job_)) CatchUpPods();
        Show();
        if (!logs_refused_.empty()) {
          *io_.err << "tfjob: " << JobRef(ns_, name_) << ": " << logs_refused_ << "\n";
          return Finish(kExitUsage, "tfjob: stopped watching " + JobRef(ns_, name_) + " (it keeps running)");
        }
        if (JobFinished(job_)) return Finish(JobSucceeded(job_) ? kExitOk : kExitFailed, Outcome());
      }
      if (stop.stop_requested()) return Interrupted();
      if (options_.timeout && std::chrono::steady_clock::now() - started >= *options_.timeout)
        return Finish(kExitTimeout, "tfjob: timed out after " + FormatMs(*options_.timeout) + " waiting for " +
                                        JobRef(ns_, name_) + " (it keeps running)");
    }
  }

 private:
  // A watch that keeps failing (junk, a line over the limit) ends the wait with exit 2.
  std::optional<int> GiveUpIfStreamsFail() {
    for (const Tracker* t : {&job_tracker_, &pod_tracker_})
      if (std::string why = t->GaveUp(); !why.empty()) {
        SayGaveUp(s_, why, *io_.err);
        return Finish(kExitUsage, "tfjob: stopped watching " + JobRef(ns_, name_) + " (it keeps running)");
      }
    return std::nullopt;
  }

  // The job's end can arrive before the pod change that caused it (two watches, each in its own
  // order): one list of the pods, made after that condition was seen, so the last lines and the
  // table show the pods' final states. A pod missing from it (deleted at the end) keeps what the
  // watch showed; a failed list leaves the watch's view.
  void CatchUpPods() {
    auto list = s_.client->List(kube::kPods, ns_, {.label_selector = JobPodSelector(name_)});
    if (!list.ok()) return;
    if (auto items = list->find("items"); items != list->end() && items->is_array())
      pod_tracker_.Upsert(std::move(items->get_ref<json::array_t&>()));
    pods_ = JobPods(pod_tracker_.Snapshot(), job_.uid);
  }

  // The replicas (the live table, else their changes), the conditions when they changed, and
  // the log streams of new container instances.
  void Show() {
    auto rows = ReplicaRows(job_, pods_, s_.clock.Now());
    if (options_.table && io_.out_is_terminal && !live_ && local::LiveTableFits(rows.size(), io_.terminal_rows)) {
      live_ = true;
      out_.Raw(local::LiveTableBegin(rows.size(), io_.terminal_rows));
    }
    auto now = std::chrono::steady_clock::now();
    if (live_ && now - last_draw_ >= Ms(500)) {
      out_.Raw(local::LiveTableFrame(local::FormatReplicaTable(rows, "NODE")));
      last_draw_ = now;
    }
    if (!live_ && options_.table)
      for (const auto& c : RowChanges(last_rows_, rows)) out_.Line("tfjob: " + c);
    last_rows_ = rows;
    std::string conditions = ConditionsLine(job_);
    if (conditions != last_conditions_ && !conditions.empty())
      out_.Line("tfjob: " + JobRef(ns_, name_) + " conditions: " + conditions);
    last_conditions_ = conditions;
    if (logs_)
      if (Status st = logs_->Update(pods_); !st.ok()) logs_refused_ = Esc(st.message());
  }

  // The last line of a finished job: its terminal condition.
  std::string Outcome() const {
    const ConditionView& c = job_.conditions.back();
    std::string outcome = JobRef(ns_, name_) + " " + Esc(c.type) + ": " + Esc(c.message);
    for (const auto& cond : job_.conditions)
      if ((cond.type == "Succeeded" || cond.type == "Failed") && cond.status == "True")
        outcome = JobRef(ns_, name_) + " " + cond.type + ": " + Esc(cond.message);
    return outcome;
  }

  int Interrupted() {
    if (options_.delete_on_interrupt) {
      Status d = s_.client->Delete(kTfJobs, ns_, name_, {"Background"});
      std::string what = d.ok() || IsNotFound(d) ? JobRef(ns_, name_) + " deleted (--delete-on-interrupt)"
                                                 : "deleting " + JobRef(ns_, name_) + " failed: " + Esc(d.message());
      return Finish(kExitInterrupted, "tfjob: interrupted; " + what);
    }
    return Finish(kExitInterrupted, "tfjob: interrupted; stopped watching. " + JobRef(ns_, name_) +
                                        " keeps running (`" + io_.program + " delete " + Esc(name_) + "` stops it)");
  }

  // Ends the streams and the watches, prints the final table and `outcome`, returns `rc`.
  int Finish(int rc, const std::string& outcome) {
    if (logs_) {
      // The last lines: the containers waiting for a slot (queue_excess; the chief's, when more
      // replicas ran than --max-log-requests) are read in place of the streams still running,
      // for as long as the streams make progress. What could not be read is said, not dropped.
      if (rc == kExitOk || rc == kExitFailed) {
        std::vector<std::string> unread = logs_->Drain(pods_, {}, stop_);  // Ctrl-C ends it
        if (!unread.empty()) {
          std::string names;
          for (const auto& u : unread) names += (names.empty() ? "" : ", ") + Esc(u);
          out_.Line("tfjob: the logs of " + names + " were not read to their end in time (`" + io_.program + " logs " +
                    Esc(name_) + "` shows them)");
        }
      }
      logs_->StopAll();
    }
    job_tracker_.Stop();
    pod_tracker_.Stop();
    auto rows = ReplicaRows(job_, pods_, s_.clock.Now());
    if (live_) {
      out_.Raw(local::LiveTableFrame(local::FormatReplicaTable(rows, "NODE")));
      out_.Raw(local::LiveTableEnd(io_.terminal_rows));
    }
    std::string table;
    for (const auto& r : local::FormatReplicaTable(rows, "NODE")) table += r + "\n";
    out_.Raw("\n" + table);
    out_.Line(outcome);
    return rc;
  }

  Session& s_;
  const std::string& ns_;
  const std::string& name_;
  const WaitOptions& options_;
  const CliIo& io_;
  Output out_;
  Signal signal_;
  Tracker job_tracker_;
  Tracker pod_tracker_;
  std::unique_ptr<LogFollower> logs_;
  std::stop_token stop_;      // Run's: Ctrl-C
  std::string logs_refused_;  // more containers to follow than --max-log-requests
  bool live_ = false, seen_ = false;
  std::vector<local::ReplicaRow> last_rows_;
  std::string last_conditions_;
  std::chrono::steady_clock::time_point last_draw_{};
  JobView job_;
  std::vector<PodView> pods_;
};

}  // namespace

int WaitForJob(Session& s, const std::string& ns, const std::string& name, const WaitOptions& options, const CliIo& io,
               std::stop_token stop) {
  JobWait wait(s, ns, name, options, io);
  return wait.Run(std::move(stop));
}

}  // namespace tfjob::cli
