#pragma once
// WritePool: a fixed number of threads that carry the controller's API writes, shared by every
// reconcile worker (--write-concurrency, docs/semantics.md D17). A reconcile hands it a batch of
// writes and waits for the batch (RunAll), so however many workers run and however large a job
// is, at most size() writes are in flight at once and no thread is started per request. Tasks
// run in the order they were queued (FIFO across callers). Submit queues one task without
// waiting, for a caller that tracks completion itself (a pipeline of writes).
// Thread-safe.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
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
  // Queues `task` (which must not throw). After Stop() it runs on the caller's thread instead.
  void Submit(std::function<void()> task) TFJOB_EXCLUDES(mu_);
  // Runs every task on the pool and returns when all of them have finished. An exception
  // thrown by a task is rethrown here (the first one) after the others finished.
  void RunAll(std::vector<std::function<void()>> tasks) TFJOB_EXCLUDES(mu_);
  // Runs what is queued, then joins the threads. Idempotent.
  void Stop() TFJOB_EXCLUDES(mu_);

 private:
  void Loop() TFJOB_EXCLUDES(mu_);

  const int size_;
  Mutex mu_;
  std::condition_variable_any cv_;  // a task was queued, or the stop
  std::deque<std::function<void()>> queue_ TFJOB_GUARDED_BY(mu_);
  bool stopping_ TFJOB_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
