#include "cli/tracker.h"

#include "api/json_fields.h"
#include "api/object_key.h"
#include "common/logging.h"

namespace tfjob::cli {
namespace {

using nlohmann::json;

// The object's "namespace/name" (api::ObjectKey, the one spelling of the key).
std::string Key(const json& o) {
  const json& m = api::ObjectField(o, "metadata");
  return api::ObjectKey{api::StringField(m, "namespace"), api::StringField(m, "name")}.String();
}

}  // namespace

Tracker::Tracker(kube::RestClient& client, controller::ListWatchSpec spec, std::function<void()> changed)
    : spec_name_(spec.gvr.resource),
      changed_(std::move(changed)),
      reflector_(client, std::move(spec), *this, Logger()) {}

Tracker::~Tracker() {
  Stop();
}

void Tracker::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
}

void Tracker::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void Tracker::Replace(std::vector<json> items) {
  {
    MutexLock lock(mu_);
    objects_.clear();
    InsertLocked(items);
    synced_ = true;
  }
  changed_();
}

void Tracker::Upsert(std::vector<json> items) {
  MutexLock lock(mu_);
  InsertLocked(items);
}

void Tracker::Apply(kube::WatchEventType type, json object) {
  {
    MutexLock lock(mu_);
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

std::vector<json> Tracker::Snapshot() const {
  MutexLock lock(mu_);
  std::vector<json> out;
  for (const auto& [k, o] : objects_) out.push_back(o);
  return out;
}

bool Tracker::synced() const {
  MutexLock lock(mu_);
  return synced_;
}

void Tracker::Failed(const Status& status) {
  if (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded) return;
  {
    MutexLock lock(mu_);
    ++failures_;
    last_error_ = status.message();
  }
  changed_();
}

std::string Tracker::GaveUp() const {
  MutexLock lock(mu_);
  if (failures_ < kMaxStreamFailures) return "";
  return "the watch of " + spec_name_ + " failed " + std::to_string(failures_) + " times in a row: " + last_error_;
}

std::vector<std::pair<kube::WatchEventType, json>> Tracker::TakeEvents() {
  MutexLock lock(mu_);
  std::vector<std::pair<kube::WatchEventType, json>> out(events_.begin(), events_.end());
  events_.clear();
  return out;
}

void Tracker::InsertLocked(std::vector<json>& items) {
  // The key first: json's operator= takes its argument by value, and the right side of `=`
  // is evaluated first (C++17), so Key(o) would see a moved-from object.
  for (auto& o : items) {
    std::string key = Key(o);
    objects_[key] = std::move(o);
  }
}

void Signal::Notify() {
  {
    MutexLock lock(mu_);
    changed_ = true;
  }
  cv_.notify_all();
}

bool Signal::Wait(std::chrono::milliseconds d) {
  MutexLock lock(mu_);
  bool c = cv_.wait_for(mu_, d, [this]() TFJOB_REQUIRES(mu_) { return changed_; });
  changed_ = false;
  return c;
}

}  // namespace tfjob::cli
