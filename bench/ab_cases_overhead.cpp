// Per-run overhead cases: ops on one element, where a run is all framework
// (ORT's Run, the EP's Compute, Ember's executor) and no kernel work, and an
// eight-node chain, where that framework cost is paid per node by ORT and once
// per partition by an EP (or once per run by Ember).
#include "case_builder.h"

namespace ember::bench {

// Relu of one float (one input, one output) and Add of two (two inputs): the
// difference between them is the cost of one more input.
void add_overhead_cases(std::vector<BenchCase>& cases) {
  cases.push_back({"Overhead/Relu/f32/1", "Relu over float32[1]: per-run overhead with one input", [] {
                     CaseBuilder c("Overhead/Relu/f32/1");
                     c.input("x", DType::kF32, {1});
                     c.model().add_node("Relu", {"x"}, {"y"});
                     c.output("y", DType::kF32);
                     return c.finish();
                   }});
  cases.push_back({"Overhead/Add/f32/1", "Add of two float32[1]: per-run overhead with two inputs", [] {
                     CaseBuilder c("Overhead/Add/f32/1");
                     c.input("a", DType::kF32, {1});
                     c.input("b", DType::kF32, {1});
                     c.model().add_node("Add", {"a", "b"}, {"y"});
                     c.output("y", DType::kF32);
                     return c.finish();
                   }});
  for (int64_t n : {int64_t{1}, int64_t{4096}}) {
    const std::string name = n == 1 ? "Overhead/Chain8/f32/1" : "Chain8/f32/4Ki";
    cases.push_back({name, "Relu, Neg, Relu, ... (8 nodes) over float32[" + std::to_string(n) + "]", [name, n] {
                       CaseBuilder c(name);
                       c.input("x", DType::kF32, {n});
                       std::string prev = "x";
                       for (int i = 0; i < 8; ++i) {
                         const std::string out = i == 7 ? "y" : "t" + std::to_string(i);
                         c.model().add_node(i % 2 ? "Neg" : "Relu", {prev}, {out});
                         prev = out;
                       }
                       c.output("y", DType::kF32);
                       return c.finish();
                     }});
  }
}

}  // namespace ember::bench
