#include "controller/metrics.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tfjob::controller {
namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string LabelText(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + Escape(values[i]) + "\"";
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

template <typename F>
void Header(std::ostringstream& out, const F& f, const char* type) {
  out << "# HELP " << f.name() << " " << f.help() << "\n# TYPE " << f.name() << " " << type << "\n";
}

}  // namespace

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i] = 0;
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::cumulative_counts() const {
  std::vector<uint64_t> out;
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    out.push_back(total);
  }
  return out;
}

std::vector<double> DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> labels) {
  MutexLock lock(mu_);
  auto& f = counters_[name];
  if (!f) f = std::make_unique<Family<Counter>>(name, help, std::move(labels));
  return *f;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  MutexLock lock(mu_);
  auto& f = gauges_[name];
  if (!f) f = std::make_unique<Family<Gauge>>(name, help, std::move(labels));
  return *f;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<std::string> labels, std::vector<double> buckets) {
  MutexLock lock(mu_);
  auto& f = histograms_[name];
  if (!f) f = std::make_unique<Family<Histogram>>(name, help, std::move(labels), std::move(buckets));
  return *f;
}

std::string Registry::Expose() const {
  std::map<std::string, std::string> blocks;  // sorted by family name
  MutexLock lock(mu_);
  for (const auto& [name, f] : counters_) {
    std::ostringstream out;
    Header(out, *f, "counter");
    for (const auto& [values, c] : f->Children())
      out << name << LabelText(f->labels(), values) << " " << FormatValue(c->value()) << "\n";
    blocks[name] = out.str();
  }
  for (const auto& [name, f] : gauges_) {
    std::ostringstream out;
    Header(out, *f, "gauge");
    for (const auto& [values, g] : f->Children())
      out << name << LabelText(f->labels(), values) << " " << FormatValue(g->value()) << "\n";
    blocks[name] = out.str();
  }
  for (const auto& [name, f] : histograms_) {
    std::ostringstream out;
    Header(out, *f, "histogram");
    for (const auto& [values, h] : f->Children()) {
      auto counts = h->cumulative_counts();
      for (size_t i = 0; i < counts.size(); ++i) {
        std::string le = i < h->bounds().size() ? FormatValue(h->bounds()[i]) : "+Inf";
        out << name << "_bucket" << LabelText(f->labels(), values, "le=\"" + le + "\"") << " " << counts[i] << "\n";
      }
      out << name << "_sum" << LabelText(f->labels(), values) << " " << FormatValue(h->sum()) << "\n";
      out << name << "_count" << LabelText(f->labels(), values) << " " << h->count() << "\n";
    }
    blocks[name] = out.str();
  }
  std::string all;
  for (const auto& [_, b] : blocks) all += b;
  return all;
}

}  // namespace tfjob::controller
