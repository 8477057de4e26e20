#include "controller/event_recorder.h"

#include <algorithm>
#include <cstdio>

#include "api/time.h"

namespace tfjob::controller {

using nlohmann::json;

namespace {

constexpr char kSep = '\x1f';
constexpr const char* kCombined = "(combined from similar events): ";

json EventObject(const std::string& name, const ObjectReference& object, const std::string& component) {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", object.ns}}},
          {"involvedObject",
           {{"apiVersion", object.api_version},
            {"kind", object.kind},
            {"name", object.name},
            {"namespace", object.ns},
            {"uid", object.uid}}},
          {"source", {{"component", component}}},
          {"reportingComponent", component}};
}

}  // namespace

EventRecorder::EventRecorder(kube::RestClient& client, Clock& clock, Logger log, Registry* registry,
                             EventRecorderOptions options)
    : client_(client),
      clock_(clock),
      log_(log),
      options_(options),
      seen_(options.max_keys, options.aggregate_window),
      similar_(options.max_keys, options.aggregate_window),
      spam_(options.max_objects, options.spam_idle) {
  if (registry != nullptr) {
    written_ =
        &registry->AddCounter("tfjob_events_written_total", "Events created or count-patched on the API").With({});
    aggregated_ = &registry
                       ->AddCounter("tfjob_events_aggregated_total",
                                    "Events folded into an existing one (an exact repeat, or a similar event)")
                       .With({});
    auto& dropped = registry->AddCounter("tfjob_events_dropped_total", "Events not written", {"reason"});
    dropped_[0] = &dropped.With({"queue_full"});
    dropped_[1] = &dropped.With({"spam_filter"});
    dropped_[2] = &dropped.With({"write_error"});
  }
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

EventRecorder::~EventRecorder() {
  Stop();
}

void EventRecorder::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    { MutexLock lock(mu_); }  // the writer is either before its check of the stop or waiting
    cv_.notify_all();
    thread_.join();
  }
}

size_t EventRecorder::TrackedObjects() const {
  MutexLock lock(mu_);
  return spam_.size();
}

void EventRecorder::Count(Drop reason) {
  if (Counter* c = dropped_[static_cast<int>(reason)]) c->Inc();
}

bool EventRecorder::Aggregate(const std::string& similar_key, const std::string& message, Clock::SteadyTime now) {
  auto& similar = similar_.Touch(similar_key, now);
  if (similar.messages.contains(message)) return false;
  if (similar.messages.size() + 1 >= options_.aggregate_max_events) return true;
  similar.messages.insert(message);
  return false;
}

bool EventRecorder::Admit(const std::string& object_key, Clock::SteadyTime now) {
  // Tokens in units of refill time (exact integers): one token = spam_refill.
  const std::chrono::nanoseconds token = options_.spam_refill;
  bool created = false;
  auto& t = spam_.Touch(object_key, now, &created);
  if (created)
    t.credit = token * options_.spam_burst;
  else
    t.credit = std::min(token * options_.spam_burst, t.credit + (now - t.refilled));
  t.refilled = now;
  if (t.credit < token) return false;
  t.credit -= token;
  return true;
}

bool EventRecorder::MayQueue(const std::string& object_key, Clock::SteadyTime now) {
  if (queue_.size() >= options_.max_queue) {
    Count(Drop::kQueueFull);
    return false;
  }
  if (!Admit(object_key, now)) {
    Count(Drop::kSpamFilter);
    return false;
  }
  return true;
}

void EventRecorder::Enqueue(Pending p) {
  std::string name = p.name;
  queue_.push_back(std::move(p));
  queued_[name] = std::prev(queue_.end());
  cv_.notify_one();
}

std::string EventRecorder::NewName(const std::string& object_name, Clock::WallTime at) {
  // As upstream: <object>.<hex nanoseconds>; one more than the last when two share a tick.
  auto ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count());
  last_suffix_ = std::max(ns, last_suffix_ + 1);
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "%llx", static_cast<unsigned long long>(last_suffix_));
  return object_name + "." + suffix;
}

