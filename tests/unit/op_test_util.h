#pragma once
// Builds single nodes and runs them through the kernel registry, for op tests.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "ir/graph.h"
#include "kernels/registry.h"

namespace ember::test {

template <typename T>
Tensor make_tensor(Shape shape, std::vector<T> values) {
  Tensor t = Tensor::allocate(dtype_of<T>, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel()) << "make_tensor: value count does not match shape";
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) t.data_as<T>()[i] = values[i];
  return t;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), dtype_of<T>);
  return std::vector<T>(t.data_as<T>(), t.data_as<T>() + t.numel());
}

inline ir::Attribute attr_int(std::string name, int64_t v) {
  ir::Attribute a; a.name = std::move(name); a.type = ir::AttrType::kInt; a.i = v; return a;
}
inline ir::Attribute attr_float(std::string name, float v) {
  ir::Attribute a; a.name = std::move(name); a.type = ir::AttrType::kFloat; a.f = v; return a;
}
inline ir::Attribute attr_string(std::string name, std::string v) {
  ir::Attribute a; a.name = std::move(name); a.type = ir::AttrType::kString; a.s = std::move(v); return a;
}
inline ir::Attribute attr_ints(std::string name, std::vector<int64_t> v) {
  ir::Attribute a; a.name = std::move(name); a.type = ir::AttrType::kInts; a.ints = std::move(v); return a;
}
inline ir::Attribute attr_floats(std::string name, std::vector<float> v) {
  ir::Attribute a; a.name = std::move(name); a.type = ir::AttrType::kFloats; a.floats = std::move(v); return a;
}
inline ir::Attribute attr_tensor(std::string name, Tensor t) {
  ir::Attribute a; a.name = std::move(name); a.type = ir::AttrType::kTensor; a.t = std::move(t); return a;
}

// Runs `op_type` (default domain unless `domain` is given) at `opset` on `inputs`
// (nullptr = omitted optional input). Inputs are treated as run-time values, so
// the kernel's infer() sees no constants.
inline Result<std::vector<Tensor>> run_op(const std::string& op_type, std::vector<const Tensor*> inputs,
                                          std::vector<ir::Attribute> attrs = {}, size_t num_outputs = 1,
                                          int opset = 17, const std::string& domain = "") {
  ir::Node node;
  node.name = "test_" + op_type;
  node.op_type = op_type;
  node.domain = domain;
  node.opset = opset;
  node.attributes = std::move(attrs);
  std::vector<DType> dtypes;
  std::vector<const Tensor*> constants(inputs.size(), nullptr);
  for (const Tensor* t : inputs) dtypes.push_back(t ? t->dtype() : DType::kUndefined);
  node.num_explicit_inputs = inputs.size();
  kernels::KernelInit init{node, dtypes, constants, nullptr};
  EMBER_ASSIGN_OR_RETURN(auto kernel, kernels::create_kernel(init));
  return kernels::evaluate(*kernel, inputs, num_outputs);
}

}  // namespace ember::test
