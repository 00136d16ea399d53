#pragma once
// Random small ONNX graphs for differential testing against ONNX Runtime: a chain
// of 1-6 nodes over random shapes (rank 0-4, size-1 and sometimes zero-size dims,
// broadcasting) and dtypes (f32, f64, f16, i32, i64, bool), with inputs to match.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"
#include "compare.h"

namespace ember::ortref {

inline constexpr const char* kRandomGraphOps[] = {
    "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Max", "Min", "Where", "Equal",
    "Less", "Cast", "Transpose", "Reshape", "Concat", "ReduceSum", "ReduceMean", "Softmax", "MatMul", "Gather",
    "Slice", "Unsqueeze", "Expand"};

struct RandomGraph {
  uint64_t seed = 0;
  int opset = 0;
  std::string model;        // serialized ModelProto
  std::string description;  // one line per node, with shapes, dtypes and attributes
  std::vector<std::pair<std::string, Tensor>> inputs;  // graph inputs with their values
  std::vector<std::string> outputs;
  // Per output: default_tolerance() of the coarsest float type the value was
  // computed in, with atol scaled to the magnitude of its intermediates.
  std::vector<Tolerance> tolerances;
  std::vector<std::string> op_types;  // in node order
};

// The same seed always gives the same graph and input values.
RandomGraph make_random_graph(uint64_t seed);

}  // namespace ember::ortref
