#include "server/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ember::server {
namespace {

// Prometheus' number syntax: +Inf, -Inf, NaN, else the shortest round-tripping decimal.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t bucket = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  std::lock_guard lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  std::lock_guard lock(mutex_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, le, cumulative);
  }
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, number(sum_), name, count_);
}

void LabeledCounter::add(const std::string& labels, double value) {
  std::lock_guard lock(mutex_);
  values_[labels] += value;
}

void LabeledCounter::render(const std::string& name, std::string& out) const {
  std::lock_guard lock(mutex_);
  for (const auto& [labels, value] : values_) out += fmt::format("{}{{{}}} {}\n", name, labels, number(value));
}

void render_header(const std::string& name, const std::string& type, const std::string& help, std::string& out) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void render_sample(const std::string& name, double value, std::string& out, const std::string& labels) {
  if (labels.empty()) {
    out += fmt::format("{} {}\n", name, number(value));
  } else {
    out += fmt::format("{}{{{}}} {}\n", name, labels, number(value));
  }
}

std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10, 20, 30, 60};
}

}  // namespace ember::server
