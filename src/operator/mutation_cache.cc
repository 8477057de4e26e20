#include "operator/mutation_cache.h"

#include <charconv>
#include <optional>

#include "api/tfjob_json.h"

namespace tfjob::operator_ {
namespace {

// A resourceVersion as a number (etcd's revision), for "newer than" only, as client-go's
// MutationCache compares them; nullopt when it is not one.
std::optional<uint64_t> ResourceVersionNumber(const std::string& rv) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), v);
  if (rv.empty() || ec != std::errc() || ptr != rv.data() + rv.size()) return std::nullopt;
  return v;
}

}  // namespace

void JobMutationCache::Wrote(const std::string& key, const nlohmann::json& object) {
  auto decoded = api::DecodeTfJobStrict(object);
  MutexLock lock(mu_);
  if (decoded.ok())
    written_[key] = std::make_shared<const api::TfJob>(std::move(decoded).value());
  else
    written_.erase(key);
}

std::shared_ptr<const api::TfJob> JobMutationCache::Newest(const std::string& key,
                                                           std::shared_ptr<const api::TfJob> cached) {
  MutexLock lock(mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  auto mine = ResourceVersionNumber(it->second->metadata.resource_version);
  auto seen = ResourceVersionNumber(cached->metadata.resource_version);
  if (mine && seen && *mine > *seen && it->second->metadata.uid == cached->metadata.uid) return it->second;
  written_.erase(it);  // the informer caught up (or the job was replaced)
  return cached;
}

void JobMutationCache::Forget(const std::string& key) {
  MutexLock lock(mu_);
  written_.erase(key);
}

}  // namespace tfjob::operator_
