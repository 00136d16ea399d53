// f32 MatMul and Gemm cases at language-model projection shapes.
#include "case_builder.h"

namespace ember::bench {
namespace {

constexpr int64_t kRows[] = {1, 16, 128, 512};  // a decode step, then prompt chunks

// A [m, k] times `copies` constant W [k, n], each its own node and output.
void add_matmul_case(std::vector<BenchCase>& cases, const std::string& tag, int64_t m, int64_t k, int64_t n,
                     bool cold) {
  const int64_t copies = cold ? cold_copies(k * n * 4) : 1;
  std::string name = fmt::format("MatMul/f32/{}/{}x{}x{}/{}", tag, m, k, n, cold ? "cold" : "hot");
  std::string what = fmt::format("MatMul of float32[{},{}] by constant float32[{},{}]{}", m, k, k, n,
                                 cold ? fmt::format(", {} copies with their own weights (cold)", copies) : "");
  cases.push_back({name, what, [name, m, k, n, copies] {
                     CaseBuilder c(name);
                     c.input("a", DType::kF32, {m, k}, -1.0f, 1.0f);
                     for (int64_t i = 0; i < copies; ++i) {
                       const std::string w = fmt::format("w{}", i), y = fmt::format("y{}", i);
                       c.weight(w, DType::kF32, {k, n});
                       c.model().add_node("MatMul", {"a", w}, {y});
                       c.output(y, DType::kF32);
                     }
                     return c.finish(copies, dot_tolerance(DType::kF32, k, 0.25));
                   }});
}

// A Linear layer as PyTorch exports it: Gemm with transB = 1 (W stored [n, k])
// and a bias C [n].
void add_linear_case(std::vector<BenchCase>& cases, const std::string& tag, int64_t m, int64_t k, int64_t n) {
  std::string name = fmt::format("Gemm/f32/{}/{}x{}x{}/transB/hot", tag, m, k, n);
  std::string what = fmt::format("Gemm of float32[{},{}] by constant float32[{},{}] transposed, plus bias [{}]", m, k,
                                 n, k, n);
  cases.push_back({name, what, [name, m, k, n] {
                     CaseBuilder c(name);
                     c.input("a", DType::kF32, {m, k}, -1.0f, 1.0f);
                     c.weight("w", DType::kF32, {n, k});
                     c.weight("bias", DType::kF32, {n});
                     c.model().add_node("Gemm", {"a", "w", "bias"}, {"y"}, {attr_int("transB", 1)});
                     c.output("y", DType::kF32);
                     return c.finish(1, dot_tolerance(DType::kF32, k, 0.25));
                   }});
}

// The FFN up projection as exporters write it: MatMul, bias Add, then
// com.microsoft Gelu; Ember runs the three as one FusedMatMul node.
void add_ffn_case(std::vector<BenchCase>& cases, const std::string& tag, int64_t m, int64_t k, int64_t n) {
  std::string name = fmt::format("MatMulAddGelu/f32/{}/{}x{}x{}/hot", tag, m, k, n);
  std::string what = fmt::format("Gelu(float32[{},{}] x constant float32[{},{}] + bias [{}])", m, k, k, n, n);
  cases.push_back({name, what, [name, m, k, n] {
                     CaseBuilder c(name);
                     c.input("a", DType::kF32, {m, k}, -1.0f, 1.0f);
                     c.weight("w", DType::kF32, {k, n});
                     c.weight("bias", DType::kF32, {n});
                     c.model().set_opset(kMs, 1);
                     c.model().add_node("MatMul", {"a", "w"}, {"mm"});
                     c.model().add_node("Add", {"mm", "bias"}, {"s"});
                     c.model().add_node("Gelu", {"s"}, {"y"}, {}, kMs);
                     c.output("y", DType::kF32);
                     return c.finish(1, dot_tolerance(DType::kF32, k, 0.25));
                   }});
}

}  // namespace

// The up projection of each model at every row count, hot (one weight, resident
// in L3 when it fits) and, where weights dominate (M <= 16) and fit in L3, also
// cold; then the two shapes of issue 4's reference table.
void add_gemm_cases(std::vector<BenchCase>& cases) {
  for (const Projection& p : llm_projections()) {
    if (!p.tag.ends_with(".up")) continue;
    for (int64_t m : kRows) {
      add_matmul_case(cases, p.tag, m, p.k, p.n, false);
      if (m <= 16 && cold_copies(p.k * p.n * 4) > 1) add_matmul_case(cases, p.tag, m, p.k, p.n, true);
    }
  }
  add_matmul_case(cases, "square", 1, 4096, 4096, false);
  add_matmul_case(cases, "square", 128, 2048, 2048, false);
  for (int64_t m : {1, 128}) add_linear_case(cases, "qwen0.5b.up", m, 896, 4864);
  for (const Projection& p : llm_projections()) {
    if (p.tag == "llama1b.up") add_ffn_case(cases, p.tag, 128, p.k, p.n);
  }
}

}  // namespace ember::bench
