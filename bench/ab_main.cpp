// ember_ab: Ember against ONNX Runtime, in one process, interleaved trial by trial.
//
//   ember_ab [--filter REGEX] [--list]          the built-in suite of single-op models
//   ember_ab MODEL.onnx [--dim NAME=VALUE]...   one model, random inputs of its declared shapes
//   common: [--threads 1,2] [--rounds 5] [--iters N] [--round-ms 60] [--warmup-ms 20] [--warmup 3]
//           [--format md|json|csv] [--out FILE] [--via-ort-ep [--ep-spinning]]
//
// Each case is checked first (Ember's outputs against ORT's, compare.h
// tolerances), then timed: every trial runs Ember, ORT and a second ORT session
// (the null control) once each, in a shuffled order. With --via-ort-ep, "ours"
// is ORT with the Ember plugin EP appended (libember_ort_ep.so next to this
// binary, or EMBER_ORT_EP_LIBRARY). docs/benchmarks/README.md explains the columns.
// Exit status: 0; 1 when a case errs or nothing matches --filter; 2 when some
// outputs disagree (the table is still written).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "ab_cases.h"
#include "ab_report.h"
#include "ab_runner.h"
#include "ort_reference.h"

namespace ember::bench {
namespace {

struct Args {
  std::string model;
  std::vector<std::string> dims;
  int64_t decode_past = -1;
  std::vector<int> threads{1, 2};
  RunConfig config;
  std::string filter;
  bool list = false;
  std::string format = "md";
  std::string out;
};

Result<std::vector<std::pair<std::string, int64_t>>> parse_dims(const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    int64_t value = -1;
    const char* begin = spec.data() + (eq == std::string::npos ? spec.size() : eq + 1);
    const char* end = spec.data() + spec.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != end || value < 0)
      return invalid_argument("--dim '{}': expected NAME=VALUE with a non-negative integer VALUE", spec);
    dims.emplace_back(spec.substr(0, eq), value);
  }
  return dims;
}

// The cases to run: the one model, or the suite entries matching --filter.
Result<std::vector<BenchCase>> select_cases(const Args& args) {
  if (!args.model.empty()) {
    EMBER_ASSIGN_OR_RETURN(auto dims, parse_dims(args.dims));
    std::string name = args.model.substr(args.model.find_last_of('/') + 1);
    std::string path = args.model;
    if (args.decode_past >= 0) {
      const int64_t past = args.decode_past;
      name += fmt::format("/decode/past{}", past);
      return std::vector<BenchCase>{{name, path, [path, past] { return decoder_step_case(path, past); }}};
    }
    return std::vector<BenchCase>{{name, path, [path, dims] { return model_file_case(path, dims); }}};
  }
  std::regex re;
  try {
    re = std::regex(args.filter.empty() ? std::string(".*") : args.filter);
  } catch (const std::regex_error& e) {
    return invalid_argument("--filter '{}' is not a regular expression: {}", args.filter, e.what());
  }
  std::vector<BenchCase> cases;
  for (BenchCase& c : default_cases())
    if (std::regex_search(c.name, re)) cases.push_back(std::move(c));
  if (cases.empty()) return invalid_argument("no case matches --filter '{}' (see --list)", args.filter);
  return cases;
}

// EMBER_ORT_EP_LIBRARY, else libember_ort_ep.so in this executable's directory
// (where the build puts both).
std::string ep_library_path() {
  const char* from_env = std::getenv("EMBER_ORT_EP_LIBRARY");
  if (from_env && *from_env) return from_env;
  std::error_code ec;
  return (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "libember_ort_ep.so").string();
}

