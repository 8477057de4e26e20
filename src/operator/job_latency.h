#pragma once
// JobLatency: the TfJobController's per-job latency metrics (docs/semantics.md D12): the time from
// a TFJob's creation until all its pods exist (tfjob_job_pods_created_seconds) and until all run
// (tfjob_job_pods_running_seconds). Each job is observed once per milestone; a job re-created
// under the same key (a new uid) is observed again. Thread-safe: the reconcile workers call it
// concurrently (one job at a time each, by the queue) and the job informer's delete handler
// forgets through TfJobController::ForgetJob.

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/pod.h"
#include "api/tfjob.h"
#include "api/time.h"
#include "common/thread_annotations.h"
#include "controller/metrics.h"

namespace tfjob::operator_ {

class JobLatency {
 public:
  // Registers the two histograms in `registry`.
  explicit JobLatency(controller::Registry& registry);

  // After a pass of job `key`: `pods` as the cache shows them, `created_now` the pods the pass
  // is creating, `now` the pass's time.
  void Observe(const std::string& key, const api::TfJob& job, const std::vector<api::Pod>& pods, size_t created_now,
               api::Time now) TFJOB_EXCLUDES(mu_);
  // The job is gone: what was observed of it is forgotten.
  void Forget(const std::string& key) TFJOB_EXCLUDES(mu_);
  // Jobs with something remembered (for tests).
  size_t remembered() const TFJOB_EXCLUDES(mu_);

 private:
  struct Seen {
    std::string uid;
    bool created = false;
    bool running = false;
  };
  controller::Histogram& pods_created_;
  controller::Histogram& pods_running_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Seen> seen_ TFJOB_GUARDED_BY(mu_);  // by job key
};

}  // namespace tfjob::operator_
