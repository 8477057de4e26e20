#pragma once
// WritePool: a fixed number of threads that carry the controller's API writes, shared by every
// reconcile worker (--write-concurrency, docs/semantics.md D17). A reconcile hands it a batch of
// writes and waits for the batch (RunAll), so however many workers run and however large a job
// is, at most size() writes are in flight at once and no thread is started per request. Submit
// queues one task without waiting, for a caller that tracks completion itself (the controller's
// pipeline of creates, operator/plan_applier.h).
// Fair between lanes (a lane is a job's key): tasks of one lane run in the order they were
// queued, and free threads take the lanes with queued tasks in turn, so a job's 5 creates queued
// behind a 500-worker job's 256 start after at most one task of that job per thread, not after
// all of them (docs/semantics.md D17). Thread-safe.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"

namespace tfjob::controller {

class WritePool {
 public:
  // REQUIRES: threads >= 1.
  explicit WritePool(int threads);
  ~WritePool();
  WritePool(const WritePool&) = delete;
  WritePool& operator=(const WritePool&) = delete;

  int size() const { return size_; }
  // Queues `task` (which must not throw) in `lane`. After Stop() it runs on the caller's thread
  // instead.
  void Submit(std::function<void()> task, const std::string& lane = "") TFJOB_EXCLUDES(mu_);
  // Runs every task on the pool (in `lane`) and returns when all of them have finished. An
  // exception thrown by a task is rethrown here (the first one) after the others finished.
  void RunAll(std::vector<std::function<void()>> tasks, const std::string& lane = "") TFJOB_EXCLUDES(mu_);
  // Stop() has begun: a caller with more work to queue gives it up instead.
  bool Stopping() const TFJOB_EXCLUDES(mu_);
  // Tasks queued and not yet started (for tests and metrics).
  size_t Queued() const TFJOB_EXCLUDES(mu_);
  // Runs what is queued, then joins the threads. Idempotent.
  void Stop() TFJOB_EXCLUDES(mu_);

 private:
  void Loop() TFJOB_EXCLUDES(mu_);

  const int size_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;  // a task was queued, or the stop
  // Each lane's tasks, and the lanes that have some, in the order threads take them.
  std::map<std::string, std::deque<std::function<void()>>> lanes_ TFJOB_GUARDED_BY(mu_);
  std::deque<std::string> turn_ TFJOB_GUARDED_BY(mu_);
  size_t queued_ TFJOB_GUARDED_BY(mu_) = 0;
  bool stopping_ TFJOB_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
