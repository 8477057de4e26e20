#pragma once
// The dashboard's model (docs/dashboard.md): the objects a source feeds it (TFJobs, their pods,
// events, Kueue's Workloads, PodGroups: trimmed raw JSON), each job's attempt history for the
// Gantt chart, and each job's recent log lines. Versioned: every change raises one counter, each
// job and each row remembers the version of its last change, so the server answers a long poll
// ("anything after version V?") with the rows changed since V and the keys removed.
//
// A source is anything that calls Replace/Apply/Log: the cluster's watches (dashboard_cluster.h)
// or `tfjob run`'s runner through a pipe (dashboard_local.h). Thread-safe; readers never hold the
// lock while they build a page's JSON beyond copying what it needs.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/dashboard_view.h"
#include "common/clock.h"
#include "common/thread_annotations.h"
#include "kube/watch_decoder.h"

namespace tfjob::cli::dashboard {

enum class Kind { kJob, kPod, kEvent, kWorkload, kPodGroup };
// The Kind of a feed's name ("jobs", "pods", "events", "workloads", "podgroups"), or nullopt.
std::optional<Kind> KindNamed(std::string_view name);

struct ModelLimits {
  size_t attempts_per_job = 200;
  size_t events_per_object = 30;
  size_t event_objects = 20000;  // objects with events kept (the oldest go first)
  size_t log_lines_per_job = 5000;
  size_t log_bytes_per_job = 2 << 20;
  size_t tombstones = 10000;
};

class Model {
 public:
  explicit Model(Clock& clock, ModelLimits limits = {});

  // A source's full set of one kind after a (re)list: what is missing was deleted.
  void Replace(Kind kind, std::vector<nlohmann::json> items) TFJOB_EXCLUDES(mu_);
  void Apply(Kind kind, kube::WatchEventType type, nlohmann::json object) TFJOB_EXCLUDES(mu_);
  // One line of the job's log (already prefixed "[worker-0] ", escaped as `logs` prints it).
  void Log(const std::string& ns, const std::string& job, std::string line) TFJOB_EXCLUDES(mu_);
  // A source's state in words ("watching 3 namespaces", "the watch of tfjobs failed: ...").
  void SetStatus(std::string text) TFJOB_EXCLUDES(mu_);

  // The list: {version, full, rows, removed, status}; rows changed after `since` (all when
  // `since` is 0 or older than the tombstones kept: full).
  nlohmann::json List(int64_t since) const TFJOB_EXCLUDES(mu_);
  // A job's page (JobPage) with {version}, or nullopt when the model has no such job.
  std::optional<nlohmann::json> Page(const std::string& ns, const std::string& name) const TFJOB_EXCLUDES(mu_);
  // The job's log lines after sequence `after`: {next, lines, dropped} (dropped: lines that left
  // the bounded buffer before they were read).
  nlohmann::json Logs(const std::string& ns, const std::string& name, int64_t after) const TFJOB_EXCLUDES(mu_);

  int64_t version() const TFJOB_EXCLUDES(mu_);
  // What a long poll waits for: the list's version, a job's version (its page), or the sequence
  // of a job's last log line.
  enum class Watched { kList, kJob, kLogs };
  // Waits until the watched counter is above `since`, `timeout` passes or Close; whether it is.
  bool WaitAfter(Watched what, const std::string& job_key, int64_t since, std::chrono::milliseconds timeout)
      TFJOB_EXCLUDES(mu_);
  // Wakes every waiter for good (the server stops).
  void Close() TFJOB_EXCLUDES(mu_);

  // The keys of the jobs ("ns/name") and the pods of one job, for the log streams.
  std::vector<nlohmann::json> JobPods(const std::string& ns, const std::string& name) const TFJOB_EXCLUDES(mu_);
  size_t jobs() const TFJOB_EXCLUDES(mu_);

 private:
  struct JobEntry {
    nlohmann::json object;
    nlohmann::json row;
    int64_t version = 0;
  };
  struct LogBuffer {
    std::deque<std::pair<int64_t, std::string>> lines;
    size_t bytes = 0;
    int64_t next = 1;
  };
  void ApplyLocked(Kind kind, kube::WatchEventType type, nlohmann::json object) TFJOB_REQUIRES(mu_);
  void PutJob(const std::string& key, nlohmann::json object, bool deleted) TFJOB_REQUIRES(mu_);
  void PutPod(const std::string& key, nlohmann::json object, bool deleted) TFJOB_REQUIRES(mu_);
  void PutEvent(nlohmann::json object, bool deleted) TFJOB_REQUIRES(mu_);
  void PutWorkload(const std::string& key, nlohmann::json object, bool deleted) TFJOB_REQUIRES(mu_);
  void PutPodGroup(const std::string& key, nlohmann::json object, bool deleted) TFJOB_REQUIRES(mu_);
  // The job's row and version after a change of it or of its Workload.
  void Touch(const std::string& job_key) TFJOB_REQUIRES(mu_);
  std::optional<WorkloadView> WorkloadOf(const JobEntry& job) const TFJOB_REQUIRES(mu_);
  int64_t CounterLocked(Watched what, const std::string& job_key) const TFJOB_REQUIRES(mu_);
  void EvictEvents() TFJOB_REQUIRES(mu_);

  Clock& clock_;
  const ModelLimits limits_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  bool closed_ TFJOB_GUARDED_BY(mu_) = false;
  int64_t version_ TFJOB_GUARDED_BY(mu_) = 0;
  std::string status_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, JobEntry> jobs_ TFJOB_GUARDED_BY(mu_);  // by "ns/name"
  std::map<std::string, nlohmann::json> pods_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, std::set<std::string>> pods_of_job_ TFJOB_GUARDED_BY(mu_);
  // Events by their object ("ns/Kind/name"), each list by event key, oldest object first out.
  std::map<std::string, std::map<std::string, nlohmann::json>> events_ TFJOB_GUARDED_BY(mu_);
  std::deque<std::string> event_order_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> workloads_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> pod_groups_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, std::vector<Attempt>> attempts_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, LogBuffer> logs_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, int64_t> job_versions_ TFJOB_GUARDED_BY(mu_);
  std::deque<std::pair<int64_t, std::string>> tombstones_ TFJOB_GUARDED_BY(mu_);
  int64_t forgotten_ TFJOB_GUARDED_BY(mu_) = 0;  // the version of the newest tombstone dropped
};

}  // namespace tfjob::cli::dashboard
