#pragma once
// Informer<T>: a Reflector feeding a Store<T> of decoded, trimmed records, plus event
// handlers. For pods and services T is the trimmed record (api::Pod, api::Service: well
// under 1 KiB each); for TFJobs the full object model. Handlers run on the reflector's thread
// after the store changed, never under a lock; they get immutable snapshots.
// client-go's SharedIndexInformer, without resync.
//
// Keys come from the object as served (its JSON), so that an object the decoder rejects still
// has one: it is logged by key and dropped from the store, as if deleted. Keeping its last
// decodable version instead would leave a stale object behind for good, even after its
// deletion (whose event carries the undecodable body too), and the controller would keep
// acting for it.

#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/object_key.h"
#include "common/logging.h"
#include "common/status.h"
#include "controller/reflector.h"
#include "controller/store.h"

namespace tfjob::controller {

template <typename T>
struct InformerHandlers {
  std::function<void(const std::shared_ptr<const T>&)> on_add;
  std::function<void(const std::shared_ptr<const T>& old_obj, const std::shared_ptr<const T>& new_obj)> on_update;
  std::function<void(const std::shared_ptr<const T>&)> on_delete;
};

template <typename T>
class Informer final : public ReflectorSink {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Decode = std::function<StatusOr<T>(const nlohmann::json&)>;
  using KeyOf = std::function<std::string(const nlohmann::json&)>;

  Informer(kube::RestClient& client, ListWatchSpec spec, Decode decode, KeyOf key_of, Logger log)
      : resource_(spec.gvr.resource),
        decode_(std::move(decode)),
        key_of_(std::move(key_of)),
        log_(log),
        reflector_(client, std::move(spec), *this, log) {}
  ~Informer() override { Stop(); }

  // REQUIRES: before Start.
  void AddIndex(const std::string& name, typename Store<T>::IndexFn fn) { store_.AddIndex(name, std::move(fn)); }
  void AddHandlers(InformerHandlers<T> h) { handlers_.push_back(std::move(h)); }

  void Start() {
    thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
  }
  void Stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }
  bool HasSynced() const { return reflector_.HasSynced(); }
  const Store<T>& store() const { return store_; }
  const Reflector& reflector() const { return reflector_; }

  // ReflectorSink:
  void Replace(std::vector<nlohmann::json> items) override {
    std::map<std::string, Ptr> fresh;
    for (const auto& item : items) {
      std::string key = key_of_(item);
      if (Ptr p = DecodeOrLog(key, item)) fresh[key] = p;
    }
    for (const auto& key : store_.Keys())
      if (!fresh.contains(key))
        if (Ptr old = store_.Erase(key)) Notify(old, nullptr);  // deleted while we were not watching
    for (auto& [key, p] : fresh) Notify(store_.Upsert(key, p), p);
  }
  void Apply(kube::WatchEventType type, nlohmann::json object) override {
    std::string key = key_of_(object);
    Ptr p = DecodeOrLog(key, object);
    if (type == kube::WatchEventType::kDeleted || !p) {
      Ptr old = store_.Erase(key);
      if (old || p) Notify(old ? old : p, nullptr);
    } else {
      Notify(store_.Upsert(key, p), p);
    }
  }

 private:
  Ptr DecodeOrLog(const std::string& key, const nlohmann::json& j) {
    StatusOr<T> t = decode_(j);
    if (!t.ok()) {
      log_.Warning("skipping an undecodable object",
                   {{"resource", resource_}, {"object", key}, {"error", t.status().message()}});
      return nullptr;
    }
    return std::make_shared<const T>(std::move(t).value());
  }
  void Notify(const Ptr& old_obj, const Ptr& new_obj) {
    for (const auto& h : handlers_) {
      if (old_obj && new_obj) {
        if (h.on_update) h.on_update(old_obj, new_obj);
      } else if (new_obj) {
        if (h.on_add) h.on_add(new_obj);
      } else if (old_obj && h.on_delete)
        h.on_delete(old_obj);
    }
  }

  std::string resource_;  // for logs
  Decode decode_;
  KeyOf key_of_;
  Logger log_;
  Store<T> store_;
  std::vector<InformerHandlers<T>> handlers_;  // fixed before Start
  Reflector reflector_;
  std::jthread thread_;
};

// The key of a namespaced object: "namespace/name", from its metadata ("/name" when it has no
// namespace, "/" when it has no metadata at all).
inline std::string NamespacedKey(const nlohmann::json& object) {
  return api::ObjectKey::OfJson(object).String();
}

}  // namespace tfjob::controller
