// `ember perf MODEL [--threads N] [--iters N] [--warmup N] [--dim NAME=VALUE]`
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include "commands.h"
#include "tensor_io.h"
#include "threading/thread_pool.h"

namespace ember::cli {
namespace {

struct PerfArgs {
  std::string model;
  int threads = 0;
  int iters = 1000;
  int warmup = 100;
  std::vector<std::string> dims;
};

int perf_command(const PerfArgs& args) {
  runtime::SessionOptions options;
  options.num_threads = args.threads;
  auto session = runtime::Session::load(args.model, options);
  if (!session.is_ok()) {
    fmt::print(stderr, "ember perf: {}\n", session.status().to_string());
    return 1;
  }
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const std::string& spec : args.dims) {
    auto kv = split_assignment(spec, "--dim");
    if (!kv.is_ok()) {
      fmt::print(stderr, "ember perf: {}\n", kv.status().to_string());
      return 1;
    }
    int64_t value = 0;
    auto [end, ec] = std::from_chars(kv->second.data(), kv->second.data() + kv->second.size(), value);
    if (ec != std::errc() || end != kv->second.data() + kv->second.size() || value < 0) {
      fmt::print(stderr, "ember perf: --dim {}: '{}' is not a non-negative integer\n", kv->first, kv->second);
      return 1;
    }
    dims.emplace_back(kv->first, value);
  }
  std::mt19937 rng(1234);
  std::vector<Tensor> inputs;
  for (const runtime::IoInfo& info : (*session)->inputs()) {
    auto t = random_input(info, dims, rng);
    if (!t.is_ok()) {
      fmt::print(stderr, "ember perf: {}\n", t.status().to_string());
      return 1;
    }
    inputs.push_back(std::move(*t));
  }
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  std::vector<Tensor> outputs;
  std::vector<double> us;
  us.reserve(static_cast<size_t>(args.iters));
  for (int i = 0; i < args.warmup + args.iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = (*session)->run(ptrs, outputs);
    auto t1 = std::chrono::steady_clock::now();
    if (!st.is_ok()) {
      fmt::print(stderr, "ember perf: {}\n", st.to_string());
      return 1;
    }
    if (i >= args.warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())))]; };
  fmt::print("model: {}  threads: {}  iters: {}  warmup: {}\n", args.model,
             args.threads > 0 ? args.threads : threading::default_num_threads(), args.iters, args.warmup);
  fmt::print("p50_us={:.3f} p90_us={:.3f} min_us={:.3f}\n", pct(0.5), pct(0.9), us.front());
  return 0;
}

}  // namespace

Command add_perf(CLI::App& app) {
  auto args = std::make_shared<PerfArgs>();
  app.add_option("model", args->model, "Path of the .onnx file")->required();
  app.add_option("--threads", args->threads, "Threads per run (default: EMBER_NUM_THREADS, else physical cores)")
      ->check(CLI::PositiveNumber);
  app.add_option("--iters", args->iters, "Timed runs")->check(CLI::PositiveNumber);
  app.add_option("--warmup", args->warmup, "Untimed runs first")->check(CLI::NonNegativeNumber);
  app.add_option("--dim", args->dims, "NAME=VALUE for a symbolic input dimension");
  return [args]() { return perf_command(*args); };
}

}  // namespace ember::cli
