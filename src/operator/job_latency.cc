#include "operator/job_latency.h"

#include <chrono>
#include <cstdint>

namespace tfjob::operator_ {

JobLatency::JobLatency(controller::Registry& registry)
    : pods_created_(registry
                        .AddHistogram("tfjob_job_pods_created_seconds",
                                      "Time from a TFJob's creation until all its pods exist", {},
                                      controller::ExponentialBuckets(0.05, 2, 14))
                        .With({})),
      pods_running_(registry
                        .AddHistogram("tfjob_job_pods_running_seconds",
                                      "Time from a TFJob's creation until all its pods run", {},
                                      controller::ExponentialBuckets(0.05, 2, 14))
                        .With({})) {}

void JobLatency::Observe(const std::string& key, const api::TfJob& job, const std::vector<api::Pod>& pods,
                         size_t created_now, api::Time now) {
  if (!job.metadata.creation_timestamp) return;
  const int64_t total = api::TotalReplicas(job.spec);  // the job as cached: ReplicaSpecsByType reads it as defaulted
  if (total <= 0) return;
  int64_t existing = 0, running = 0;
  for (const auto& p : pods) {
    if (p.meta.controller_uid != job.metadata.uid || p.meta.deletion_timestamp) continue;
    ++existing;
    if (p.phase == api::PodPhase::kRunning) ++running;
  }
  const double age = std::chrono::duration<double>(now - *job.metadata.creation_timestamp).count();
  MutexLock lock(mu_);
  Seen& seen = seen_[key];
  if (seen.uid != job.metadata.uid) seen = Seen{job.metadata.uid};  // a new job under the same key
  if (!seen.created && existing + static_cast<int64_t>(created_now) >= total) {
    seen.created = true;
    pods_created_.Observe(age);
  }
  if (!seen.running && running >= total) {
    seen.running = true;
    pods_running_.Observe(age);
  }
}

void JobLatency::Forget(const std::string& key) {
  MutexLock lock(mu_);
  seen_.erase(key);
}

size_t JobLatency::remembered() const {
  MutexLock lock(mu_);
  return seen_.size();
}

}  // namespace tfjob::operator_
