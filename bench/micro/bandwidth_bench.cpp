// The machine's DRAM read bandwidth, the ceiling of single-batch decode:
// tokens/s <= read bandwidth / weight bytes read per token. A 512 MiB buffer
// (16x the L3) is summed by the AVX-512 row-sum kernel, split across 1 or 2
// threads of the pool in 1 MiB ranges.
#include <memory>

#include "kernels/norm/row_ukernels.h"
#include "micro_util.h"
#include "threading/thread_pool.h"

namespace ember::bench {
namespace {

constexpr int64_t kFloats = int64_t{128} << 20;  // 512 MiB
constexpr int64_t kRangeFloats = int64_t{1} << 18;  // 1 MiB

}  // namespace

void register_bandwidth_benchmarks() {
  for (int threads : {1, 2}) {
    const std::string name = "bandwidth/read/threads:" + std::to_string(threads) + "/512Mi";
    benchmark::RegisterBenchmark(name.c_str(), [threads](benchmark::State& state) {
      auto buf = std::make_shared<MicroBuffer<float>>(kFloats, -1.0f, 1.0f);
      const kernels::RowTable& t = kernels::row_table();
      threading::ScopedThreadLimit limit(threads);
      for (auto _ : state) {
        threading::parallel_for(kFloats / kRangeFloats, 1, [&](int64_t begin, int64_t end) {
          float sum = 0;
          for (int64_t r = begin; r < end; ++r) sum += t.sum(buf->data() + r * kRangeFloats, kRangeFloats);
          benchmark::DoNotOptimize(sum);
        });
      }
      state.SetBytesProcessed(state.iterations() * kFloats * static_cast<int64_t>(sizeof(float)));
    })->UseRealTime()->MinTime(1.0);
  }
}

}  // namespace ember::bench
