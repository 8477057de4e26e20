#pragma once
// JobMutationCache: the TFJobs as this operator's own last write of each returned them, kept until
// the informer shows that version (client-go's MutationCache, docs/semantics.md D28). A pass woken
// by pod events must not run on the job as it was before our own status write: it would compute
// the terminal status again from later pods, or recreate the pods a finished job just cleaned up
// (D18). Thread-safe: the workers, the write pool and the Kueue mode write and read it.

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "common/thread_annotations.h"

namespace tfjob::operator_ {

class JobMutationCache {
 public:
  // Our write of the job under `key` returned `object` (kept decoded; dropped if it does not decode).
  void Wrote(const std::string& key, const nlohmann::json& object) TFJOB_EXCLUDES(mu_);
  // The newer of `cached` (the informer's) and our last write: ours while its resourceVersion is
  // greater and the uid the same; otherwise the entry is dropped (the informer caught up, or the
  // job was replaced) and `cached` returned. REQUIRES: cached != nullptr.
  std::shared_ptr<const api::TfJob> Newest(const std::string& key, std::shared_ptr<const api::TfJob> cached)
      TFJOB_EXCLUDES(mu_);
  void Forget(const std::string& key) TFJOB_EXCLUDES(mu_);

 private:
  Mutex mu_;
  std::map<std::string, std::shared_ptr<const api::TfJob>> written_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::operator_
