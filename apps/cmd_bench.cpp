// `ember bench MODEL_DIR [-p 512] [-n 128] [-r 5] [--threads N] [--max-context N] [--json]`:
// prompt processing (pp) and token generation (tg) throughput of the generation
// engine, mean ± stddev over repetitions, as llama-bench reports them: pp is one
// prefill of p random tokens into an empty cache, tg is n single-token decode
// steps after a one-token prompt. Also the peak resident memory against the
// weights plus the KV cache (of max(p, n + 1) tokens unless --max-context).
// With --concurrency, the serving engine under synthetic traffic instead
// (bench_serving.cpp).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "base/cpu_features.h"
#include "base/cpu_topology.h"
#include "base/isa.h"
#include "base/process_memory.h"
#include "bench_serving.h"
#include "commands.h"
#include "genai_cli.h"
#include "threading/thread_pool.h"

namespace ember::cli {
namespace {

struct BenchArgs {
  ModelArgs model;
  int prompt = 512;
  int generate = 128;
  int repetitions = 5;
  uint64_t seed = 1234;
  bool json = false;
  int draft_tokens = 0;  // > 0: also the speculative verification test
  ServingBenchArgs serving;
};

struct Test {
  std::string name;  // pp512, tg128, tg128+k4
  int tokens = 0;
  std::vector<double> tokens_per_s;
  double mean() const {
    double s = 0;
    for (double v : tokens_per_s) s += v;
    return tokens_per_s.empty() ? 0.0 : s / static_cast<double>(tokens_per_s.size());
  }
  double stddev() const {  // sample standard deviation, as llama-bench
    if (tokens_per_s.size() < 2) return 0.0;
    double m = mean(), s = 0;
    for (double v : tokens_per_s) s += (v - m) * (v - m);
    return std::sqrt(s / static_cast<double>(tokens_per_s.size() - 1));
  }
};

// The checkout the binary was built in, when it still runs inside one.
std::string git_commit() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown";
  const std::string cmd = fmt::format("git -C '{}' rev-parse --short HEAD 2>/dev/null", exe.parent_path().string());
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return "unknown";
  char buf[64] = {};
  const bool read = fgets(buf, sizeof(buf), pipe) != nullptr;
  const int rc = pclose(pipe);
  std::string commit = read && rc == 0 ? std::string(buf) : "";
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r')) commit.pop_back();
  return commit.empty() ? "unknown" : commit;
}

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Result<double> run_prompt(genai::Generator& g, int p, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> token(0, g.config().vocab_size - 1);
  std::vector<int64_t> prompt(static_cast<size_t>(p));
  for (int64_t& t : prompt) t = token(rng);
  g.reset();
  const auto start = std::chrono::steady_clock::now();
  EMBER_RETURN_IF_ERROR(g.append(prompt));
  return p / seconds(start);
}

Result<double> run_generation(genai::Generator& g, int n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> token(0, g.config().vocab_size - 1);
  g.reset();
  const int64_t first[1] = {token(rng)};
  EMBER_RETURN_IF_ERROR(g.append(first));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    const int64_t next[1] = {genai::argmax(g.last_logits())};
    EMBER_RETURN_IF_ERROR(g.append(next));
  }
  return n / seconds(start);
}

// Speculative decoding's ceiling at k drafts (speculative.h): n tokens decoded
// in runs of 1 + k positions with every position's logits, as a verification
// run is when every draft is accepted (drafting itself not counted).
Result<double> run_verification(genai::Generator& g, int n, int k, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> token(0, g.config().vocab_size - 1);
  g.reset();
  const int64_t first[1] = {token(rng)};
  EMBER_RETURN_IF_ERROR(g.append(first));
  std::vector<int64_t> run;
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0; done < n;) {
    run.assign(1, genai::argmax(g.last_logits()));
    const int rows = std::min(k + 1, n - done);
    while (static_cast<int>(run.size()) < rows) run.push_back(token(rng));
    EMBER_RETURN_IF_ERROR(g.append(run, rows));
    done += rows;
  }
  return n / seconds(start);
}

struct Memory {
  int64_t peak_rss = 0, weights = 0, kv_cache = 0, kv_tokens = 0;
  double ratio() const { return static_cast<double>(peak_rss) / static_cast<double>(weights + kv_cache); }
};

void print_markdown(const BenchArgs& args, const genai::Generator& g, const std::vector<Test>& tests, int threads,
                    const std::string& commit, const Memory& m) {
  fmt::print("CPU: {} ({} physical cores), ISA {}, commit {}\n\n", cpu_features().brand, cpu_topology().physical_cores,
             isa_description(), commit);
  fmt::print("| model | type | layers | threads | KV cache | test | t/s |\n");
  fmt::print("| --- | --- | ---: | ---: | --- | ---: | ---: |\n");
  const std::string model = std::filesystem::path(args.model.model_dir).filename().string();
  for (const Test& t : tests) {
    fmt::print("| {} | {} | {} | {} | {} | {} | {:.2f} ± {:.2f} |\n", model, g.config().type,
               g.config().decoder.num_hidden_layers, threads, g.shares_kv_buffer() ? "shared" : "two buffers", t.name,
               t.mean(), t.stddev());
  }
  fmt::print("\npeak RSS {:.1f} MB = {:.3f} x (weights {:.1f} MB + KV cache {:.1f} MB for {} tokens)\n",
             static_cast<double>(m.peak_rss) / 1e6, m.ratio(), static_cast<double>(m.weights) / 1e6,
             static_cast<double>(m.kv_cache) / 1e6, m.kv_tokens);
}

