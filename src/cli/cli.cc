#include "cli/cli.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/field_error.h"
#include "api/json_fields.h"
#include "api/labels.h"
#include "api/manifest.h"
#include "api/tfjob.h"
#include "api/time.h"
#include "cli/cli_args.h"
#include "cli/job_view.h"
#include "cli/log_follower.h"
#include "common/clock.h"
#include "common/file_reader.h"
#include "common/logging.h"
#include "controller/reflector.h"
#include "kube/curl_transport.h"
#include "kube/kube_config.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"
#include "local/replica_view.h"

namespace tfjob::cli {
namespace {

using nlohmann::json;
using Ms = std::chrono::milliseconds;

const kube::GroupVersionResource kTfJobs{std::string(api::kGroup), "v1", std::string(api::kPlural)};
const kube::GroupVersionResource kWorkloadsV1beta2{"kueue.x-k8s.io", "v1beta2", "workloads"};
const kube::GroupVersionResource kWorkloadsV1beta1{"kueue.x-k8s.io", "v1beta1", "workloads"};
const kube::GroupVersionResource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups"};
const kube::GroupVersionResource kPluginsPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups"};
// A pod's log as `tfjob logs` reads it without -f: at most this much of each container.
constexpr size_t kMaxLogBytes = 16 * 1024 * 1024;
// A watch that fails this many times in a row for a reason other than an unreachable server
// (junk, a line over the limit, an error status) is given up on with exit 2 (docs/cli.md).
constexpr int kMaxStreamFailures = 3;

std::string Esc(std::string_view s) {
  return api::EscapeNonPrintable(s);
}

// Every write to stdout goes through one lock: log streams, the table and the progress lines.
class Output {
 public:
  explicit Output(std::ostream& out) : out_(out) {}
  void Line(const std::string& line) {
    std::lock_guard lock(mu_);
    out_ << line << "\n" << std::flush;
  }
  void Raw(const std::string& text) {
    std::lock_guard lock(mu_);
    out_ << text << std::flush;
  }

