#include "controller/write_pool.h"

#include <condition_variable>
#include <exception>
#include <memory>

namespace tfjob::controller {

WritePool::WritePool(int threads) : size_(threads < 1 ? 1 : threads) {
  MutexLock lock(mu_);
  for (int i = 0; i < size_; ++i) threads_.emplace_back([this] { Loop(); });
}

WritePool::~WritePool() {
  Stop();
}

void WritePool::Submit(std::function<void()> task, const std::string& lane) {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      auto& tasks = lanes_[lane];
      if (tasks.empty()) turn_.push_back(lane);
      tasks.push_back(std::move(task));
      ++queued_;
      cv_.notify_one();
      return;
    }
  }
  task();
}

bool WritePool::Stopping() const {
  MutexLock lock(mu_);
  return stopping_;
}

size_t WritePool::Queued() const {
  MutexLock lock(mu_);
  return queued_;
}

namespace {
// What RunAll waits for: the tasks of one batch still running, and the first exception.
struct Batch {
  Mutex mu;
  std::condition_variable_any done;
  size_t remaining TFJOB_GUARDED_BY(mu) = 0;
  std::exception_ptr error TFJOB_GUARDED_BY(mu);
};
}  // namespace

void WritePool::RunAll(std::vector<std::function<void()>> tasks, const std::string& lane) {
  if (tasks.empty()) return;
  auto batch = std::make_shared<Batch>();
  {
    MutexLock lock(batch->mu);
    batch->remaining = tasks.size();
  }
  for (auto& task : tasks) {
    Submit([batch, task = std::move(task)] {
      std::exception_ptr error;
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
      MutexLock lock(batch->mu);
      if (error && !batch->error) batch->error = error;
      if (--batch->remaining == 0) batch->done.notify_all();
    }, lane);
  }
  std::exception_ptr error;
  {
    MutexLock lock(batch->mu);
    while (batch->remaining > 0) batch->done.wait(batch->mu);
    error = batch->error;
  }
  if (error) std::rethrow_exception(error);
}

void WritePool::Stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
    cv_.notify_all();
  }
  for (auto& t : threads) t.join();
}

void WritePool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      while (turn_.empty() && !stopping_) cv_.wait(mu_);
      if (turn_.empty()) return;  // stopping, and everything queued has run
      // The lane whose turn it is gives one task, and goes to the back of the line if it has more.
      std::string lane = std::move(turn_.front());
      turn_.pop_front();
      auto it = lanes_.find(lane);
      task = std::move(it->second.front());
      it->second.pop_front();
      --queued_;
      if (it->second.empty())
        lanes_.erase(it);
      else
        turn_.push_back(std::move(lane));
    }
    task();
  }
}

}  // namespace tfjob::controller
