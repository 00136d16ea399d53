// Integer GEMM cases: MatMulInteger and QLinearMatMul with u8 activations and
// constant s8 weights, at language-model projection shapes.
#include "case_builder.h"

namespace ember::bench {

void add_integer_cases(std::vector<BenchCase>& cases) {
  for (const Projection& p : llm_projections()) {
    if (p.tag != "llama1b.up") continue;
    for (int64_t m : {1, 128}) {
      std::string name = fmt::format("MatMulInteger/u8s8/{}/{}x{}x{}", p.tag, m, p.k, p.n);
      cases.push_back({name,
                       fmt::format("MatMulInteger of uint8[{},{}] (constant zero point) by constant int8[{},{}]", m, p.k,
                                   p.k, p.n),
                       [name, m, k = p.k, n = p.n] {
                         CaseBuilder c(name);
                         c.int_input("a", DType::kU8, {m, k}, 256);
                         c.int_weight("w", DType::kI8, {k, n}, 128);
                         c.int_weight("a_zp", DType::kU8, {}, 256);
                         c.model().add_node("MatMulInteger", {"a", "w", "a_zp"}, {"y"});
                         c.output("y", DType::kI32);
                         return c.finish();
                       }});
    }
  }
}

}  // namespace ember::bench
