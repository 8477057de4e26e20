#include "cli/dashboard_model.h"

#include <algorithm>

#include "api/json_fields.h"
#include "api/labels.h"
#include "api/object_key.h"

namespace tfjob::cli::dashboard {
namespace {

using kube::WatchEventType;
using nlohmann::json;

std::string KeyOf(const json& object) {
  return api::ObjectKey::OfJson(object).String();
}

// What the pages read of a pod: its identity, labels, node, containers' names and status.
json TrimPod(const json& pod) {
  const json& meta = api::ObjectField(pod, "metadata");
  json m = json::object();
  for (const char* k : {"name", "namespace", "uid", "labels", "creationTimestamp", "deletionTimestamp"})
    if (auto it = meta.find(k); it != meta.end()) m[k] = *it;
  json spec = {{"nodeName", api::StringField(api::ObjectField(pod, "spec"), "nodeName")}};
  json out = {{"metadata", m}, {"spec", spec}};
  if (auto st = pod.find("status"); st != pod.end() && st->is_object()) out["status"] = *st;
  return out;
}

// The job a pod, Workload or PodGroup belongs to ("ns/name"), or "".
std::string PodJob(const json& pod) {
  const json& meta = api::ObjectField(pod, "metadata");
  std::string job = api::StringField(api::ObjectField(meta, "labels"), api::kLabelJobName);
  return job.empty() ? "" : api::ObjectKey{api::StringField(meta, "namespace"), job}.String();
}

std::string OwnerJob(const json& object) {
  const json& meta = api::ObjectField(object, "metadata");
  if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array())
    for (const auto& r : *refs)
      if (api::StringField(r, "kind") == "TFJob")
        return api::ObjectKey{api::StringField(meta, "namespace"), api::StringField(r, "name")}.String();
  return "";
}

std::string EventObject(const json& event) {
  const json& o = api::ObjectField(event, "involvedObject");
  std::string ns = api::StringField(o, "namespace");
  if (ns.empty()) ns = api::StringField(api::ObjectField(event, "metadata"), "namespace");
  return ns + "/" + api::StringField(o, "kind") + "/" + api::StringField(o, "name");
}

std::string SplitNs(const std::string& key) {
  return key.substr(0, key.find('/'));
}

}  // namespace

std::optional<Kind> KindNamed(std::string_view name) {
  if (name == "jobs") return Kind::kJob;
  if (name == "pods") return Kind::kPod;
  if (name == "events") return Kind::kEvent;
  if (name == "workloads") return Kind::kWorkload;
  if (name == "podgroups") return Kind::kPodGroup;
  return std::nullopt;
}

Model::Model(Clock& clock, ModelLimits limits) : clock_(clock), limits_(limits) {}

void Model::Replace(Kind kind, std::vector<json> items) {
  {
    MutexLock lock(mu_);
    std::set<std::string> keep;
    for (const auto& o : items) keep.insert(KeyOf(o));
    std::vector<std::string> gone;
    auto collect = [&](const auto& store) {
      for (const auto& [key, value] : store)
        if (!keep.contains(key)) gone.push_back(key);
    };
    switch (kind) {
      case Kind::kJob: collect(jobs_); break;
      case Kind::kPod: collect(pods_); break;
      case Kind::kWorkload: collect(workloads_); break;
      case Kind::kPodGroup: collect(pod_groups_); break;
      case Kind::kEvent: break;  // events age out by the bounds
    }
    for (const auto& key : gone) {
      json stub = {{"metadata", {{"namespace", SplitNs(key)}, {"name", key.substr(key.find('/') + 1)}}}};
      if (kind == Kind::kJob) stub = jobs_[key].object;
      if (kind == Kind::kPod) stub = pods_[key];
      ApplyLocked(kind, WatchEventType::kDeleted, std::move(stub));
    }
    for (auto& o : items) ApplyLocked(kind, WatchEventType::kModified, std::move(o));
  }
  cv_.notify_all();
}

void Model::Apply(Kind kind, WatchEventType type, json object) {
  if (type == WatchEventType::kBookmark || type == WatchEventType::kError || !object.is_object()) return;
  {
    MutexLock lock(mu_);
    ApplyLocked(kind, type, std::move(object));
  }
  cv_.notify_all();
}

void Model::ApplyLocked(Kind kind, WatchEventType type, json object) {
  const bool deleted = type == WatchEventType::kDeleted;
  std::string key = KeyOf(object);
  switch (kind) {
    case Kind::kJob: PutJob(key, Trimmed(std::move(object)), deleted); break;
    case Kind::kPod: PutPod(key, TrimPod(object), deleted); break;
    case Kind::kEvent: PutEvent(std::move(object), deleted); break;
    case Kind::kWorkload: PutWorkload(key, std::move(object), deleted); break;
    case Kind::kPodGroup: PutPodGroup(key, std::move(object), deleted); break;
  }
}