 private:
  std::mutex mu_;
  std::ostream& out_;
};

struct Session {
  kube::KubeConfig config;
  RealClock clock;
  std::unique_ptr<kube::CurlTransport> transport;
  std::unique_ptr<kube::RestClient> client;
  std::string ns;  // resolved: -n, else the context's, else "default"; "" with -A
};

// A failed request as the user reads it, with the exit code: the server unreachable (2, naming
// it), the server's refusal (1).
int Fail(const Session& s, const Status& status, std::ostream& err, const std::string& what = "") {
  if (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded) {
    err << "tfjob: cannot reach the API server " << s.config.server << " (" << s.config.source
        << "): " << status.message() << "\n";
    return 2;
  }
  if (status.code() == StatusCode::kCancelled) return kExitInterrupted;
  if (status.code() == StatusCode::kDataLoss) {  // too large or undecodable: the server's fault (docs/cli.md)
    err << "tfjob: the API server " << s.config.server << " (" << s.config.source
        << ") sent an answer tfjob refuses: " << status.message() << "\n";
    return 2;
  }
  std::string m = status.message();
  if (status.code() == StatusCode::kNotFound &&
      m.find("the server could not find the requested resource") != std::string::npos)
    err << "tfjob: the API server " << s.config.server
        << " does not serve TFJobs (kubeflow.org/v1): install the CRD with `tfjob crd | kubectl apply -f -`\n";
  else
    err << "tfjob: " << (what.empty() ? "" : what + ": ") << m << "\n";
  return 1;
}

StatusOr<std::unique_ptr<Session>> Connect(const ConnectionArgs& args, const CliIo& io) {
  auto config = kube::ResolveClientConfig(args.kubeconfig, args.context, io.env);
  if (!config.ok()) return config.status();
  auto s = std::make_unique<Session>();
  s->config = std::move(*config);
  s->transport = std::make_unique<kube::CurlTransport>(s->config, s->clock);
  kube::RestClientOptions options;
  options.qps = 50;
  options.burst = 100;
  options.max_retries = 2;
  options.request_timeout = args.request_timeout;
  options.call_timeout = args.request_timeout;  // --request-timeout: the whole call, retries included
  s->client = std::make_unique<kube::RestClient>(*s->transport, s->clock, options);
  s->ns = args.all_namespaces ? "" : !args.ns.empty() ? args.ns : !s->config.ns.empty() ? s->config.ns : "default";
  return s;
}

// A command's session, or nullptr after saying on stderr why there is none (the command exits 2).
std::unique_ptr<Session> ConnectOrSay(const ConnectionArgs& args, const CliIo& io) {
  auto session = Connect(args, io);
  if (session.ok()) return std::move(*session);
  *io.err << "tfjob: " << session.status().message() << "\n";
  return nullptr;
}

std::string JobRef(const std::string& ns, const std::string& name) {
  return "TFJob " + Esc(ns) + "/" + Esc(name);
}

// The objects of one list+watch, kept in step by a controller::Reflector on its own thread.
class Tracker : public controller::ReflectorSink {
 public:
  Tracker(kube::RestClient& client, controller::ListWatchSpec spec, std::function<void()> changed)
      : spec_name_(spec.gvr.resource),
        changed_(std::move(changed)),
        reflector_(client, std::move(spec), *this, Logger()) {}
  ~Tracker() override { Stop(); }
  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
  }
  void Stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }
  void Replace(std::vector<json> items) override {
    {
      std::lock_guard lock(mu_);
      objects_.clear();
      InsertLocked(items);
      synced_ = true;
    }
    changed_();
  }
  // Adds or replaces `items` by key and keeps the rest (a list made outside the reflector).
  void Upsert(std::vector<json> items) {
    std::lock_guard lock(mu_);
    InsertLocked(items);
  }
  void Apply(kube::WatchEventType type, json object) override {
    {
      std::lock_guard lock(mu_);
      failures_ = 0;
      if (type == kube::WatchEventType::kDeleted)
        objects_.erase(Key(object));
      else
        objects_[Key(object)] = object;
      events_.push_back({type, std::move(object)});
      if (events_.size() > 1000) events_.pop_front();
    }
    changed_();
  }
  std::vector<json> Snapshot() const {
    std::lock_guard lock(mu_);
    std::vector<json> out;
    for (const auto& [k, o] : objects_) out.push_back(o);
    return out;
  }
  bool synced() const {
    std::lock_guard lock(mu_);
    return synced_;
  }
  void Failed(const Status& status) override {
    if (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded) return;
    {
      std::lock_guard lock(mu_);
      ++failures_;
      last_error_ = status.message();
    }
    changed_();
  }
  // Why the stream is given up on, once its list or watch has failed kMaxStreamFailures times in
  // a row without one event in between (a server that sends junk; docs/cli.md); else empty.
  std::string GaveUp() const {
    std::lock_guard lock(mu_);
    if (failures_ < kMaxStreamFailures) return "";
    return "the watch of " + spec_name_ + " failed " + std::to_string(failures_) + " times in a row: " + last_error_;
  }
  // The watch events since the last call (get --watch).
  std::vector<std::pair<kube::WatchEventType, json>> TakeEvents() {
    std::lock_guard lock(mu_);
    std::vector<std::pair<kube::WatchEventType, json>> out(events_.begin(), events_.end());
    events_.clear();
    return out;
  }

 private:
  static std::string Key(const json& o) {
    const json& m = api::ObjectField(o, "metadata");
    return api::StringField(m, "namespace") + "/" + api::StringField(m, "name");
  }
  void InsertLocked(std::vector<json>& items) {
    // The key first: json's operator= takes its argument by value, and the right side of `=`
    // is evaluated first (C++17), so Key(o) would see a moved-from object.
    for (auto& o : items) {
      std::string key = Key(o);
      objects_[key] = std::move(o);
    }
  }
  std::string spec_name_;
  std::function<void()> changed_;
  controller::Reflector reflector_;
  mutable std::mutex mu_;
  std::map<std::string, json> objects_;
  std::list<std::pair<kube::WatchEventType, json>> events_;
  bool synced_ = false;
  int failures_ = 0;  // in a row, not counting an unreachable server (which may come back)
  std::string last_error_;
  std::jthread thread_;
};

