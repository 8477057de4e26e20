#pragma once
// EventRecorder: Kubernetes Events (core/v1) about objects, written by a background thread so
// recording never blocks a reconcile. Repeats of the same (object, type, reason, message)
// within 10 minutes bump the count of the existing Event instead of creating another (as
// client-go's EventCorrelator does); a token bucket caps the write rate, and a full queue drops
// events (counted) rather than waiting. Source component "tfjob-controller".

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/logging.h"
#include "common/token_bucket.h"
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
  std::chrono::minutes aggregate_window{10};
  double qps = 5;
  int burst = 25;
  size_t max_queue = 1000;
};

class EventRecorder {
 public:
  EventRecorder(kube::RestClient& client, Clock& clock, Logger log, Registry* registry = nullptr,
                EventRecorderOptions options = {});
  ~EventRecorder();

  // Never blocks. `type` is "Normal" or "Warning".
  void Record(const ObjectReference& object, const std::string& type, const std::string& reason,
              const std::string& message);
  // Writes everything queued (for tests and shutdown). Returns when the queue is empty.
  void Flush();
  // The same, waiting at most `timeout`; returns false if events were still queued then.
  bool Flush(std::chrono::nanoseconds timeout);
  // Stops the writer; what is still queued is dropped.
  void Stop();

 private:
  struct Pending {
    ObjectReference object;
    std::string type, reason, message;
    std::chrono::system_clock::time_point at;
  };
  struct Seen {
    std::string event_name;
    int count;
    std::chrono::system_clock::time_point last;
  };
  void Write(const Pending& e);
  void Loop(std::stop_token stop);

  kube::RestClient& client_;
  Clock& clock_;
  Logger log_;
  EventRecorderOptions options_;
  TokenBucket bucket_;
  Counter* dropped_ = nullptr;
  std::mutex mu_;  // guards queue_, busy_
  std::condition_variable_any cv_;
  std::condition_variable_any idle_cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;
  std::map<std::string, Seen> seen_;  // writer thread only
  std::jthread thread_;
};

}  // namespace tfjob::controller