void Model::PutJob(const std::string& key, json object, bool deleted) {
  ++version_;
  if (deleted) {
    jobs_.erase(key);
    attempts_.erase(key);
    logs_.erase(key);
    job_versions_.erase(key);
    tombstones_.emplace_back(version_, key);
    if (tombstones_.size() > limits_.tombstones) {
      forgotten_ = tombstones_.front().first;
      tombstones_.pop_front();
    }
    return;
  }
  jobs_[key].object = std::move(object);
  Touch(key);
}

void Model::Touch(const std::string& job_key) {
  ++version_;
  job_versions_[job_key] = version_;
  auto it = jobs_.find(job_key);
  if (it == jobs_.end()) return;
  JobView view = DecodeJobView(it->second.object);
  json row = JobRow(view, WorkloadOf(it->second));
  if (row != it->second.row || it->second.version == 0) {
    it->second.row = std::move(row);
    it->second.version = version_;
  }
}

void Model::PutPod(const std::string& key, json object, bool deleted) {
  std::string job = PodJob(object);
  if (job.empty()) return;
  const std::string name = job.substr(job.find('/') + 1);
  PodView view = DecodePodView(object);
  auto& history = attempts_[job];
  if (deleted) {
    pods_.erase(key);
    pods_of_job_[job].erase(key);
    if (pods_of_job_[job].empty()) pods_of_job_.erase(job);
    MergeAttempts(history, ExtractAttempts(name, view), limits_.attempts_per_job);
    EndDeleted(history, view.uid, clock_.Now());
  } else {
    MergeAttempts(history, ExtractAttempts(name, view), limits_.attempts_per_job);
    pods_[key] = std::move(object);
    pods_of_job_[job].insert(key);
  }
  Touch(job);
}

void Model::PutEvent(json object, bool deleted) {
  std::string target = EventObject(object);
  std::string key = KeyOf(object);
  auto it = events_.find(target);
  if (deleted) {
    if (it != events_.end()) it->second.erase(key);
  } else {
    if (it == events_.end()) {
      it = events_.emplace(target, std::map<std::string, json>()).first;
      event_order_.push_back(target);
    }
    json e = {{"type", object.value("type", "")},
              {"reason", object.value("reason", "")},
              {"message", object.value("message", "")},
              {"count", object.value("count", 1)},
              {"involvedObject", object.value("involvedObject", json::object())}};
    for (const char* t : {"lastTimestamp", "eventTime", "firstTimestamp"})
      if (auto f = object.find(t); f != object.end() && f->is_string()) e[t] = *f;
    it->second[key] = std::move(e);
    while (it->second.size() > limits_.events_per_object) {
      // The oldest by time goes.
      auto oldest = std::min_element(it->second.begin(), it->second.end(), [](const auto& a, const auto& b) {
        return DecodeEventView(a.second).last.value_or(api::Time{}) <
               DecodeEventView(b.second).last.value_or(api::Time{});
      });
      it->second.erase(oldest);
    }
    EvictEvents();
  }
  // The job whose page shows it: the job itself, or a pod's job.
  const json& o = api::ObjectField(object, "involvedObject");
  std::string ns = target.substr(0, target.find('/'));
  if (api::StringField(o, "kind") == "TFJob") {
    Touch(api::ObjectKey{ns, api::StringField(o, "name")}.String());
  } else if (auto p = pods_.find(api::ObjectKey{ns, api::StringField(o, "name")}.String()); p != pods_.end()) {
    Touch(PodJob(p->second));
  }
}

void Model::EvictEvents() {
  while (event_order_.size() > limits_.event_objects) {
    events_.erase(event_order_.front());
    event_order_.pop_front();
  }
}

void Model::PutWorkload(const std::string& key, json object, bool deleted) {
  std::string job = OwnerJob(deleted && workloads_.contains(key) ? workloads_[key] : object);
  if (deleted) {
    workloads_.erase(key);
  } else {
    workloads_[key] = Trimmed(std::move(object));
  }
  if (!job.empty()) Touch(job);
}

void Model::PutPodGroup(const std::string& key, json object, bool deleted) {
  if (deleted) {
    pod_groups_.erase(key);
  } else {
    pod_groups_[key] = Trimmed(std::move(object));
  }
  // Named like the job, or "<job>.<member>" (docs/semantics.md D33).
  std::string job = key.substr(0, key.find('.', key.find('/')));
  Touch(job);
}

std::optional<WorkloadView> Model::WorkloadOf(const JobEntry& job) const {
  const std::string uid = api::StringField(api::ObjectField(job.object, "metadata"), "uid");
  if (uid.empty()) return std::nullopt;
  for (const auto& [key, w] : workloads_) {
    const json& meta = api::ObjectField(w, "metadata");
    if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array())
      for (const auto& r : *refs)
        if (api::StringField(r, "uid") == uid) return DecodeWorkloadView(w);
  }
  return std::nullopt;
}

