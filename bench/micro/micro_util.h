#pragma once
// Shared pieces of the ember_micro benchmarks: aligned buffers with fixed random
// contents, the sizes every family is timed at, and registration of one
// benchmark per (kernel, ISA level, size) with bytes/s and items/s counters.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "base/buffer.h"
#include "base/isa.h"

namespace ember::bench {

// 4Ki elements stay in L1/L2 (per-call cost and peak compute); 1Mi f32 is 4 MiB
// per buffer, past this machine's per-core L2, so bandwidth-bound kernels show it.
inline constexpr int64_t kMicroSizes[] = {4096, 1 << 20};

inline std::string micro_size_tag(int64_t n) {
  return n >= (1 << 20) ? std::to_string(n >> 20) + "Mi" : std::to_string(n >> 10) + "Ki";
}

// n elements of T, 64-byte aligned, uniform in [lo, hi) from a fixed seed.
template <typename T>
class MicroBuffer {
 public:
  MicroBuffer(int64_t n, float lo, float hi) : buf_(static_cast<size_t>(n) * sizeof(T)) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(lo, hi);
    for (int64_t i = 0; i < n; ++i) data()[i] = static_cast<T>(dist(rng));
  }
  T* data() { return static_cast<T*>(buf_.data()); }

 private:
  AlignedBuffer buf_;
};

// Registers "family/kernel/isa/size". `setup` runs before the timed loop (it
// allocates and fills the buffers, so only the benchmarks selected by
// --benchmark_filter cost memory) and returns the body: one kernel call over n
// elements, which moves bytes_per_element * n bytes (read + written).
using MicroSetup = std::function<std::function<void()>()>;
inline void register_micro(const std::string& family, const std::string& kernel, Isa isa, int64_t n,
                           int64_t bytes_per_element, MicroSetup setup) {
  const std::string name = family + "/" + kernel + "/" + std::string(isa_name(isa)) + "/" + micro_size_tag(n);
  benchmark::RegisterBenchmark(name.c_str(), [n, bytes_per_element, setup](benchmark::State& state) {
    const std::function<void()> body = setup();
    for (auto _ : state) {
      body();
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * n * bytes_per_element);
    state.SetItemsProcessed(state.iterations() * n);
  });
}

// One per family file; micro_main.cpp calls them.
void register_convert_benchmarks();
void register_unary_benchmarks();
void register_binary_benchmarks();
void register_bandwidth_benchmarks();
void register_tokenizer_benchmarks();
void register_attention_benchmarks();

}  // namespace ember::bench
