#pragma once
// Prometheus metrics for `ember serve`: counters, gauges and histograms
// rendered in Prometheus' text exposition format (version 0.0.4). Every
// method is thread-safe: request threads and the engine thread record, the
// /metrics handler renders.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ember::server {

// Cumulative buckets with upper bounds `bounds` (ascending) and +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // The `name` family's lines: _bucket{le=...}, _sum, _count.
  void render(const std::string& name, std::string& out) const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// A family of counters by one label set, rendered in sorted label order.
class LabeledCounter {
 public:
  void add(const std::string& labels, double value = 1);  // labels: `endpoint="chat",status="200"`
  void render(const std::string& name, std::string& out) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, double> values_;
};

// One metric family to render: its HELP text and TYPE, then its lines.
void render_header(const std::string& name, const std::string& type, const std::string& help, std::string& out);
void render_sample(const std::string& name, double value, std::string& out, const std::string& labels = {});

// Latency buckets in seconds, 1 ms to 60 s.
std::vector<double> latency_buckets();

}  // namespace ember::server
