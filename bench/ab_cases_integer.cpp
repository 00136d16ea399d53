// Integer GEMM cases: MatMulInteger and QLinearMatMul with u8 activations and
// constant s8 weights, at language-model projection shapes; DynamicQuantizeLinear
// of a prefill's activations.
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
      name = fmt::format("QLinearMatMul/u8s8/{}/{}x{}x{}", p.tag, m, p.k, p.n);
      cases.push_back({name,
                       fmt::format("QLinearMatMul of uint8[{},{}] by constant int8[{},{}], per-column scales", m,
                                   p.k, p.k, p.n),
                       [name, m, k = p.k, n = p.n] {
                         CaseBuilder c(name);
                         c.int_input("a", DType::kU8, {m, k}, 256);
                         c.weight("a_scale", DType::kF32, {}, 0.01f, 0.02f);
                         c.int_weight("a_zp", DType::kU8, {}, 256);
                         c.int_weight("w", DType::kI8, {k, n}, 128);
                         c.weight("w_scale", DType::kF32, {n}, 0.005f, 0.01f);
                         c.int_weight("w_zp", DType::kI8, {n}, 16);
                         c.weight("y_scale", DType::kF32, {}, 0.5f, 1.0f);
                         c.int_weight("y_zp", DType::kU8, {}, 256);
                         c.model().add_node("QLinearMatMul",
                                            {"a", "a_scale", "a_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp"}, {"y"});
                         c.output("y", DType::kU8);
                         return c.finish();
                       }});
    }
  }
  const std::string name = "DynamicQuantizeLinear/f32/128x2048";
  cases.push_back({name, "DynamicQuantizeLinear of float[128,2048]", [name] {
                     CaseBuilder c(name);
                     c.input("x", DType::kF32, {128, 2048});
                     c.model().add_node("DynamicQuantizeLinear", {"x"}, {"y", "y_scale", "y_zp"});
                     c.output("y", DType::kU8);
                     c.output("y_scale", DType::kF32);
                     c.output("y_zp", DType::kU8);
                     return c.finish();
                   }});
}

}  // namespace ember::bench