// Wakes a waiting loop when a tracker changed.
class Signal {
 public:
  void Notify() {
    {
      std::lock_guard lock(mu_);
      changed_ = true;
    }
    cv_.notify_all();
  }
  // True when something changed within `d`.
  bool Wait(Ms d) {
    std::unique_lock lock(mu_);
    bool c = cv_.wait_for(lock, d, [this] { return changed_; });
    changed_ = false;
    return c;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool changed_ = false;
};

std::vector<PodView> JobPods(const std::vector<json>& pods, const std::string& job_uid) {
  std::vector<PodView> out;
  for (const auto& p : pods) {
    // Only pods the job owns (a same-named earlier job's pods being deleted are not its).
    bool owned = job_uid.empty();
    const json& meta = api::ObjectField(p, "metadata");
    if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array()) {
      for (const auto& r : *refs)
        if (api::StringField(r, "uid") == job_uid) owned = true;
    } else {
      owned = true;
    }
    if (owned) out.push_back(DecodePodView(p));
  }
  std::sort(out.begin(), out.end(), [](const PodView& a, const PodView& b) { return a.name < b.name; });
  return out;
}

std::string LogPath(const std::string& ns, const std::string& pod, const std::string& container,
                    const std::string& extra) {
  return kube::ResourcePath(kube::kPods, ns, pod, "log") + "?container=" + kube::UrlEncode(container) + extra;
}

std::string FormatMs(Ms d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0fs", std::chrono::duration<double>(d).count());
  return buf;
}

