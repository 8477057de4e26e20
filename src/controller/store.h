#pragma once
// Store<T>: the informer's cache. Objects are std::shared_ptr<const T> (handlers and listers
// cannot change them: client-go's "MUST NOT modify" rule in the type system), keyed by
// "namespace/name", with named secondary indexes (e.g. by owning job). Thread-safe.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/thread_annotations.h"

namespace tfjob::controller {

template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFn = std::function<std::vector<std::string>(const T&)>;

  // REQUIRES: called before the first Upsert.
  void AddIndex(const std::string& name, IndexFn fn) { indexers_[name] = std::move(fn); }

  // Inserts or replaces; returns the previous object (null if new).
  Ptr Upsert(const std::string& key, Ptr obj) {
    MutexLock lock(mu_);
    Ptr old;
    if (auto it = items_.find(key); it != items_.end()) {
      old = it->second;
      Unindex(key, *old);
    }
    Index(key, *obj);
    items_[key] = std::move(obj);
    return old;
  }

  // Removes; returns the removed object (null if absent).
  Ptr Erase(const std::string& key) {
    MutexLock lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = it->second;
    Unindex(key, *old);
    items_.erase(it);
    return old;
  }

  Ptr Get(const std::string& key) const {
    MutexLock lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }

  std::vector<Ptr> List() const {
    MutexLock lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }

  std::vector<std::string> Keys() const {
    MutexLock lock(mu_);
    std::vector<std::string> out;
    for (const auto& [k, v] : items_) out.push_back(k);
    return out;
  }

  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    MutexLock lock(mu_);
    std::vector<Ptr> out;
    auto idx = indexes_.find(index);
    if (idx == indexes_.end()) return out;
    auto it = idx->second.find(value);
    if (it == idx->second.end()) return out;
    for (const auto& key : it->second) out.push_back(items_.at(key));
    return out;
  }

  size_t size() const {
    MutexLock lock(mu_);
    return items_.size();
  }

 private:
  void Index(const std::string& key, const T& obj) TFJOB_REQUIRES(mu_) {
    for (const auto& [name, fn] : indexers_)
      for (const auto& v : fn(obj)) indexes_[name][v].insert(key);
  }
  void Unindex(const std::string& key, const T& obj) TFJOB_REQUIRES(mu_) {
    for (const auto& [name, fn] : indexers_)
      for (const auto& v : fn(obj)) {
        auto& bucket = indexes_[name][v];
        bucket.erase(key);
        if (bucket.empty()) indexes_[name].erase(v);
      }
  }

  std::map<std::string, IndexFn> indexers_;  // fixed before use
  mutable Mutex mu_;
  std::map<std::string, Ptr> items_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, std::set<std::string>>> indexes_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
