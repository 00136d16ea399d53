// f16 and bf16 MatMul cases at language-model projection shapes.
#include "case_builder.h"

namespace ember::bench {

// A [m, k] times a constant W [k, n] of the same type, at Llama-3.2-1B's up
// projection, for a decode step and a prompt chunk.
void add_lowp_gemm_cases(std::vector<BenchCase>& cases) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (const Projection& p : llm_projections()) {
      if (p.tag != "llama1b.up") continue;
      for (int64_t m : {1, 128}) {
        std::string name = fmt::format("MatMul/{}/{}/{}x{}x{}", type_tag(dtype), p.tag, m, p.k, p.n);
        cases.push_back({name,
                         fmt::format("MatMul of {}[{},{}] by constant {}[{},{}]", dtype_name(dtype), m, p.k,
                                     dtype_name(dtype), p.k, p.n),
                         [name, dtype, m, k = p.k, n = p.n] {
                           CaseBuilder c(name);
                           c.input("a", dtype, {m, k}, -1.0f, 1.0f);
                           c.weight("w", dtype, {k, n});
                           c.model().add_node("MatMul", {"a", "w"}, {"y"});
                           c.output("y", dtype);
                           return c.finish(1, dot_tolerance(dtype, k, 0.25));
                         }});
      }
    }
  }
}

}  // namespace ember::bench