// `submit --wait` and the job part of `logs -f`: follows the job and its pods until the job
// ends (0 Succeeded, 1 Failed or deleted), the time-out (124) or a stop request (130).
struct WaitOptions {
  bool table = true;    // the live table (terminal) or change lines
  bool follow = false;  // stream logs
  int max_log_requests = kDefaultMaxLogRequests;
  std::optional<Ms> timeout;
  bool delete_on_interrupt = false;
};

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
        pod_tracker_(*s.client, {kube::kPods, ns, std::string(api::kLabelJobName) + "=" + name, ""},
                     [this] { signal_.Notify(); }) {}

  int Run(std::stop_token stop) {
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
        if (seen_ && job_tracker_.synced()) return Finish(1, JobRef(ns_, name_) + " was deleted");
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
          return Finish(2, "tfjob: stopped watching " + JobRef(ns_, name_) + " (it keeps running)");
        }
        if (JobFinished(job_)) return Finish(JobSucceeded(job_) ? 0 : 1, Outcome());
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
        *io_.err << "tfjob: the API server " << s_.config.server << " (" << s_.config.source << "): " << Esc(why)
                 << "\n";
        return Finish(2, "tfjob: stopped watching " + JobRef(ns_, name_) + " (it keeps running)");
      }
    return std::nullopt;
  }

  // The job's end can arrive before the pod change that caused it (two watches, each in its own
  // order): one list of the pods, made after that condition was seen, so the last lines and the
  // table show the pods' final states. A pod missing from it (deleted at the end) keeps what the
  // watch showed; a failed list leaves the watch's view.
  void CatchUpPods() {
    auto list = s_.client->List(kube::kPods, ns_, {.label_selector = std::string(api::kLabelJobName) + "=" + name_});
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
      // The last lines: at most 5 s for the streams to end (and those that waited for a slot).
      auto until = std::chrono::steady_clock::now() + Ms(5000);
      while ((rc == 0 || rc == 1) && std::chrono::steady_clock::now() < until) {
        logs_->WaitIdle(Ms(200));
        if (logs_->Idle()) break;
        (void)logs_->Update(pods_);
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
  std::string logs_refused_;  // more containers to follow than --max-log-requests
  bool live_ = false, seen_ = false;
  std::vector<local::ReplicaRow> last_rows_;
  std::string last_conditions_;
  std::chrono::steady_clock::time_point last_draw_{};
  JobView job_;
  std::vector<PodView> pods_;
};

int WaitForJob(Session& s, const std::string& ns, const std::string& name, const WaitOptions& options, const CliIo& io,
               std::stop_token stop) {
  JobWait wait(s, ns, name, options, io);
  return wait.Run(std::move(stop));
}

int WithStops(const CliIo& io, const std::function<int(std::stop_token, std::stop_token)>& body) {
  if (io.with_signal_stops) return io.with_signal_stops(body);
  return body({}, {});
}

// ---- submit ----

// The manifest's bytes: the file, or the standard input with "-".
StatusOr<std::string> ReadManifestText(const std::string& file) {
  if (file != "-") return ReadFileBounded(file, api::kMaxManifestBytes);
  BoundedRead r = ReadFdBounded(0, api::kMaxManifestBytes);
  if (r.problem == ReadProblem::kTooLarge) return InvalidArgumentError(api::InputTooLargeMessage());
  if (r.problem != ReadProblem::kNone) return UnavailableError("cannot read the standard input");
  return std::move(r.bytes);
}

// The TFJobs of the manifest; every other document is skipped with a warning.
std::vector<json> SelectTfJobs(const std::vector<api::ManifestDocument>& docs, const std::string& file,
                               std::ostream& err) {
  std::vector<json> jobs;
  for (size_t i = 0; i < docs.size(); ++i) {
    const json& o = docs[i].object;
    if (!o.is_object()) continue;
    if (api::StringField(o, "kind") == "TFJob" && api::StringField(o, "apiVersion") == "kubeflow.org/v1")
      jobs.push_back(o);
    else
      err << file << ": warning: document " << i + 1 << ": skipped: kind \"" << Esc(api::StringField(o, "kind"))
          << "\" is not TFJob (submit creates TFJobs only)\n";
  }
  return jobs;
}

// Creates one TFJob, setting `ns` and `name` to where it was created; an exit code if it was not.
std::optional<int> CreateJob(Session& s, const CliArgs& a, const CliIo& io, json& j, std::string& ns,
                             std::string& name) {
  std::ostream& err = *io.err;
  json& meta = j["metadata"];
  if (!meta.is_object()) meta = json::object();
  std::string object_ns = api::StringField(meta, "namespace");
  if (!object_ns.empty() && !a.conn.ns.empty() && object_ns != a.conn.ns) {
    err << a.file << ": the namespace of TFJob " << Esc(api::StringField(meta, "name")) << " (\"" << Esc(object_ns)
        << "\") does not match -n \"" << Esc(a.conn.ns) << "\"\n";
    return 2;
  }
  ns = object_ns.empty() ? s.ns : object_ns;
  std::vector<std::string> warnings;
  auto created = s.client->CreateWithWarnings(kTfJobs, ns, j, "Warn", &warnings);
  for (const auto& w : warnings) err << "Warning: " << WarningText(w) << "\n";
  if (!created.ok()) {
    std::string n = api::StringField(meta, "name");
    if (IsAlreadyExists(created.status())) {
      err << "tfjob: " << JobRef(ns, n) << " already exists (`" << io.program << " delete " << Esc(n)
          << "` first, or another name)\n";
      return 1;
    }
    return Fail(s, created.status(), err, "creating " + JobRef(ns, n));
  }
  name = api::StringField(api::ObjectField(*created, "metadata"), "name");
  *io.out << JobRef(ns, name) << " created\n" << std::flush;
  return std::nullopt;
}

int Submit(const CliArgs& a, const CliIo& io) {
  std::ostream& err = *io.err;
  StatusOr<std::string> text = ReadManifestText(a.file);
  if (!text.ok()) {
    err << a.file << ": " << text.status().message() << "\n";
    return 2;
  }
  auto docs = api::ParseManifest(*text);
  if (!docs.ok()) {
    err << a.file << ": " << docs.status().message() << "\n";
    return 1;
  }
  std::vector<json> jobs = SelectTfJobs(*docs, a.file, err);
  if (jobs.empty()) {
    err << a.file << ": no TFJob found\n";
    return 1;
  }
  if (a.wait && jobs.size() != 1) {
    err << a.file << ": --wait follows one TFJob; the file has " << jobs.size() << "\n";
    return 2;
  }
  auto session = Connect(a.conn, io);
  if (!session.ok()) {
    err << "tfjob: " << session.status().message() << "\n";
    return 2;
  }
  Session& s = **session;
  std::string ns, name;
  for (auto& j : jobs)
    if (auto rc = CreateJob(s, a, io, j, ns, name)) return *rc;
  if (!a.wait) return 0;
  WaitOptions w;
  w.follow = a.follow;
  w.max_log_requests = a.max_log_requests;
  w.timeout = a.timeout;
  w.delete_on_interrupt = a.delete_on_interrupt;
  return WithStops(io, [&](std::stop_token stop, std::stop_token) { return WaitForJob(s, ns, name, w, io, stop); });
}

// ---- get ----

json Clean(json o) {
  if (o.contains("metadata") && o["metadata"].is_object()) o["metadata"].erase("managedFields");
  return o;
}

// The exit code of a failed GET of TFJob `name`: "not found" (1) when the TFJob is not there (not
// when the server does not serve TFJobs at all), else as Fail reports it.
int JobGetFailed(const Session& s, const std::string& name, const Status& status, std::ostream& err) {
  if (IsNotFound(status) &&
      status.message().find("the server could not find the requested resource") == std::string::npos) {
    err << "tfjob: " << JobRef(s.ns, name) << " not found\n";
    return 1;
  }
  return Fail(s, status, err);
}

// The TFJobs `get` shows: the one named, else every one of the namespace(s); an exit code if
// the request failed.
std::optional<int> FetchJobs(Session& s, const CliArgs& a, const CliIo& io, std::vector<json>& items) {
  if (!a.name.empty()) {
    auto j = s.client->Get(kTfJobs, s.ns, a.name);
    if (!j.ok()) return JobGetFailed(s, a.name, j.status(), *io.err);
    items.push_back(std::move(*j));
    return std::nullopt;
  }
  auto list = s.client->ListAll(kTfJobs, s.ns, {}, nullptr);
  if (!list.ok()) return Fail(s, list.status(), *io.err);
  items = std::move(*list);
  return std::nullopt;
}

// -o json|yaml: the object itself, or a List of them.
void PrintDocuments(const CliArgs& a, std::vector<json> items, std::ostream& out) {
  json doc;
  if (!a.name.empty()) {
    doc = Clean(items.front());
  } else {
    doc = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
    for (auto& i : items) doc["items"].push_back(Clean(std::move(i)));
  }
  out << (a.output == "json" ? doc.dump(2) + "\n" : api::ToYaml(doc));
}

// --watch: a row for every change of a TFJob, after the table of `views` (already printed).
int WatchTable(Session& s, const CliArgs& a, const CliIo& io, const GetTableOptions& t,
               const std::vector<JobView>& views) {
  return WithStops(io, [&](std::stop_token stop, std::stop_token) {
    Signal signal;
    Tracker tracker(*s.client, {kTfJobs, s.ns, "", a.name.empty() ? "" : "metadata.name=" + a.name},
                    [&] { signal.Notify(); });
    tracker.Start();
    // Rows keep the columns of the table above: each is formatted among every job seen.
    std::map<std::pair<std::string, std::string>, JobView> seen;
    for (const auto& v : views) seen[{v.ns, v.name}] = v;
    bool header = views.empty();
    while (!stop.stop_requested()) {
      signal.Wait(Ms(500));
      if (std::string why = tracker.GaveUp(); !why.empty()) {
        *io.err << "tfjob: the API server " << s.config.server << " (" << s.config.source << "): " << Esc(why) << "\n";
        return 2;
      }
      for (auto& [type, obj] : tracker.TakeEvents()) {
        JobView v = DecodeJobView(obj);
        auto key = std::make_pair(v.ns, v.name);
        seen[key] = v;
        std::vector<JobView> all;
        size_t at = 0;
        for (const auto& [k, j] : seen) {
          if (k == key) at = all.size();
          all.push_back(j);
        }
        auto lines = FormatGetTable(all, s.clock.Now(), t);
        if (header) *io.out << lines[0] << "\n";
        header = false;
        *io.out << lines[at + 1] << (type == kube::WatchEventType::kDeleted ? "   (deleted)" : "") << "\n";
        if (type == kube::WatchEventType::kDeleted) seen.erase(key);
        io.out->flush();
      }
    }
    return 0;
  });
}

int Get(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return 2;
  Session& s = *session;
  std::vector<json> items;
  if (auto rc = FetchJobs(s, a, io, items)) return *rc;
  if (a.output == "json" || a.output == "yaml") {
    PrintDocuments(a, std::move(items), *io.out);
    return 0;
  }
  GetTableOptions t;
  t.wide = a.output == "wide";
  t.namespaces = a.conn.all_namespaces;
  std::vector<JobView> views;
  for (const auto& i : items) views.push_back(DecodeJobView(i));
  std::sort(views.begin(), views.end(),
            [](const JobView& x, const JobView& y) { return std::tie(x.ns, x.name) < std::tie(y.ns, y.name); });
  if (views.empty() && !a.watch) {
    *io.err << "No TFJobs found" << (s.ns.empty() ? "" : " in namespace " + Esc(s.ns)) << ".\n";
    return 0;
  }
  for (const auto& l : FormatGetTable(views, s.clock.Now(), t)) *io.out << l << "\n";
  io.out->flush();
  if (!a.watch) return 0;
  return WatchTable(s, a, io, t, views);
}

// ---- describe ----

std::optional<WorkloadView> FindWorkload(Session& s, const JobView& job) {
  for (const auto* gvr : {&kWorkloadsV1beta2, &kWorkloadsV1beta1}) {
    auto list = s.client->ListAll(*gvr, job.ns, {}, nullptr);
    if (!list.ok()) continue;
    for (const auto& w : *list) {
      const json& meta = api::ObjectField(w, "metadata");
      if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array())
        for (const auto& r : *refs)
          if (api::StringField(r, "uid") == job.uid) return DecodeWorkloadView(w);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<PodGroupView> FindPodGroup(Session& s, const JobView& job) {
  for (const auto* gvr : {&kVolcanoPodGroups, &kPluginsPodGroups}) {
    auto pg = s.client->Get(*gvr, job.ns, job.name);
    if (pg.ok()) return DecodePodGroupView(gvr->resource + "." + gvr->group, *pg);
  }
  return std::nullopt;
}

int Describe(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return 2;
  Session& s = *session;
  auto j = s.client->Get(kTfJobs, s.ns, a.name);
  if (!j.ok()) return JobGetFailed(s, a.name, j.status(), *io.err);
  DescribeInput in;
  in.now = s.clock.Now();
  in.why.job = DecodeJobView(*j);
  kube::ListOptions pod_options;
  pod_options.label_selector = std::string(api::kLabelJobName) + "=" + a.name;
  auto pods = s.client->ListAll(kube::kPods, s.ns, pod_options, nullptr);
  if (!pods.ok()) return Fail(s, pods.status(), *io.err);
  in.why.pods = JobPods(*pods, in.why.job.uid);
  if (!in.why.job.queue.empty()) in.why.workload = FindWorkload(s, in.why.job);
  in.why.pod_group = FindPodGroup(s, in.why.job);
  std::vector<std::string> objects = {a.name};
  for (const auto& p : in.why.pods)
    if (objects.size() < 100) objects.push_back(p.name);
  for (const auto& o : objects) {
    kube::ListOptions e;
    e.field_selector = "involvedObject.name=" + o;
    e.limit = 200;
    auto events = s.client->List(kube::kEvents, s.ns, e);
    if (!events.ok()) continue;
    if (auto it = events->find("items"); it != events->end() && it->is_array())
      for (const auto& ev : *it) in.events.push_back(DecodeEventView(ev));
  }
  *io.out << FormatDescribe(in);
  return 0;
}

// ---- logs ----

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
  o.label_selector = std::string(api::kLabelJobName) + "=" + a.name;
  auto list = s.client->ListAll(kube::kPods, s.ns, o, nullptr);
  if (!list.ok()) return Fail(s, list.status(), *io.err);
  std::vector<PodView> pods = JobPods(*list, job.uid);
  std::erase_if(pods, [&](const PodView& p) { return !MatchesReplica(p, a.name, a); });
  if (pods.empty()) {
    *io.err << "tfjob: " << JobRef(s.ns, a.name) << " has no pods"
            << (a.replica.empty() && a.type.empty() ? "" : " matching the --replica/--type given") << "\n";
    return 1;
  }
  std::vector<LogLine> lines;
  int rc = 0;
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
        rc = 1;
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
    Tracker pod_tracker(*s.client, {kube::kPods, s.ns, std::string(api::kLabelJobName) + "=" + a.name, ""},
                        [&] { signal.Notify(); });
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
          *io.err << "tfjob: the API server " << s.config.server << " (" << s.config.source << "): " << Esc(why)
                  << "\n";
          return 2;
        }
      auto jobs = job_tracker.Snapshot();
      if (jobs.empty() && job_tracker.synced()) break;  // deleted
      if (!jobs.empty()) job = DecodeJobView(jobs.front());
      auto pods = JobPods(pod_tracker.Snapshot(), job.uid);
      std::erase_if(pods, [&](const PodView& p) { return !MatchesReplica(p, a.name, a); });
      if (Status st = follower.Update(pods); !st.ok()) {
        follower.StopAll();
        *io.err << "tfjob: " << JobRef(s.ns, a.name) << ": " << Esc(st.message()) << "\n";
        return 2;
      }
      if (pod_tracker.synced() && JobFinished(job) && follower.Idle()) break;
    }
    follower.StopAll();
    return stop.stop_requested() ? kExitInterrupted : 0;
  });
}

