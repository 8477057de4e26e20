#include "operator/disruption_notes.h"

#include <optional>

namespace tfjob::operator_ {

void DisruptionNotes::Note(const std::string& key, const api::Pod& pod) {
  if (key.empty() || !leading_.load()) return;
  // An ended pod is not disrupted by its deletion (the pure rule: core::DeletionDisruption).
  std::optional<core::PodDisruption> d = core::DeletionDisruption(pod);
  if (!d) return;
  MutexLock lock(mu_);
  if (own_deletes_.contains(pod.meta.uid)) return;
  log_.Info("pod disrupted; it is recreated", {{"tfjob", key},
                                               {"pod", pod.meta.name},
                                               {"uid", pod.meta.uid},
                                               {"phase", std::string(api::PodPhaseName(pod.phase))},
                                               {"reason", d->reason},
                                               {"resource_version", pod.meta.resource_version}});
  notes_[key].try_emplace(pod.meta.uid, std::move(*d));
}

void DisruptionNotes::DeletionStarted(const std::string& key, const api::Pod& pod) {
  Note(key, pod);
}

void DisruptionNotes::PodGone(const std::string& key, const api::Pod& pod) {
  bool own = false;
  {
    MutexLock lock(mu_);
    own = own_deletes_.erase(pod.meta.uid) > 0;
  }
  // A pod last seen with a deletionTimestamp was noted then (or was ours).
  if (!own && !pod.meta.deletion_timestamp) Note(key, pod);
}

void DisruptionNotes::Deleting(const std::string& key, const std::string& uid) {
  MutexLock lock(mu_);
  own_deletes_.insert(uid);
  // Someone else was quicker (e.g. the pod GC of a pod a disruption left Failed, which this pass
  // counted already): the note must not count it a second time.
  if (auto it = notes_.find(key); it != notes_.end()) it->second.erase(uid);
}

void DisruptionNotes::DeleteDone(const std::string& uid) {
  MutexLock lock(mu_);
  own_deletes_.erase(uid);
}

std::vector<core::PodDisruption> DisruptionNotes::For(const std::string& key) const {
  std::vector<core::PodDisruption> out;
  MutexLock lock(mu_);
  if (auto it = notes_.find(key); it != notes_.end())
    for (const auto& [uid, d] : it->second) out.push_back(d);
  return out;
}

void DisruptionNotes::Consume(const std::string& key, const std::vector<core::PodDisruption>& read) {
  MutexLock lock(mu_);
  auto it = notes_.find(key);
  if (it == notes_.end()) return;
  for (const auto& d : read) it->second.erase(d.uid);
  if (it->second.empty()) notes_.erase(it);
}

void DisruptionNotes::Forget(const std::string& key) {
  MutexLock lock(mu_);
  notes_.erase(key);
}

bool DisruptionNotes::Has(const std::string& key) const {
  MutexLock lock(mu_);
  return notes_.contains(key);
}

}  // namespace tfjob::operator_
