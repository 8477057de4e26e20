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
#include "kube/protobuf.h"
#include "kube/rest_client.h"
#include "kube/watch_decoder.h"

namespace tfjob::controller {

struct ListWatchSpec {
  kube::GroupVersionResource gvr;
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // Optional, for a resource whose version can change under a running process (a cluster
  // upgraded from one API version to the next): when set, asked before every list and watch
  // instead of `gvr`; a watch whose answer differs from the last list's lists again. Called on the
  // reflector's thread.
  std::function<kube::GroupVersionResource()> gvr_source;
  // Optional: told of every failed list or watch, with the resource it asked for (before the
  // back-off), e.g. to discover the served version again on a 404. Called on the reflector's thread.
  std::function<void(const kube::GroupVersionResource&, const Status&)> on_failure;
  // Optional: what is cut from each watch event's object before it is parsed (kube::WatchPrune),
  // for a decoder that reads little of a big field. Lists are parsed whole.
  kube::WatchPrune watch_prune;
  // Optional: list and watch in protobuf, each object turned into the JSON the decoder reads
  // (kube/protobuf.h); a server that answers JSON is read as before (with watch_prune).
  kube::ProtobufView protobuf;
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
  kube::GroupVersionResource Resource() const { return spec_.gvr_source ? spec_.gvr_source() : spec_.gvr; }
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
  kube::GroupVersionResource listed_;  // what the last list asked for; Run's thread only
  mutable Mutex mu_;
  std::string version_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
