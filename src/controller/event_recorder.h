#pragma once
// EventRecorder: Kubernetes Events (core/v1) about objects, written by a background thread so
// recording never blocks a reconcile. What reaches the API server (docs/semantics.md D9,
// docs/operator.md section 5):
// - exact repeats of (object, type, reason, message) within the window bump the count of the
//   existing Event (a repeat still queued is folded into the queued write);
// - similar events (object, type, reason; other messages): from the 10th distinct message within
//   the window on, they go into one Event "(combined from similar events): <latest message>"
//   whose count goes up;
// - a per-object spam filter (source + object) lets a burst of 25 API writes through, then one
//   per 5 minutes, so a noisy object cannot starve the others; the filter forgets objects idle
//   for 10 minutes and keeps at most 10,000 (the oldest used go first);
// - the queue holds at most 10,000 pending writes (a few hundred bytes each, so a few MB); a
//   full queue drops (counted) rather than waits. The write rate is the REST client's own.
// Metrics: tfjob_events_written_total, tfjob_events_dropped_total{reason},
// tfjob_events_aggregated_total. Source component "tfjob-controller".

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/clock.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "controller/metrics.h"
#include "kube/rest_client.h"

namespace tfjob::controller {

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
};

struct EventRecorderOptions {
  std::string component = "tfjob-controller";
  // Correlation and aggregation look back this long from the last matching event.
  std::chrono::minutes aggregate_window{10};
  // The distinct message (same object, type and reason) that starts the combined event.
  size_t aggregate_max_events = 10;
  // The per-object spam filter: burst, then one token per spam_refill.
  int spam_burst = 25;
  std::chrono::seconds spam_refill{300};
  // Filter entries unused this long are forgotten; at most max_objects are kept. The
  // correlation and aggregation caches are bounded by max_keys each (same idle rule: the window).
  std::chrono::minutes spam_idle{10};
  size_t max_objects = 10000;
  size_t max_keys = 4096;  // client-go's cache size; a key is ~250 bytes with its nodes
  size_t max_queue = 10000;
};

// A map of at most `capacity` entries where an entry unused for longer than `idle` is gone, and
// when full the least recently used goes first. Not thread-safe.
template <typename V>
class ExpiringLru {
 public:
  ExpiringLru(size_t capacity, std::chrono::nanoseconds idle) : capacity_(capacity), idle_(idle) {}

  // The live entry for `key`, marked used at `now`, or nullptr.
  V* Find(const std::string& key, Clock::SteadyTime now) {
    Expire(now);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    Use(it->second, now);
    return &it->second->value;
  }
  // The live entry for `key` (a new V{} if there was none, `*created` then true), marked used.
  V& Touch(const std::string& key, Clock::SteadyTime now, bool* created = nullptr) {
    if (V* v = Find(key, now)) {
      if (created != nullptr) *created = false;
      return *v;
    }
    order_.push_front(Node{key, V{}, now});
    index_[key] = order_.begin();
    if (created != nullptr) *created = true;
    V& v = order_.front().value;
    Expire(now);  // the new entry is the most recent: it stays
    return v;
  }
  size_t size() const { return order_.size(); }

 private:
  struct Node {
    std::string key;
    V value;
    Clock::SteadyTime used;
  };
  void Use(typename std::list<Node>::iterator it, Clock::SteadyTime now) {
    it->used = now;
    order_.splice(order_.begin(), order_, it);
  }
  void Expire(Clock::SteadyTime now) {
    while (!order_.empty() && (order_.size() > capacity_ || now - order_.back().used > idle_)) {
      index_.erase(order_.back().key);
      order_.pop_back();
    }
  }

  const size_t capacity_;
  const std::chrono::nanoseconds idle_;
  std::list<Node> order_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Node>::iterator> index_;
};

class EventRecorder {
 public:
  EventRecorder(kube::RestClient& client, Clock& clock, Logger log, Registry* registry = nullptr,
                EventRecorderOptions options = {});
  ~EventRecorder();

  // Never blocks on the API. `type` is "Normal" or "Warning".
  void Record(const ObjectReference& object, const std::string& type, const std::string& reason,
              const std::string& message) TFJOB_EXCLUDES(mu_);
  // Writes everything queued (for tests and shutdown). Returns when the queue is empty.
  void Flush() TFJOB_EXCLUDES(mu_);
  // The same, waiting at most `timeout`; returns false if events were still queued then.
  bool Flush(std::chrono::nanoseconds timeout) TFJOB_EXCLUDES(mu_);
  // Stops the writer; what is still queued is dropped.
  void Stop();
  // Objects the spam filter tracks now (bounded by max_objects).
  size_t TrackedObjects() const TFJOB_EXCLUDES(mu_);

 private:
  // One write to the API: a new Event, or the new count of an existing one.
  struct Pending {
    ObjectReference object;
    std::string type, reason, message;
    std::string name;  // the Event's
    int count = 1;
    bool create = true;
    Clock::WallTime first, last;
  };
  struct Seen {  // an Event written (or queued) for a correlation key
    std::string name;
    int count = 0;
    Clock::WallTime first;
  };
  struct Similar {  // messages of one (object, type, reason) that have Events of their own
    std::set<std::string> messages;
  };
  struct Tokens {
    std::chrono::nanoseconds credit{0};
    Clock::SteadyTime refilled;
  };
  enum class Drop { kQueueFull, kSpamFilter, kWriteError };

  bool Aggregate(const std::string& similar_key, const std::string& message, Clock::SteadyTime now) TFJOB_REQUIRES(mu_);
  bool Admit(const std::string& object_key, Clock::SteadyTime now) TFJOB_REQUIRES(mu_);
  // Room in the queue and a token of the object's filter; counts the drop if not.
  bool MayQueue(const std::string& object_key, Clock::SteadyTime now) TFJOB_REQUIRES(mu_);
  void Enqueue(Pending p) TFJOB_REQUIRES(mu_);
  std::string NewName(const std::string& object_name, Clock::WallTime at) TFJOB_REQUIRES(mu_);
  void Count(Drop reason);
  bool Idle() const TFJOB_REQUIRES(mu_);
  void Write(const Pending& p);
  bool Create(const Pending& p);
  void Loop(std::stop_token stop) TFJOB_EXCLUDES(mu_);

  kube::RestClient& client_;
  Clock& clock_;
  Logger log_;
  const EventRecorderOptions options_;
  Counter* written_ = nullptr;
  Counter* aggregated_ = nullptr;
  Counter* dropped_[3] = {nullptr, nullptr, nullptr};  // by Drop
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable_any idle_cv_;
  std::list<Pending> queue_ TFJOB_GUARDED_BY(mu_);
  // Queued (not yet taken by the writer) writes by Event name.
  std::unordered_map<std::string, std::list<Pending>::iterator> queued_ TFJOB_GUARDED_BY(mu_);
  bool busy_ TFJOB_GUARDED_BY(mu_) = false;
  ExpiringLru<Seen> seen_ TFJOB_GUARDED_BY(mu_);        // correlation key -> Event
  ExpiringLru<Similar> similar_ TFJOB_GUARDED_BY(mu_);  // aggregation key -> messages
  ExpiringLru<Tokens> spam_ TFJOB_GUARDED_BY(mu_);      // object key -> filter
  uint64_t last_suffix_ TFJOB_GUARDED_BY(mu_) = 0;      // Event names are unique
  std::jthread thread_;
};

}  // namespace tfjob::controller