void EventRecorder::Record(const ObjectReference& object, const std::string& type, const std::string& reason,
                           const std::string& message) {
  Clock::SteadyTime now = clock_.SteadyNow();
  Clock::WallTime at = clock_.Now();
  std::string object_key =
      options_.component + kSep + object.kind + kSep + object.ns + kSep + object.name + kSep + object.uid;
  std::string similar_key = object_key + kSep + type + kSep + reason;
  MutexLock lock(mu_);
  bool combined = Aggregate(similar_key, message, now);
  std::string text = combined ? kCombined + message : message;
  std::string key = combined ? similar_key : similar_key + kSep + message;
  if (Seen* seen = seen_.Find(key, now)) {
    seen->count++;
    if (auto q = queued_.find(seen->name); q != queued_.end()) {  // fold into the queued write
      q->second->count = seen->count;
      q->second->last = at;
      q->second->message = text;
      if (aggregated_) aggregated_->Inc();
      return;
    }
    if (!MayQueue(object_key, now)) return;  // the count still goes up with the next write
    if (aggregated_) aggregated_->Inc();
    Enqueue(Pending{object, type, reason, text, seen->name, seen->count, false, seen->first, at});
    return;
  }
  if (!MayQueue(object_key, now)) return;
  std::string name = NewName(object.name, at);
  seen_.Touch(key, now) = Seen{name, 1, at};
  Enqueue(Pending{object, type, reason, text, name, 1, true, at, at});
}

bool EventRecorder::Idle() const {
  return queue_.empty() && !busy_;
}

void EventRecorder::Flush() {
  MutexLock lock(mu_);
  while (!Idle()) idle_cv_.wait(mu_);
}

bool EventRecorder::Flush(std::chrono::nanoseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mu_);
  while (!Idle())
    if (idle_cv_.wait_until(mu_, deadline) == std::cv_status::timeout) return Idle();
  return true;
}

void EventRecorder::Loop(std::stop_token stop) {
  for (;;) {
    Pending p;
    {
      MutexLock lock(mu_);
      while (queue_.empty() && !stop.stop_requested()) cv_.wait(mu_);
      if (stop.stop_requested()) {
        idle_cv_.notify_all();
        return;
      }
      p = std::move(queue_.front());
      queued_.erase(p.name);
      queue_.pop_front();
      busy_ = true;
    }
    Write(p);
    MutexLock lock(mu_);
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

bool EventRecorder::Create(const Pending& p) {
  json event = EventObject(p.name, p.object, options_.component);
  event["type"] = p.type;
  event["reason"] = p.reason;
  event["message"] = p.message;
  event["firstTimestamp"] = api::FormatTime(p.first);
  event["lastTimestamp"] = api::FormatTime(p.last);
  event["count"] = p.count;
  auto r = client_.Create(kube::kEvents, p.object.ns, event);
  if (r.ok()) return true;
  log_.Warning("writing an event failed", {{"reason", p.reason}, {"error", r.status().message()}});
  return false;
}

void EventRecorder::Write(const Pending& p) {
  bool ok = false;
  if (p.create) {
    ok = Create(p);
  } else {
    json patch = {{"count", p.count}, {"lastTimestamp", api::FormatTime(p.last)}, {"message", p.message}};
    auto r = client_.Patch(kube::kEvents, p.object.ns, p.name, kube::PatchType::kMerge, patch);
    ok = r.ok();
    if (!ok && IsNotFound(r.status())) {
      ok = Create(p);  // the Event expired on the server (TTL 1h) or was never written: write it anew
    } else if (!ok) {
      log_.Warning("updating an event failed", {{"reason", p.reason}, {"error", r.status().message()}});
    }
  }
  if (ok && written_) written_->Inc();
  if (!ok) Count(Drop::kWriteError);
}

}  // namespace tfjob::controller
