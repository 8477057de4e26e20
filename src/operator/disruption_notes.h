#pragma once
// DisruptionNotes: the TfJobController's record of pods deleted by others (docs/semantics.md D21):
// drained, evicted, preempted or `kubectl delete`d. A deletionTimestamp (or a delete event, for a
// pod removed at once) that this operator did not ask for is noted under the job's key until a
// pass has counted it; the pods this operator deletes are remembered by uid until their delete
// event. Only a leading process notes (a standby's notes would count those disruptions again
// after a failover). Whether a deletion disrupts at all is the pure rule core::DeletionDisruption.
// Thread-safe: the pod informer's thread, the workers and the write pool call it.

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/pod.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::operator_ {

class DisruptionNotes {
 public:
  explicit DisruptionNotes(Logger log) : log_(std::move(log)) {}

  // This process leads from now on: deletions are noted.
  void Lead() { leading_ = true; }
  // A deletionTimestamp appeared on `pod` of the job `key`: noted unless this operator asked.
  void DeletionStarted(const std::string& key, const api::Pod& pod) TFJOB_EXCLUDES(mu_);
  // `pod` of `key` is gone (its delete event): noted when nobody was seen deleting it and this
  // operator did not ask; one of ours is forgotten.
  void PodGone(const std::string& key, const api::Pod& pod) TFJOB_EXCLUDES(mu_);
  // This operator is about to delete the pod `uid` of `key` (a note of it, if any, is dropped:
  // the pass that deletes it counted it)...
  void Deleting(const std::string& key, const std::string& uid) TFJOB_EXCLUDES(mu_);
  // ...and no delete event of it will come (it was gone, or the name is a namesake's).
  void DeleteDone(const std::string& uid) TFJOB_EXCLUDES(mu_);
  // The notes of `key`, for a pass's ObservedState.
  std::vector<core::PodDisruption> For(const std::string& key) const TFJOB_EXCLUDES(mu_);
  // The notes a pass read are counted (or never will be): dropped.
  void Consume(const std::string& key, const std::vector<core::PodDisruption>& read) TFJOB_EXCLUDES(mu_);
  // The job is gone.
  void Forget(const std::string& key) TFJOB_EXCLUDES(mu_);
  // Notes of `key` are kept (for tests).
  bool Has(const std::string& key) const TFJOB_EXCLUDES(mu_);

 private:
  void Note(const std::string& key, const api::Pod& pod) TFJOB_EXCLUDES(mu_);

  Logger log_;
  std::atomic<bool> leading_{false};
  mutable Mutex mu_;
  std::set<std::string> own_deletes_ TFJOB_GUARDED_BY(mu_);  // uids of the pods this operator deleted, until gone
  std::map<std::string, std::map<std::string, core::PodDisruption>> notes_ TFJOB_GUARDED_BY(mu_);  // key -> uid -> note
};

}  // namespace tfjob::operator_
