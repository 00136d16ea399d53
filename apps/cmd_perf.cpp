// `ember perf MODEL [--threads N] [--iters N] [--warmup N] [--dim NAME=VALUE] [--sessions N]`
#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <charconv>
#include <chrono>
#include <thread>

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
  int sessions = 1;  // sessions of the model, each run by a thread of its own at the same time
  std::vector<std::string> dims;
};

// Per-run times (µs, sorted) of `iters` timed runs after `warmup`; empty on error (printed).
std::vector<double> time_runs(const runtime::Session& session, const std::vector<const Tensor*>& inputs, int warmup,
                              int iters) {
  std::vector<Tensor> outputs;
  std::vector<double> us;
  us.reserve(static_cast<size_t>(iters));
  for (int i = 0; i < warmup + iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = session.run(inputs, outputs);
    auto t1 = std::chrono::steady_clock::now();
    if (!st.is_ok()) {
      fmt::print(stderr, "ember perf: {}\n", st.to_string());
      return {};
    }
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us;
}

int perf_command(const PerfArgs& args) {
  runtime::SessionOptions options;
  options.num_threads = args.threads;
  std::vector<std::unique_ptr<runtime::Session>> sessions;
  for (int i = 0; i < args.sessions; ++i) {
    auto session = runtime::Session::load(args.model, options);
    if (!session.is_ok()) {
      fmt::print(stderr, "ember perf: {}\n", session.status().to_string());
      return 1;
    }
    sessions.push_back(std::move(*session));
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
  for (const runtime::IoInfo& info : sessions[0]->inputs()) {
    auto t = random_input(info, dims, rng);
    if (!t.is_ok()) {
      fmt::print(stderr, "ember perf: {}\n", t.status().to_string());
      return 1;
    }
    inputs.push_back(std::move(*t));
  }
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  // Every session's runs start together; runs_per_s counts all of them over the longest wall time.
  std::vector<std::vector<double>> us(sessions.size());
  std::vector<double> wall_s(sessions.size());
  std::barrier start(static_cast<std::ptrdiff_t>(sessions.size()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < sessions.size(); ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      auto t0 = std::chrono::steady_clock::now();
      us[i] = time_runs(*sessions[i], ptrs, args.warmup, args.iters);
      wall_s[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& u : us) {
    if (u.empty()) return 1;
  }
  auto pct = [](const std::vector<double>& u, double q) {
    return u[std::min(u.size() - 1, static_cast<size_t>(q * static_cast<double>(u.size())))];
  };
  fmt::print("model: {}  threads: {}  iters: {}  warmup: {}  sessions: {}\n", args.model,
             args.threads > 0 ? args.threads : threading::default_num_threads(), args.iters, args.warmup,
             args.sessions);
  for (size_t i = 0; i < us.size() && us.size() > 1; ++i) {
    fmt::print("session {}: p50_us={:.3f} p90_us={:.3f} min_us={:.3f}\n", i, pct(us[i], 0.5), pct(us[i], 0.9),
               us[i].front());
  }
  fmt::print("runs_per_s={:.1f}\n", static_cast<double>(args.sessions) * (args.warmup + args.iters) /
                                        *std::max_element(wall_s.begin(), wall_s.end()));
  std::vector<double> all;
  for (const auto& u : us) all.insert(all.end(), u.begin(), u.end());
  std::sort(all.begin(), all.end());
  fmt::print("p50_us={:.3f} p90_us={:.3f} min_us={:.3f}\n", pct(all, 0.5), pct(all, 0.9), all.front());
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
  app.add_option("--sessions", args->sessions,
                 "Sessions of the model run at once, each by its own thread (runs_per_s counts them all)")
      ->check(CLI::PositiveNumber);
  return [args]() { return perf_command(*args); };
}

}  // namespace ember::cli
