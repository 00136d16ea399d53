#pragma once
// `ember bench MODEL_DIR --concurrency 1,4,8,16`: the serving engine under
// synthetic traffic (see bench_serving.cpp).
#include <cstdint>
#include <vector>

#include <CLI/CLI.hpp>

#include "genai_cli.h"

namespace ember::cli {

struct ServingBenchArgs {
  std::vector<int> concurrency;  // empty: the single-stream benchmark instead
  int requests = 0;              // per level; 0: 4 x the level, at least 8
  double rate = 0;               // Poisson arrivals per second; 0: a new request whenever one finishes
  std::vector<int> prompt = {128, 512};  // prompt tokens, uniform in [min, max]
  std::vector<int> gen = {64, 128};      // generated tokens, uniform in [min, max]
  int shared_prefix = 0;  // > 0: also time two requests that share a system prompt of this many tokens
  int64_t kv_tokens = 0;
  int block_size = 16;
  int64_t step_tokens = 128;  // EngineOptions::step_tokens
};

void add_serving_bench_options(CLI::App& app, ServingBenchArgs& args);
int bench_serving(const ModelArgs& model, const ServingBenchArgs& args, uint64_t seed, bool json);

}  // namespace ember::cli