int Logs(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return 2;
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

// ---- suspend, resume, delete ----

int SetSuspend(const CliArgs& a, const CliIo& io, bool suspend) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return 2;
  Session& s = *session;
  auto j = s.client->Get(kTfJobs, s.ns, a.name);
  if (!j.ok()) return JobGetFailed(s, a.name, j.status(), *io.err);
  JobView job = DecodeJobView(*j);
  if (JobFinished(job)) {
    *io.err << "tfjob: " << JobRef(s.ns, a.name) << " has finished (" << JobState(job) << "); nothing to "
            << (suspend ? "suspend" : "resume") << "\n";
    return 1;
  }
  if (job.suspend == suspend) {
    *io.out << JobRef(s.ns, a.name) << " is already " << (suspend ? "suspended" : "not suspended") << "\n";
    return 0;
  }
  if (!suspend && !job.queue.empty())
    *io.err << "warning: " << JobRef(s.ns, a.name) << " is queued in Kueue (queue \"" << Esc(job.queue)
            << "\"): Kueue decides when it runs and may suspend it again\n";
  json patch = {{"spec", {{"runPolicy", {{"suspend", suspend}}}}}};
  auto r = s.client->Patch(kTfJobs, s.ns, a.name, kube::PatchType::kMerge, patch);
  if (!r.ok()) return Fail(s, r.status(), *io.err);
  *io.out << JobRef(s.ns, a.name) << (suspend ? " suspended" : " resumed") << "\n";
  return 0;
}

