#pragma once
// A Prometheus metrics registry: counters, gauges and histograms with labels, written in the
// text exposition format (version 0.0.4) for /metrics. Debian has no prometheus-cpp and the
// format is small (design.md section 5). Every registered metric is served (docs/semantics.md D12).
// Thread-safe: values are atomics; label lookups take a mutex.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/thread_annotations.h"

namespace tfjob::controller {

class Counter {
 public:
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Dec(double v = 1) { value_.fetch_sub(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(const std::vector<double>& bounds);
  void Observe(double v);
  // Cumulative counts per bound (+Inf last), sum and count, consistent enough for scraping.
  std::vector<uint64_t> cumulative_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Default latency buckets in seconds (as client_golang's DefBuckets, plus longer ones).
std::vector<double> DefaultBuckets();
std::vector<double> ExponentialBuckets(double start, double factor, int count);

enum class MetricType { kCounter, kGauge, kHistogram };

// One metric family with fixed label names; children are created on first use and live as
// long as the registry (references stay valid).
template <typename M>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> labels, std::vector<double> buckets = {})
      : name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)), buckets_(std::move(buckets)) {}

  // REQUIRES: values.size() == number of label names.
  M& With(const std::vector<std::string>& values) {
    MutexLock lock(mu_);
    auto it = children_.find(values);
    if (it == children_.end()) {
      std::unique_ptr<M> m;
      if constexpr (std::is_same_v<M, Histogram>)
        m = std::make_unique<M>(buckets_);
      else
        m = std::make_unique<M>();
      it = children_.emplace(values, std::move(m)).first;
    }
    return *it->second;
  }

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // Copy of (label values, child) pairs for exposition.
  std::vector<std::pair<std::vector<std::string>, const M*>> Children() const {
    MutexLock lock(mu_);
    std::vector<std::pair<std::vector<std::string>, const M*>> out;
    for (const auto& [k, v] : children_) out.emplace_back(k, v.get());
    return out;
  }

 private:
  const std::string name_, help_;
  const std::vector<std::string> labels_;
  const std::vector<double> buckets_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_ TFJOB_GUARDED_BY(mu_);
};

class Registry {
 public:
  // Registering the same name twice returns the existing family (REQUIRES: same kind).
  Family<Counter>& AddCounter(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help, std::vector<std::string> labels,
                                  std::vector<double> buckets = DefaultBuckets());
  // The text exposition format, families sorted by name.
  std::string Expose() const;

 private:
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Family<Counter>>> counters_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Family<Gauge>>> gauges_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Family<Histogram>>> histograms_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
