#pragma once
// WritePool: a fixed number of threads that carry the controller's API writes, shared by every
// reconcile worker (--write-concurrency, docs/semantics.md D17). A reconcile hands it a batch of
// writes and waits for the batch (RunAll), so however many workers run and however large a job
// is, at most size() writes are in flight at once and no thread is started per request. Submit
// queues one task without waiting, for a caller that tracks completion itself (the controller's
// pipeline of creates, operator/plan_applier.h).
// Fair between lanes (a lane is a job's key; docs/semantics.md D17): tasks of one lane run in
// the order they were queued; a free thread takes the oldest lane (the first to have had work
// queued, until it has none queued or running) that runs fewer than half the threads, else the
// oldest lane with work. So of a burst of jobs the first is finished first (each job's next
// creates go before younger jobs' work), and a small job's creates queued behind a
// 500-worker job's 256 get the next free thread instead of waiting for all of them; no thread
// idles while work is queued. Thread-safe.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
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
  // Blocks until no task is queued or running: the drain hook of tests (a task queued by a
  // running task is waited for too). Never call it from a task.
  void WaitIdle() const TFJOB_EXCLUDES(mu_);
  // Runs what is queued, then joins the threads. Idempotent.
  void Stop() TFJOB_EXCLUDES(mu_);

 private:
  void Loop() TFJOB_EXCLUDES(mu_);

  const int size_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;  // a task was queued, or the stop
  mutable std::condition_variable_any idle_cv_;  // lanes_ became empty
  struct Lane {
    uint64_t age;  // order of arrival
    std::deque<std::function<void()>> tasks;
    int running = 0;
  };
  // The next task to run (REQUIRES: queued_ > 0): its lane's running count is raised.
  std::function<void()> TakeLocked(std::string& lane) TFJOB_REQUIRES(mu_);
  // Lanes with work queued or running, by name and by age.
  std::map<std::string, Lane> lanes_ TFJOB_GUARDED_BY(mu_);
  std::map<uint64_t, std::string> by_age_ TFJOB_GUARDED_BY(mu_);
  uint64_t next_age_ TFJOB_GUARDED_BY(mu_) = 0;
  size_t queued_ TFJOB_GUARDED_BY(mu_) = 0;
  bool stopping_ TFJOB_GUARDED_BY(mu_) = false;
  std::vector<std::jthread> threads_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
