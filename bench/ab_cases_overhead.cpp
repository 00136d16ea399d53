// Per-run overhead cases: ops on one element, where a run is all framework
// (ORT's Run, the EP's Compute, Ember's executor) and no kernel work.
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
}

}  // namespace ember::bench