int Delete(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return 2;
  Session& s = *session;
  Status d = s.client->Delete(kTfJobs, s.ns, a.name, {"Background"});
  if (!d.ok()) return JobGetFailed(s, a.name, d, *io.err);
  if (!a.wait) {
    *io.out << JobRef(s.ns, a.name) << " deleted\n";
    return 0;
  }
  Ms timeout = a.timeout.value_or(Ms(300000));
  return WithStops(io, [&](std::stop_token stop, std::stop_token) {
    auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto j = s.client->Get(kTfJobs, s.ns, a.name);
      if (!j.ok() && IsNotFound(j.status())) {
        *io.out << JobRef(s.ns, a.name) << " deleted\n";
        return 0;
      }
      if (!j.ok() && !IsRetryable(j.status())) return Fail(s, j.status(), *io.err);
      if (std::chrono::steady_clock::now() >= until) {
        *io.err << "tfjob: timed out after " << FormatMs(timeout) << " waiting for " << JobRef(s.ns, a.name)
                << " to be gone (finalizers?)\n";
        return kExitTimeout;
      }
      if (!s.clock.SleepFor(Ms(250), stop)) return kExitInterrupted;
    }
  });
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const CliIo& io) {
  auto parsed = ParseCliArgs(args, io.program);
  if (!parsed.ok()) {
    *io.err << io.program << " " << (args.empty() ? "" : args[0]) << ": " << parsed.status().message() << "\nRun '"
            << io.program << " " << (args.empty() ? "" : args[0]) << " --help' for usage.\n";
    return 2;
  }
  const CliArgs& a = *parsed;
  if (a.help) {
    *io.out << a.help_text;
    return 0;
  }
  // The REST client's own failure log would draw over the table; the commands report errors.
  // TFJOB_CLI_LOG=debug|info|warning shows them (on stderr).
  LogLevel level = LogLevel::kError;
  if (auto it = io.env.find("TFJOB_CLI_LOG"); it != io.env.end()) ParseLogLevel(it->second, &level);
  SetLogOptions(level, LogFormat::kText);
  if (a.command == "submit") return Submit(a, io);
  if (a.command == "get") return Get(a, io);
  if (a.command == "describe") return Describe(a, io);
  if (a.command == "logs") return Logs(a, io);
  if (a.command == "suspend") return SetSuspend(a, io, true);
  if (a.command == "resume") return SetSuspend(a, io, false);
  if (a.command == "delete") return Delete(a, io);
  return 2;
}

}  // namespace tfjob::cli
