#include "controller/write_pool.h"

#include <algorithm>
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
      auto [it, added] = lanes_.try_emplace(lane, Lane{next_age_, {}, 0});
      if (added) by_age_.emplace(next_age_++, lane);
      it->second.tasks.push_back(std::move(task));
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
    Submit(
        [batch, task = std::move(task)] {
          std::exception_ptr error;
          try {
            task();
          } catch (...) {
            error = std::current_exception();
          }
          MutexLock lock(batch->mu);
          if (error && !batch->error) batch->error = error;
          if (--batch->remaining == 0) batch->done.notify_all();
        },
        lane);
  }
  std::exception_ptr error;
  {
    MutexLock lock(batch->mu);
    while (batch->remaining > 0) batch->done.wait(batch->mu);
    error = batch->error;
  }
  if (error) std::rethrow_exception(error);
}

void WritePool::WaitIdle() const {
  MutexLock lock(mu_);
  while (!lanes_.empty()) idle_cv_.wait(mu_);
}

void WritePool::Stop() {
  std::vector<std::jthread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
    cv_.notify_all();
  }
  for (auto& t : threads) t.join();
}

std::function<void()> WritePool::TakeLocked(std::string& lane) {
  const int share = std::max(1, size_ / 2);
  Lane* chosen = nullptr;
  for (const auto& [age, name] : by_age_) {
    Lane& l = lanes_.at(name);
    if (l.tasks.empty()) continue;
    if (l.running < share) {
      chosen = &l;
      lane = name;
      break;
    }
    if (chosen == nullptr) {  // over its share: only if no lane under its share has work
      chosen = &l;
      lane = name;
    }
  }
  std::function<void()> task = std::move(chosen->tasks.front());
  chosen->tasks.pop_front();
  ++chosen->running;
  --queued_;
  return task;
}

void WritePool::Loop() {
  for (;;) {
    std::function<void()> task;
    std::string lane;
    {
      MutexLock lock(mu_);
      while (queued_ == 0 && !stopping_) cv_.wait(mu_);
      if (queued_ == 0) return;  // stopping, and everything queued has run
      task = TakeLocked(lane);
    }
    task();
    MutexLock lock(mu_);
    auto it = lanes_.find(lane);
    if (--it->second.running == 0 && it->second.tasks.empty()) {
      by_age_.erase(it->second.age);
      lanes_.erase(it);
      if (lanes_.empty()) idle_cv_.notify_all();
    }
  }
}

}  // namespace tfjob::controller