void print_json(const BenchArgs& args, const genai::Generator& g, const std::vector<Test>& tests, int threads,
                const std::string& commit, const Memory& m) {
  nlohmann::json out = {{"model_dir", args.model.model_dir},
                        {"model_type", g.config().type},
                        {"layers", g.config().decoder.num_hidden_layers},
                        {"cpu", cpu_features().brand},
                        {"physical_cores", cpu_topology().physical_cores},
                        {"isa", isa_description()},
                        {"commit", commit},
                        {"threads", threads},
                        {"kv_cache", g.shares_kv_buffer() ? "shared" : "two buffers"},
                        {"repetitions", args.repetitions},
                        {"seed", args.seed},
                        {"memory",
                         {{"peak_rss_bytes", m.peak_rss},
                          {"weight_bytes", m.weights},
                          {"kv_cache_bytes", m.kv_cache},
                          {"kv_cache_tokens", m.kv_tokens},
                          {"peak_over_weights_and_kv", m.ratio()}}}};
  for (const Test& t : tests) {
    out["results"].push_back({{"test", t.name},
                              {"tokens", t.tokens},
                              {"avg_ts", t.mean()},
                              {"stddev_ts", t.stddev()},
                              {"samples_ts", t.tokens_per_s}});
  }
  fmt::print("{}\n", out.dump(2));
}

int bench_command(const BenchArgs& args) {
  auto fail = [](const Status& s) {
    fmt::print(stderr, "ember bench: {}\n", s.to_string());
    return 1;
  };
  if (!args.serving.concurrency.empty()) return bench_serving(args.model, args.serving, args.seed, args.json);
  if (args.prompt < 1 && args.generate < 1) return fail(invalid_argument("-p and -n are both 0: nothing to measure"));
  const int needed = std::max(args.prompt, args.generate + 1);
  if (args.model.max_context > 0 && args.model.max_context < needed) {
    return fail(invalid_argument("--max-context {} is below the {} tokens the tests need", args.model.max_context,
                                 needed));
  }
  auto generator = load_generator(args.model, args.model.max_context > 0 ? args.model.max_context : needed);
  if (!generator.is_ok()) return fail(generator.status());
  genai::Generator& g = **generator;
  const int config_threads = g.config().decoder.intra_op_num_threads;
  const int threads = args.model.threads > 0 ? args.model.threads
                      : config_threads > 0 ? config_threads
                                           : threading::default_num_threads();
  std::vector<Test> tests;
  if (args.prompt > 0) tests.push_back({fmt::format("pp{}", args.prompt), args.prompt, {}});
  if (args.generate > 0) tests.push_back({fmt::format("tg{}", args.generate), args.generate, {}});
  if (args.generate > 0 && args.draft_tokens > 0) {
    tests.push_back({fmt::format("tg{}+k{}", args.generate, args.draft_tokens), args.generate, {}});
  }
  std::mt19937_64 rng(args.seed);
  for (Test& t : tests) {
    const bool pp = t.name[0] == 'p';
    // One untimed run first, as llama-bench: first-touch of the weights and planned buffers.
    for (int r = -1; r < args.repetitions; ++r) {
      const bool verify = t.name.find("+k") != std::string::npos;
      auto rate = pp       ? run_prompt(g, t.tokens, rng)
                  : verify ? run_verification(g, t.tokens, args.draft_tokens, rng)
                           : run_generation(g, t.tokens, rng);
      if (!rate.is_ok()) return fail(rate.status().with_context(t.name + ": "));
      if (r >= 0) t.tokens_per_s.push_back(*rate);
    }
  }
  const std::string commit = git_commit();
  const Memory memory{peak_resident_bytes(), g.weight_bytes(), g.kv_cache_bytes(), g.max_length()};
  if (args.json) {
    print_json(args, g, tests, threads, commit, memory);
  } else {
    print_markdown(args, g, tests, threads, commit, memory);
  }
  return 0;
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  add_model_options(app, args->model, "Model folder: onnxruntime-genai (genai_config.json) or optimum / transformers.js (config.json)");
  app.add_option("-p,--n-prompt", args->prompt, "prompt tokens per prefill (0: skip)")->check(CLI::NonNegativeNumber);
  app.add_option("-n,--n-gen", args->generate, "tokens generated per repetition (0: skip)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-r,--repetitions", args->repetitions, "timed repetitions of each test")->check(CLI::PositiveNumber);
  app.add_option("--seed", args->seed, "seed of the random prompt tokens");
  app.add_option("--draft-tokens", args->draft_tokens,
                 "also tg<n>+k<K>: decoding in runs of 1 + K positions, as speculative decoding verifies K drafts "
                 "(the ceiling of its speed at K, every draft accepted)")
      ->check(CLI::Range(1, 64));
  app.add_flag("--json", args->json, "print one JSON object instead of a markdown table");
  add_serving_bench_options(app, args->serving);
  return [args] { return bench_command(*args); };
}

}  // namespace ember::cli
