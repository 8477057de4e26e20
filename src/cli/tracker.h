#pragma once
// The watches of the cluster commands (submit --wait, logs -f, get --watch): a Tracker keeps the
// objects of one list+watch in step through a controller::Reflector on its own jthread, and a
// Signal wakes the command's loop when one changed.
//
// The operator's Informer<T> (controller/informer.h) is not used: the CLI keeps raw JSON, needs
// the watch events themselves (get --watch prints one row per event), and gives a stream up
// after kMaxStreamFailures failures in a row (docs/cli.md), which the informer does not report.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/thread_annotations.h"
#include "controller/reflector.h"
#include "kube/rest_client.h"

namespace tfjob::cli {

// A watch that fails this many times in a row for a reason other than an unreachable server
// (junk, a line over the limit, an error status) is given up on with exit 2 (docs/cli.md).
inline constexpr int kMaxStreamFailures = 3;

class Tracker : public controller::ReflectorSink {
 public:
  // `changed` runs on the reflector's thread after each change.
  Tracker(kube::RestClient& client, controller::ListWatchSpec spec, std::function<void()> changed);
  ~Tracker() override;
  void Start();
  void Stop();

  void Replace(std::vector<nlohmann::json> items) override TFJOB_EXCLUDES(mu_);
  void Apply(kube::WatchEventType type, nlohmann::json object) override TFJOB_EXCLUDES(mu_);
  void Failed(const Status& status) override TFJOB_EXCLUDES(mu_);

  // Adds or replaces `items` by key and keeps the rest (a list made outside the reflector).
  void Upsert(std::vector<nlohmann::json> items) TFJOB_EXCLUDES(mu_);
  std::vector<nlohmann::json> Snapshot() const TFJOB_EXCLUDES(mu_);
  bool synced() const TFJOB_EXCLUDES(mu_);
  // Why the stream is given up on, once its list or watch has failed kMaxStreamFailures times in
  // a row without one event in between (a server that sends junk; docs/cli.md); else empty.
  std::string GaveUp() const TFJOB_EXCLUDES(mu_);
  // The watch events since the last call (get --watch).
  std::vector<std::pair<kube::WatchEventType, nlohmann::json>> TakeEvents() TFJOB_EXCLUDES(mu_);

 private:
  void InsertLocked(std::vector<nlohmann::json>& items) TFJOB_REQUIRES(mu_);

  const std::string spec_name_;
  const std::function<void()> changed_;
  controller::Reflector reflector_;
  mutable Mutex mu_;
  // By "namespace/name" (api::ObjectKey).
  std::map<std::string, nlohmann::json> objects_ TFJOB_GUARDED_BY(mu_);
  std::list<std::pair<kube::WatchEventType, nlohmann::json>> events_ TFJOB_GUARDED_BY(mu_);
  bool synced_ TFJOB_GUARDED_BY(mu_) = false;
  int failures_ TFJOB_GUARDED_BY(mu_) = 0;  // in a row, not counting an unreachable server (which may come back)
  std::string last_error_ TFJOB_GUARDED_BY(mu_);
  std::jthread thread_;
};

// Wakes a waiting loop when a tracker changed.
class Signal {
 public:
  void Notify() TFJOB_EXCLUDES(mu_);
  // True when something changed within `d`.
  bool Wait(std::chrono::milliseconds d) TFJOB_EXCLUDES(mu_);

 private:
  Mutex mu_;
  std::condition_variable_any cv_;
  bool changed_ TFJOB_GUARDED_BY(mu_) = false;
};

}  // namespace tfjob::cli
