// f16 and bf16 MatMul cases at language-model projection shapes.
#include "case_builder.h"

namespace ember::bench {
namespace {

// A [m, k] times `copies` constant W [k, n] of the same type, each its own node.
void add_lowp_case(std::vector<BenchCase>& cases, DType dtype, const Projection& p, int64_t m, bool cold) {
  const int64_t copies = cold ? cold_copies(p.k * p.n * 2) : 1;
  std::string name =
      fmt::format("MatMul/{}/{}/{}x{}x{}/{}", type_tag(dtype), p.tag, m, p.k, p.n, cold ? "cold" : "hot");
  std::string what = fmt::format("MatMul of {}[{},{}] by constant {}[{},{}]{}", dtype_name(dtype), m, p.k,
                                 dtype_name(dtype), p.k, p.n,
                                 cold ? fmt::format(", {} copies with their own weights (cold)", copies) : "");
  cases.push_back({name, what, [name, dtype, m, k = p.k, n = p.n, copies] {
                     CaseBuilder c(name);
                     c.input("a", dtype, {m, k}, -1.0f, 1.0f);
                     for (int64_t i = 0; i < copies; ++i) {
                       const std::string w = fmt::format("w{}", i), y = fmt::format("y{}", i);
                       c.weight(w, dtype, {k, n});
                       c.model().add_node("MatMul", {"a", w}, {y});
                       c.output(y, dtype);
                     }
                     return c.finish(copies, dot_tolerance(dtype, k, 0.25));
                   }});
}

}  // namespace

// Llama-3.2-1B's up projection: a decode step hot and cold, prompt chunks hot.
void add_lowp_gemm_cases(std::vector<BenchCase>& cases) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (const Projection& p : llm_projections()) {
      if (p.tag != "llama1b.up") continue;
      for (int64_t m : {1, 16, 128}) add_lowp_case(cases, dtype, p, m, false);
      if (cold_copies(p.k * p.n * 2) > 1) add_lowp_case(cases, dtype, p, 1, true);
    }
  }
}

}  // namespace ember::bench
