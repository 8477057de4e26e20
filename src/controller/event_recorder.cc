#include "controller/event_recorder.h"

#include <cstdio>

#include "api/time.h"

namespace tfjob::controller {

using nlohmann::json;

EventRecorder::EventRecorder(kube::RestClient& client, Clock& clock, Logger log, Registry* registry,
                             EventRecorderOptions options)
    : client_(client), clock_(clock), log_(log), options_(options), bucket_(clock, options.qps, options.burst) {
  if (registry != nullptr)
    dropped_ =
        &registry->AddCounter("tfjob_events_dropped_total", "Events not written (queue full or rate limited)").With({});
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

EventRecorder::~EventRecorder() {
  Stop();
}

void EventRecorder::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    cv_.notify_all();
    thread_.join();
  }
}

void EventRecorder::Record(const ObjectReference& object, const std::string& type, const std::string& reason,
                           const std::string& message) {
  std::lock_guard lock(mu_);
  if (queue_.size() >= options_.max_queue) {
    if (dropped_) dropped_->Inc();
    return;
  }
  queue_.push_back({object, type, reason, message, clock_.Now()});
  cv_.notify_one();
}

void EventRecorder::Flush() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

bool EventRecorder::Flush(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [this] { return queue_.empty() && !busy_; });
}

void EventRecorder::Loop(std::stop_token stop) {
  for (;;) {
    Pending e;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, stop, [this] { return !queue_.empty(); });
      if (queue_.empty() || stop.stop_requested()) {
        idle_cv_.notify_all();
        return;
      }
      e = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    Write(e);
    std::lock_guard lock(mu_);
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void EventRecorder::Write(const Pending& e) {
  if (!bucket_.TryAccept()) {
    if (dropped_) dropped_->Inc();
    return;
  }
  std::string key = e.object.uid + "\x1f" + e.type + "\x1f" + e.reason + "\x1f" + e.message;
  std::string now = api::FormatTime(e.at);
  auto it = seen_.find(key);
  if (it != seen_.end() && e.at - it->second.last < options_.aggregate_window) {
    it->second.count++;
    it->second.last = e.at;
    json patch = {{"count", it->second.count}, {"lastTimestamp", now}};
    auto r = client_.Patch(kube::kEvents, e.object.ns, it->second.event_name, kube::PatchType::kMerge, patch);
    if (r.ok()) return;
    if (!IsNotFound(r.status())) {
      log_.Warning("updating an event failed", {{"reason", e.reason}, {"error", r.status().message()}});
      return;
    }
    // The event expired on the server (TTL 1h): write a new one.
  }
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "%llx",
                static_cast<unsigned long long>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(e.at.time_since_epoch()).count()));
  std::string name = e.object.name + "." + suffix;
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", e.object.ns}}},
                {"involvedObject",
                 {{"apiVersion", e.object.api_version},
                  {"kind", e.object.kind},
                  {"name", e.object.name},
                  {"namespace", e.object.ns},
                  {"uid", e.object.uid}}},
                {"type", e.type},
                {"reason", e.reason},
                {"message", e.message},
                {"source", {{"component", options_.component}}},
                {"reportingComponent", options_.component},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1}};
  auto r = client_.Create(kube::kEvents, e.object.ns, event);
  if (!r.ok()) {
    log_.Warning("writing an event failed", {{"reason", e.reason}, {"error", r.status().message()}});
    return;
  }
  seen_[key] = Seen{name, 1, e.at};
  // Forget entries outside the window so the map stays bounded.
  if (seen_.size() > 4096)
    for (auto s = seen_.begin(); s != seen_.end();)
      s = e.at - s->second.last > options_.aggregate_window ? seen_.erase(s) : std::next(s);
}

}  // namespace tfjob::controller