void Model::Log(const std::string& ns, const std::string& job, std::string line) {
  {
    MutexLock lock(mu_);
    LogBuffer& b = logs_[api::ObjectKey{ns, job}.String()];
    b.bytes += line.size();
    b.lines.emplace_back(b.next++, std::move(line));
    while (!b.lines.empty() && (b.lines.size() > limits_.log_lines_per_job || b.bytes > limits_.log_bytes_per_job)) {
      b.bytes -= b.lines.front().second.size();
      b.lines.pop_front();
    }
  }
  cv_.notify_all();
}

void Model::SetStatus(std::string text) {
  {
    MutexLock lock(mu_);
    if (status_ == text) return;
    status_ = std::move(text);
    ++version_;
  }
  cv_.notify_all();
}

json Model::List(int64_t since) const {
  MutexLock lock(mu_);
  // A client older than the deletions forgotten gets the whole list again.
  const bool full = since <= 0 || since < forgotten_ || since > version_;
  json rows = json::array(), removed = json::array();
  for (const auto& [key, job] : jobs_)
    if (full || job.version > since) rows.push_back(job.row);
  if (!full)
    for (const auto& [v, key] : tombstones_)
      if (v > since && !jobs_.contains(key)) removed.push_back(key);
  return {{"version", version_}, {"full", full}, {"rows", rows}, {"removed", removed}, {"status", status_}};
}

std::optional<json> Model::Page(const std::string& ns, const std::string& name) const {
  PageInput in;
  std::vector<json> pods;
  int64_t version = 0;
  {
    MutexLock lock(mu_);
    const std::string key = api::ObjectKey{ns, name}.String();
    auto it = jobs_.find(key);
    if (it == jobs_.end()) return std::nullopt;
    in.job = it->second.object;
    in.workload = WorkloadOf(it->second);
    if (auto a = attempts_.find(key); a != attempts_.end()) in.attempts = a->second;
    if (auto p = pods_of_job_.find(key); p != pods_of_job_.end())
      for (const auto& pk : p->second) pods.push_back(pods_.at(pk));
    for (const auto& [pg_key, pg] : pod_groups_)
      if (pg_key == key || pg_key.rfind(key + ".", 0) == 0) {
        in.pod_group = DecodePodGroupView(api::StringField(pg, "kind") + " " + api::StringField(pg, "apiVersion"), pg);
        break;
      }
    // The job's events, then each pod's (a plain loop: the thread-safety analysis does not see
    // the lock held inside a lambda).
    std::vector<std::string> objects = {ns + "/TFJob/" + name};
    for (const auto& p : pods) objects.push_back(ns + "/Pod/" + api::StringField(api::ObjectField(p, "metadata"), "name"));
    for (const auto& object : objects)
      if (auto e = events_.find(object); e != events_.end())
        for (const auto& [k, ev] : e->second) in.events.push_back(DecodeEventView(ev));
    version = job_versions_.contains(key) ? job_versions_.at(key) : version_;
  }
  for (const auto& p : pods) in.pods.push_back(DecodePodView(p));
  in.now = clock_.Now();
  json page = JobPage(in);
  page["version"] = version;
  return page;
}

json Model::Logs(const std::string& ns, const std::string& name, int64_t after) const {
  MutexLock lock(mu_);
  json lines = json::array();
  int64_t next = 1, dropped = 0;
  if (auto it = logs_.find(api::ObjectKey{ns, name}.String()); it != logs_.end()) {
    const LogBuffer& b = it->second;
    next = b.next;
    if (!b.lines.empty() && b.lines.front().first > after + 1) dropped = b.lines.front().first - after - 1;
    for (const auto& [seq, text] : b.lines)
      if (seq > after) lines.push_back(text);
  }
  return {{"next", next - 1}, {"lines", lines}, {"dropped", dropped}};
}

int64_t Model::version() const {
  MutexLock lock(mu_);
  return version_;
}

int64_t Model::CounterLocked(Watched what, const std::string& job_key) const {
  switch (what) {
    case Watched::kList: return version_;
    case Watched::kJob: {
      auto it = job_versions_.find(job_key);
      return it == job_versions_.end() ? 0 : it->second;
    }
    case Watched::kLogs: {
      auto it = logs_.find(job_key);
      return it == logs_.end() ? 0 : it->second.next - 1;
    }
  }
  return 0;
}

bool Model::WaitAfter(Watched what, const std::string& job_key, int64_t since, std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return cv_.wait_for(mu_, timeout, [&]() TFJOB_REQUIRES(mu_) {
    return closed_ || CounterLocked(what, job_key) > since;
  }) && !closed_;
}

void Model::Close() {
  {
    MutexLock lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

std::vector<json> Model::JobPods(const std::string& ns, const std::string& name) const {
  MutexLock lock(mu_);
  std::vector<json> out;
  if (auto p = pods_of_job_.find(api::ObjectKey{ns, name}.String()); p != pods_of_job_.end())
    for (const auto& pk : p->second) out.push_back(pods_.at(pk));
  return out;
}

size_t Model::jobs() const {
  MutexLock lock(mu_);
  return jobs_.size();
}

}  // namespace tfjob::cli::dashboard
