#pragma once
// InformerFactory: the one cache of a process (client-go's SharedInformerFactory). A part that
// reads objects of a resource asks the factory for that resource's informer (`For`): the first
// ask registers it, a later ask of the same resource, version, namespace and selectors gets the
// same informer, so a process lists and watches each of them once. Parts add their indexes and
// handlers to it before Start and read its store through a `Lister`. The factory starts, syncs
// and stops every informer in one place: in the operator the Manager's cache runnable
// (operator/manager.h), in a CLI command the command itself. docs/architecture.md ("A reader of
// the cache") shows how a new part gets a lister.
//
// A resource is decoded one way per process: asking for it with another record type is a
// programming error (TFJOB_CHECK). The first ask's ListWatchSpec (its gvr_source, on_failure)
// is the one used.
//
// Lifetime: the handlers run on the informers' threads until Stop. Stop the factory before the
// parts whose handlers it calls are destroyed (the Manager does; so do the tests' fixtures).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/priority_class.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "controller/informer.h"
#include "controller/runnable.h"
#include "controller/store.h"
#include "kube/rest_client.h"

namespace tfjob::controller {

// A read-only view of one informer's store: what a part keeps to read the cache.
template <typename T>
class Lister {
 public:
  using Ptr = std::shared_ptr<const T>;
  Lister() = default;
  explicit Lister(const Store<T>& store) : store_(&store) {}

  explicit operator bool() const { return store_ != nullptr; }
  Ptr Get(const std::string& key) const { return store_->Get(key); }
  std::vector<Ptr> List() const { return store_->List(); }
  std::vector<std::string> Keys() const { return store_->Keys(); }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    return store_->ByIndex(index, value);
  }
  size_t size() const { return store_->size(); }

 private:
  const Store<T>* store_ = nullptr;
};

// The decoders written once: an object kept as served, and the key of a cluster-scoped object.
inline StatusOr<nlohmann::json> KeepJson(const nlohmann::json& object) {
  return object;
}
std::string ClusterScopedKey(const nlohmann::json& object);  // metadata.name

class InformerFactory {
 public:
  // `client` must outlive the factory.
  InformerFactory(kube::RestClient& client, Logger log) : client_(client), log_(std::move(log)) {}
  ~InformerFactory() { Stop(); }
  InformerFactory(const InformerFactory&) = delete;
  InformerFactory& operator=(const InformerFactory&) = delete;

  // The informer of `spec`'s resource, registered by the first ask. REQUIRES: every ask of one
  // resource uses the same T. An informer registered after Start starts at the next Start.
  template <typename T>
  Informer<T>& For(ListWatchSpec spec, typename Informer<T>::Decode decode, typename Informer<T>::KeyOf key_of)
      TFJOB_EXCLUDES(mu_) {
    const std::string id = IdOf(spec);
    MutexLock lock(mu_);
    if (auto it = entries_.find(id); it != entries_.end()) {
      TFJOB_CHECK(it->second.type == std::type_index(typeid(T)));
      return *static_cast<Informer<T>*>(it->second.informer.get());
    }
    auto informer = std::make_shared<Informer<T>>(client_, std::move(spec), std::move(decode), std::move(key_of), log_);
    Informer<T>& ref = *informer;
    entries_.emplace(id, Entry{std::type_index(typeid(T)), informer, [p = informer.get()] { p->Start(); },
                               [p = informer.get()] { p->Stop(); }, [p = informer.get()] { return p->HasSynced(); }});
    order_.push_back(id);
    return ref;
  }

  // Starts the informers not started yet, in the order they were registered.
  void Start() TFJOB_EXCLUDES(mu_);
  // Every registered informer has listed once (client-go's WaitForCacheSync, without the wait).
  bool HasSynced() const TFJOB_EXCLUDES(mu_);
  // Stops every informer (joins their threads); their stores stay readable. Idempotent.
  void Stop() TFJOB_EXCLUDES(mu_);

  // The cache as a Manager's runnable "informers" (on every replica): Start, ready when synced
  // (also its /readyz check), Stop.
  Runnable AsRunnable();

  // How many informers are registered: in all, or of one resource name ("priorityclasses").
  size_t size() const TFJOB_EXCLUDES(mu_);
  size_t CountOf(const std::string& resource) const TFJOB_EXCLUDES(mu_);

 private:
  struct Entry {
    std::type_index type;
    std::shared_ptr<void> informer;
    std::function<void()> start, stop;
    std::function<bool()> synced;
    bool started = false;
  };
  // group/version/resource, namespace and selectors; the version is "*" when it follows a
  // tracker (ListWatchSpec::gvr_source).
  static std::string IdOf(const ListWatchSpec& spec);

  kube::RestClient& client_;
  Logger log_;
  mutable Mutex mu_;
  std::map<std::string, Entry> entries_ TFJOB_GUARDED_BY(mu_);
  std::vector<std::string> order_ TFJOB_GUARDED_BY(mu_);
};

// The resources more than one part of a process reads, registered in one place.
// PriorityClasses (cluster-scoped): the gang's computed minResources and Kueue's operator mode.
// No handlers: a job sees a changed class at its next reconcile.
Informer<api::PriorityClass>& PriorityClassInformer(InformerFactory& factory);

}  // namespace tfjob::controller
