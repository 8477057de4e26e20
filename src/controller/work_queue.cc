#include "controller/work_queue.h"

namespace tfjob::controller {

WorkQueue::WorkQueue(Clock& clock, std::string name, Registry* registry, RateLimiterOptions limits)
    : clock_(clock), limiter_(clock, limits) {
  if (registry != nullptr) {
    depth_ = &registry->AddGauge("workqueue_depth", "Current depth of workqueue", {"name"}).With({name});
    adds_ = &registry->AddCounter("workqueue_adds_total", "Total number of adds handled by workqueue", {"name"})
                 .With({name});
    retries_ =
        &registry->AddCounter("workqueue_retries_total", "Total number of retries handled by workqueue", {"name"})
             .With({name});
    auto buckets = ExponentialBuckets(1e-8, 10, 10);
    queue_duration_ =
        &registry
             ->AddHistogram("workqueue_queue_duration_seconds",
                            "How long in seconds an item stays in workqueue before being requested.", {"name"}, buckets)
             .With({name});
    work_duration_ =
        &registry
             ->AddHistogram("workqueue_work_duration_seconds",
                            "How long in seconds processing an item from workqueue takes.", {"name"}, buckets)
             .With({name});
  }
}

WorkQueue::~WorkQueue() {
  ShutDown();
  if (driver_.joinable()) {
    driver_.request_stop();
    delay_cv_.notify_all();
    driver_.join();
  }
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return;
  if (adds_) adds_->Inc();
  dirty_.insert(key);
  if (processing_.contains(key)) return;  // queued again by Done
  queue_.push_back(key);
  added_at_.emplace(key, clock_.SteadyNow());
  if (depth_) depth_->Inc();
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  MutexLock lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  MutexLock lock(mu_);
  if (shutting_down_) return;
  if (delay <= std::chrono::nanoseconds(0)) {
    AddLocked(key);
    return;
  }
  auto due = clock_.SteadyNow() + delay;
  auto [it, inserted] = delayed_.emplace(key, due);
  if (inserted) {
    due_order_.emplace(due, key);
  } else if (due < it->second) {  // keep the earliest
    due_order_.erase({it->second, key});
    it->second = due;
    due_order_.emplace(due, key);
  }
  ++delay_generation_;
  delay_cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  if (retries_) retries_->Inc();
  AddAfter(key, limiter_.When(key));
}

void WorkQueue::Forget(const std::string& key) {
  limiter_.Forget(key);
}

std::optional<std::string> WorkQueue::Get(std::stop_token stop) {
  MutexLock lock(mu_);
  cv_.wait(mu_, stop, [this]() TFJOB_REQUIRES(mu_) { return !queue_.empty() || shutting_down_; });
  if (queue_.empty()) return std::nullopt;  // shut down and drained, or stopped
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  if (depth_) depth_->Dec();
  auto now = clock_.SteadyNow();
  if (auto it = added_at_.find(key); it != added_at_.end()) {
    if (queue_duration_) queue_duration_->Observe(std::chrono::duration<double>(now - it->second).count());
    added_at_.erase(it);
  }
  started_at_[key] = now;
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  MutexLock lock(mu_);
  processing_.erase(key);
  if (auto it = started_at_.find(key); it != started_at_.end()) {
    if (work_duration_) work_duration_->Observe(std::chrono::duration<double>(clock_.SteadyNow() - it->second).count());
    started_at_.erase(it);
  }
  if (dirty_.contains(key)) {
    queue_.push_back(key);
    added_at_.emplace(key, clock_.SteadyNow());
    if (depth_) depth_->Inc();
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  MutexLock lock(mu_);
  shutting_down_ = true;
  ++delay_generation_;
  cv_.notify_all();
  delay_cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  MutexLock lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  MutexLock lock(mu_);
  return queue_.size();
}

size_t WorkQueue::DelayedLenForTesting() const {
  MutexLock lock(mu_);
  return delayed_.size();
}

std::optional<Clock::SteadyTime> WorkQueue::ProcessDue(Clock::SteadyTime now) {
  MutexLock lock(mu_);
  while (!due_order_.empty() && due_order_.begin()->first <= now) {
    auto node = due_order_.extract(due_order_.begin());
    delayed_.erase(node.value().second);
    AddLocked(node.value().second);
  }
  if (due_order_.empty()) return std::nullopt;
  return due_order_.begin()->first;
}

void WorkQueue::StartDelayDriver() {
  driver_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      auto next = ProcessDue(clock_.SteadyNow());
      MutexLock lock(mu_);
      if (shutting_down_) return;
      auto wait = next ? std::min<std::chrono::nanoseconds>(*next - clock_.SteadyNow(), std::chrono::seconds(1))
                       : std::chrono::nanoseconds(std::chrono::seconds(1));
      uint64_t seen = delay_generation_;
      if (wait > std::chrono::nanoseconds(0))
        delay_cv_.wait_for(mu_, stop, wait,
                           [&]() TFJOB_REQUIRES(mu_) { return delay_generation_ != seen || shutting_down_; });
    }
  });
}

}  // namespace tfjob::controller