int run(const Args& args) {
  auto cases = select_cases(args);
  if (!cases.is_ok()) {
    fmt::print(stderr, "ember_ab: {}\n", cases.status().message());
    return 1;
  }
  if (args.list) {
    for (const BenchCase& c : *cases) fmt::print("{:<36} {}\n", c.name, c.what);
    return 0;
  }
  if (args.config.via_ort_ep) {
    const std::string path = ep_library_path();
    if (Status s = ortref::register_ep_library("ember", path); !s.is_ok()) {
      fmt::print(stderr, "ember_ab: --via-ort-ep: cannot register '{}': {}\n", path, s.message());
      return 1;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<CaseResult> results;
  bool failed = false, mismatched = false;
  for (size_t i = 0; i < cases->size(); ++i) {
    const BenchCase& c = (*cases)[i];
    auto model = c.build();
    if (!model.is_ok()) {
      fmt::print(stderr, "ember_ab: {}: {}\n", c.name, model.status().message());
      return 1;
    }
    for (int threads : args.threads) {
      CaseResult r = run_case(c.name, *model, threads, args.config);
      fmt::print(stderr, "[{}/{}] {} threads={}: {}", i + 1, cases->size(), c.name, threads, status_name(r.status));
      if (r.has_ort) fmt::print(stderr, ", ours/ORT {:.3f}, ORT/null {:.3f}", r.ratio.p50, r.null_ratio.p50);
      fmt::print(stderr, "\n");
      if (r.status == CaseStatus::kMismatch) fmt::print(stderr, "  MISMATCH: {}\n", r.detail);
      if (r.status == CaseStatus::kError) fmt::print(stderr, "  error: {}\n", r.detail);
      failed = failed || r.status == CaseStatus::kError;
      mismatched = mismatched || r.status == CaseStatus::kMismatch;
      results.push_back(std::move(r));
    }
  }
  const Format format = args.format == "json" ? Format::kJson : args.format == "csv" ? Format::kCsv : Format::kMarkdown;
  const std::string report = format_report(format, collect_header(args.threads, args.config), results);
  if (args.out.empty()) {
    fmt::print("{}", report);
  } else if (std::ofstream f(args.out); !(f << report)) {
    fmt::print(stderr, "ember_ab: cannot write '{}'\n", args.out);
    return 1;
  }
  fmt::print(stderr, "ember_ab: {} rows in {:.0f} s\n", results.size(),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (mismatched) fmt::print(stderr, "ember_ab: OUTPUTS DISAGREE with ONNX Runtime in some cases (MISMATCH above)\n");
  return mismatched ? 2 : failed ? 1 : 0;
}

}  // namespace
}  // namespace ember::bench

int main(int argc, char** argv) {
  ember::bench::Args args;
  CLI::App app{"Times Ember against ONNX Runtime, interleaved, with an ORT-vs-ORT null control. Without MODEL, runs "
               "the built-in suite of single-op models."};
  app.add_option("model", args.model, "An .onnx file to time instead of the suite")->check(CLI::ExistingFile);
  app.add_option("--dim", args.dims, "With MODEL: a symbolic input dimension, NAME=VALUE (default 1)");
  app.add_option("--decode-step", args.decode_past,
                 "With a decoder MODEL (onnxruntime-genai or optimum export): time one decode step after PAST tokens "
                 "(one new token, an all-ones attention mask, random past KV; GroupQueryAttention models write present "
                 "KV in place into a past buffer of PAST + 1 rows, as onnxruntime-genai does)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", args.threads, "Intra-op thread counts, each timed (Ember and ORT alike)")
      ->delimiter(',')
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--rounds", args.config.rounds, "Rounds; ratios are per round")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--iters", args.config.iters, "Trials per round (default: chosen from --round-ms)")
      ->check(CLI::PositiveNumber);
  app.add_option("--round-ms", args.config.round_ms, "Target length of a round when --iters is not given")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup-ms", args.config.warmup_ms, "Untimed trials before the first round, for this long")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--warmup", args.config.warmup_trials, "... and at least this many untimed trials")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--filter", args.filter, "Suite: run the cases whose name matches this regular expression");
  app.add_flag("--list", args.list, "Print the selected cases and exit");
  app.add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember({"md", "json", "csv"}))
      ->capture_default_str();
  app.add_option("--out", args.out, "Write the report to FILE instead of standard output");
  app.add_flag("--via-ort-ep", args.config.via_ort_ep,
               "Ours is ONNX Runtime with the Ember plugin EP appended (EP option num_threads = --threads), against "
               "plain ONNX Runtime");
  app.add_flag("--ep-spinning", args.config.ep_spinning,
               "With --via-ort-ep: keep ORT's intra-op spinning in the EP session (default: "
               "session.intra_op.allow_spinning=0 there)");
  CLI11_PARSE(app, argc, argv);
  return ember::bench::run(args);
}
