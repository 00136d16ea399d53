#pragma once
// ember_ab's output: a header describing the run, then one row per case and
// thread count, as a markdown table, JSON or CSV.
#include <string>
#include <vector>

#include "ab_runner.h"

namespace ember::bench {

struct RunHeader {
  std::string commit;       // git rev-parse of the tree ember_ab was built in, "+dirty" if modified; or "unknown"
  std::string cpu;          // CPUID brand string
  std::string isa;          // active_isa(): what Ember's kernels use in this run
  std::string ort_version;  // of the loaded libonnxruntime
  std::string date;         // UTC, ISO 8601
  std::vector<int> threads;
  RunConfig config;
};

RunHeader collect_header(const std::vector<int>& threads, const RunConfig& config);

enum class Format { kMarkdown, kJson, kCsv };

std::string format_report(Format format, const RunHeader& header, const std::vector<CaseResult>& results);

}  // namespace ember::bench
