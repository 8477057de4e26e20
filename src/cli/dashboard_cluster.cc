#include "cli/dashboard_cluster.h"

#include <algorithm>

#include "api/labels.h"
#include "api/object_key.h"
#include "cli/describe_lookup.h"
#include "common/logging.h"
#include "controller/api_versions.h"
#include "kube/resource_path.h"
#include "kube/tfjob_resources.h"

namespace tfjob::cli::dashboard {
namespace {

using nlohmann::json;

// A log stream nobody read for this long is stopped.
constexpr auto kLogIdle = std::chrono::seconds(60);

bool Serves(kube::RestClient& client, const kube::GroupVersionResource& gvr) {
  auto group = client.GetApiGroup(gvr.group);
  if (!group.ok()) return false;
  auto served = controller::ServedVersions(*group);
  return std::find(served.begin(), served.end(), gvr.version) != served.end();
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kJob: return "tfjobs";
    case Kind::kPod: return "pods";
    case Kind::kEvent: return "events";
    case Kind::kWorkload: return "workloads";
    case Kind::kPodGroup: return "podgroups";
  }
  return "";
}

}  // namespace

// One watch into the model, on its own thread.
struct ClusterSource::Feed : controller::ReflectorSink {
  Feed(kube::RestClient& client, controller::ListWatchSpec spec, Model& m, Kind k)
      : model(m), kind(k), reflector(client, std::move(spec), *this, Logger()) {}
  void Replace(std::vector<json> items) override {
    model.Replace(kind, std::move(items));
    failures = 0;
  }
  void Apply(kube::WatchEventType type, json object) override {
    model.Apply(kind, type, std::move(object));
    if (failures > 0) model.SetStatus("");
    failures = 0;
  }
  void Failed(const Status& status) override {
    ++failures;
    model.SetStatus(std::string("the watch of ") + KindName(kind) + " failed (retrying): " + status.message());
  }
  Model& model;
  const Kind kind;
  controller::Reflector reflector;
  int failures = 0;  // the reflector's thread only
  std::jthread thread;
};

ClusterSource::ClusterSource(Session& session, Model& model, std::string ns, int max_log_requests)
    : s_(session), model_(model), ns_(std::move(ns)), max_log_requests_(max_log_requests) {}

ClusterSource::~ClusterSource() {
  Stop();
}

void ClusterSource::Watch(Kind kind, controller::ListWatchSpec spec) {
  spec.ns = ns_;
  feeds_.push_back(std::make_unique<Feed>(*s_.client, std::move(spec), model_, kind));
  Feed& f = *feeds_.back();
  f.thread = std::jthread([&f](std::stop_token stop) { f.reflector.Run(stop); });
}

void ClusterSource::Start() {
  Watch(Kind::kJob, {.gvr = kube::kTfJobs});
  Watch(Kind::kPod, {.gvr = kube::kPods, .label_selector = std::string(api::kLabelJobName)});
  Watch(Kind::kEvent, {.gvr = kube::kEvents});
  if (auto workloads = ServedKueueWorkloads(*s_.client)) Watch(Kind::kWorkload, {.gvr = *workloads});
  for (const auto* gvr : {&kube::kVolcanoPodGroups, &kube::kPluginsPodGroups})
    if (Serves(*s_.client, *gvr)) Watch(Kind::kPodGroup, {.gvr = *gvr});
  log_pump_ = std::jthread([this](std::stop_token stop) { PumpLogs(stop); });
}

void ClusterSource::Stop() {
  if (log_pump_.joinable()) {
    log_pump_.request_stop();
    log_pump_.join();
  }
  {
    MutexLock lock(mu_);
    for (auto& [key, f] : followed_) f.follower->StopAll();
    followed_.clear();
  }
  for (auto& f : feeds_)
    if (f->thread.joinable()) {
      f->thread.request_stop();
      f->thread.join();
    }
  feeds_.clear();
}

bool ClusterSource::Synced() const {
  return std::all_of(feeds_.begin(), feeds_.end(), [](const auto& f) { return f->reflector.HasSynced(); });
}

StatusOr<std::string> ClusterSource::Act(const std::string& action, const std::string& ns, const std::string& name) {
  if (!ns_.empty() && ns != ns_) return Status(StatusCode::kForbidden, "namespace " + ns + " is not watched");
  const std::string ref = JobRef(ns, name);
  if (action == "delete") {
    TFJOB_RETURN_IF_ERROR(s_.client->Delete(kube::kTfJobs, ns, name, {"Background"}));
    return ref + " deleted";
  }
  const bool suspend = action == "suspend";
  json patch = {{"spec", {{"runPolicy", {{"suspend", suspend}}}}}};
  auto r = s_.client->Patch(kube::kTfJobs, ns, name, kube::PatchType::kMerge, patch);
  if (!r.ok()) return r.status();
  return ref + (suspend ? " suspended" : " resumed");
}

void ClusterSource::Want(const std::string& ns, const std::string& name) {
  MutexLock lock(mu_);
  auto& f = followed_[api::ObjectKey{ns, name}.String()];
  f.last_read = s_.clock.SteadyNow();
  if (f.follower) return;
  LogFollowOptions options;
  options.max_requests = max_log_requests_;
  options.queue_excess = true;
  f.follower = std::make_unique<LogFollower>(
      *s_.client, ns, name, [this, ns, name](const std::string& line) { model_.Log(ns, name, line); }, options);
}

void ClusterSource::PumpLogs(std::stop_token stop) {
  std::map<std::string, std::vector<json>> last;
  while (!stop.stop_requested()) {
    std::vector<std::pair<std::string, LogFollower*>> active;
    std::vector<std::unique_ptr<LogFollower>> idle;
    {
      MutexLock lock(mu_);
      const auto now = s_.clock.SteadyNow();
      for (auto it = followed_.begin(); it != followed_.end();) {
        if (now - it->second.last_read > kLogIdle) {
          idle.push_back(std::move(it->second.follower));
          last.erase(it->first);
          it = followed_.erase(it);
        } else {
          active.emplace_back(it->first, it->second.follower.get());
          ++it;
        }
      }
    }
    for (auto& f : idle) f->StopAll();
    idle.clear();
    for (auto& [key, follower] : active) {
      auto slash = key.find('/');
      std::vector<json> pods = model_.JobPods(key.substr(0, slash), key.substr(slash + 1));
      if (last[key] == pods) continue;
      last[key] = pods;
      // A job's pods as the follower reads them (a job deleted: none; its streams end).
      (void)follower->Update(JobPods(pods, ""));
    }
    s_.clock.SleepFor(std::chrono::milliseconds(500), stop);
  }
}

}  // namespace tfjob::cli::dashboard
