// com.microsoft MatMulNBits cases.
#include "case_builder.h"

namespace ember::bench {

// com.microsoft MatMulNBits, 4-bit, block 32, no zero points, A [m, k]: the
// decode-step projections of Qwen2.5-0.5B (896 x 4864 FFN), Llama-3.2-1B
// (2048 x 8192 FFN) and a 4096 x 4096 square, at accuracy_level 0 (float
// compute in both). accuracy_level 4 cases come with Ember's int8-activation
// path: ORT computes that level with int8 activations, so an f32 answer
// differs from it by more than the comparison allows.
void add_nbits_cases(std::vector<BenchCase>& cases) {
  constexpr int64_t kBlock = 32;
  constexpr std::pair<int64_t, int64_t> kShapes[] = {{896, 4864}, {2048, 8192}, {4096, 4096}};
  for (auto [k, n] : kShapes) {
    for (int64_t level : {0}) {
      const int64_t m = 1;
      std::string name = fmt::format("MatMulNBits/q4b{}/{}x{}x{}/acc{}", kBlock, m, k, n, level);
      cases.push_back({name,
                       fmt::format("com.microsoft.MatMulNBits, 4-bit block {} constant weights, A float32[{},{}], "
                                   "N={}, accuracy_level {}",
                                   kBlock, m, k, n, level),
                       [k, n, m, level, name] {
                         CaseBuilder c(name);
                         c.model().set_opset(kMs, 1);
                         const int64_t blocks = (k + kBlock - 1) / kBlock;
                         c.input("a", DType::kF32, {m, k}, -1.0f, 1.0f);
                         c.int_weight("b", DType::kU8, {n, blocks, kBlock / 2}, 256);
                         c.weight("scales", DType::kF32, {n * blocks}, 0.001f, 0.01f);
                         c.model().add_node("MatMulNBits", {"a", "b", "scales"}, {"y"},
                                            {attr_int("K", k), attr_int("N", n), attr_int("bits", 4),
                                             attr_int("block_size", kBlock), attr_int("accuracy_level", level)},
                                            kMs);
                         c.output("y", DType::kF32);
                         return c.finish();
                       }});
    }
  }
}

}  // namespace ember::bench
