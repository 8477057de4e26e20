#pragma once
// Reflector: keeps a local copy of a set of objects in step with the API server. It lists
// (paginated), then watches from the list's resourceVersion, following bookmarks; when the
// server answers 410 Gone (the version was compacted) it lists again; on any other failure it
// waits (backoff 0.8 s doubling to 5 s) and watches again from the last version it saw. An
// undecodable event or an event over the decoder's cap ends the watch the same way. Waits and
// durations use the client's Clock.
// client-go's Reflector. The sink sees every change; Run blocks until `stop`.

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "kube/rest_client.h"
#include "kube/watch_decoder.h"

namespace tfjob::controller {

struct ListWatchSpec {
  kube::GroupVersionResource gvr;
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
};

class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // The full current set after a (re)list; the sink removes what is missing (tombstones).
  virtual void Replace(std::vector<nlohmann::json> items) = 0;
  virtual void Apply(kube::WatchEventType type, nlohmann::json object) = 0;
  // A list or watch failed and will be retried after a back-off (the CLI gives up on a stream
  // that keeps failing: docs/cli.md).
  virtual void Failed(const Status& /*status*/) {}
};

class Reflector {
 public:
  Reflector(kube::RestClient& client, ListWatchSpec spec, ReflectorSink& sink, Logger log);

  void Run(std::stop_token stop);
  bool HasSynced() const { return synced_.load(); }
  std::string last_resource_version() const;
  // Counters for tests and metrics.
  int lists() const { return lists_.load(); }
  int watches() const { return watches_.load(); }

 private:
  Status ListOnce();
  Status WatchOnce(std::stop_token stop);
  void SetVersion(const std::string& rv);

  kube::RestClient& client_;
  const ListWatchSpec spec_;
  ReflectorSink& sink_;
  Logger log_;
  std::atomic<bool> synced_{false};
  std::atomic<int> lists_{0};
  std::atomic<int> watches_{0};
  mutable Mutex mu_;
  std::string version_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
