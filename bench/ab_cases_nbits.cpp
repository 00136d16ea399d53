// com.microsoft MatMulNBits cases: 4-bit, block 32, no zero points (the
// symmetric int4 exports of onnxruntime-genai's model builder), constant
// weights, at language-model projection shapes.
#include "case_builder.h"

namespace ember::bench {
namespace {

constexpr int64_t kBlock = 32;

// Weight bytes of one [k, n] 4-bit block-32 matrix: codes plus f32 scales.
int64_t q4_bytes(int64_t k, int64_t n) {
  const int64_t blocks = (k + kBlock - 1) / kBlock;
  return n * blocks * (kBlock / 2 + 4);
}

// A [m, k] times `copies` 4-bit W [k, n], each its own node and output.
void add_case(std::vector<BenchCase>& cases, const std::string& tag, int64_t m, int64_t k, int64_t n, int level,
              bool cold) {
  const int64_t copies = cold ? cold_copies(q4_bytes(k, n)) : 1;
  std::string name = fmt::format("MatMulNBits/q4b{}/{}/{}x{}x{}/acc{}/{}", kBlock, tag, m, k, n, level,
                                 cold ? "cold" : "hot");
  std::string what = fmt::format(
      "com.microsoft.MatMulNBits, 4-bit block {} constant weights ({:.1f} MiB), A float32[{},{}], N={}, "
      "accuracy_level {}{}",
      kBlock, q4_bytes(k, n) / 1048576.0, m, k, n, level,
      cold ? fmt::format(", {} copies with their own weights (cold)", copies) : "");
  cases.push_back({name, what, [name, m, k, n, level, copies] {
                     CaseBuilder c(name);
                     c.model().set_opset(kMs, 1);
                     const int64_t blocks = (k + kBlock - 1) / kBlock;
                     c.input("a", DType::kF32, {m, k}, -1.0f, 1.0f);
                     for (int64_t i = 0; i < copies; ++i) {
                       const std::string b = fmt::format("b{}", i), s = fmt::format("scales{}", i),
                                         y = fmt::format("y{}", i);
                       c.int_weight(b, DType::kU8, {n, blocks, kBlock / 2}, 256);
                       c.weight(s, DType::kF32, {n * blocks}, 0.001f, 0.01f);
                       c.model().add_node("MatMulNBits", {"a", b, s}, {y},
                                          {attr_int("K", k), attr_int("N", n), attr_int("bits", 4),
                                           attr_int("block_size", kBlock), attr_int("accuracy_level", level)},
                                          kMs);
                       c.output(y, DType::kF32);
                     }
                     // Terms are a (mean |a| 0.5) times code - 8 (mean 4) times scale (mean 0.0055).
                     return c.finish(copies, dot_tolerance(DType::kF32, k, 0.5 * 4 * 0.0055));
                   }});
}

}  // namespace

// Per model, the q+k+v, up and down projections: a decode step (M = 1) hot and
// cold at both accuracy levels; M = 16 cold; prompt chunks of 128 and 512 rows
// for the up projection. Then the 4096 x 4096 square of issue 4's table.
void add_nbits_cases(std::vector<BenchCase>& cases) {
  for (const Projection& p : llm_projections()) {
    for (int level : {0, 4}) {
      add_case(cases, p.tag, 1, p.k, p.n, level, false);
      add_case(cases, p.tag, 1, p.k, p.n, level, true);
    }
  }
  for (const Projection& p : llm_projections()) {
    if (!p.tag.ends_with(".up")) continue;
    for (int level : {0, 4}) {
      add_case(cases, p.tag, 16, p.k, p.n, level, true);
      add_case(cases, p.tag, 128, p.k, p.n, level, false);
      add_case(cases, p.tag, 512, p.k, p.n, level, false);
    }
  }
  for (int level : {0, 4}) {
    add_case(cases, "square", 1, 4096, 4096, level, false);
    add_case(cases, "square", 1, 4096, 4096, level, true);
    add_case(cases, "square", 128, 4096, 4096, level, false);
  }
}

}  // namespace ember::bench
