// Activation bodies written the way exporters write them (chains of primitive
// elementwise nodes, f16 bodies wrapped in Casts), run by Ember with fusion and
// by ONNX Runtime without it, must agree; and Ember must have fused them.
// ctest: every ISA level
// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

// ORT's basic level folds constants only, so its answer is the plain node-by-node one.
const OrtOptions kPlainOrt{1, OrtOptLevel::kBasic};

Tensor random_input(DType dtype, Shape shape, uint32_t seed, float range) {
  Tensor t = Tensor::allocate(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::kF32) t.data_as<float>()[i] = dist(rng);
    if (dtype == DType::kF16) t.data_as<Float16>()[i] = Float16(dist(rng));
  }
  return t;
}

Tensor scalar(float v) {
  Tensor t = Tensor::allocate(DType::kF32, {});
  t.data_as<float>()[0] = v;
  return t;
}

struct Case {
  std::string model;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

// Runs the case in both runtimes; returns how many nodes Ember's optimized graph has.
size_t expect_agreement(const Case& c) {
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(c.model.data()), c.model.size());
  auto ort = OrtSession::load_from_bytes(bytes, kPlainOrt);
  EXPECT_TRUE(ort.is_ok()) << ort.status().to_string();
  auto ember = runtime::Session::load_from_bytes(bytes);
  EXPECT_TRUE(ember.is_ok()) << ember.status().to_string();
  if (!ort.is_ok() || !ember.is_ok()) return 0;
  std::vector<OrtInput> ort_inputs;
  std::vector<runtime::NamedInput> ember_inputs;
  for (const auto& [name, value] : c.inputs) {
    ort_inputs.push_back({name, &value});
    ember_inputs.push_back({name, &value});
  }
  auto want = (*ort)->run(ort_inputs);
  auto got = (*ember)->run(ember_inputs);
  EXPECT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(got.is_ok()) << got.status().to_string();
  if (!want.is_ok() || !got.is_ok()) return 0;
  for (size_t i = 0; i < want->size(); ++i) {
    Status s = compare((*got)[i], (*want)[i]);
    EXPECT_TRUE(s.is_ok()) << "output " << i << ": " << s.to_string();
  }
  return (*ember)->graph().nodes.size();
}

// PyTorch's tanh GELU on an f16 tensor computed in f32: x feeds five nodes.
TEST(ActivationBodies, F16TanhGeluBodyFusesAndMatchesOrt) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF16, {4, 1000});
  b.add_output("y", DType::kF16, {4, 1000});
  b.add_initializer("c", scalar(0.044715f));
  b.add_initializer("k", scalar(0.7978845608f));
  b.add_initializer("one", scalar(1.0f));
  b.add_initializer("half", scalar(0.5f));
  b.add_node("Cast", {"x"}, {"xf"}, {attr_int("to", 1)});
  b.add_node("Mul", {"xf", "xf"}, {"x2"});
  b.add_node("Mul", {"x2", "xf"}, {"x3"});
  b.add_node("Mul", {"x3", "c"}, {"cx3"});
  b.add_node("Add", {"xf", "cx3"}, {"inner"});
  b.add_node("Mul", {"inner", "k"}, {"u"});
  b.add_node("Tanh", {"u"}, {"t"});
  b.add_node("Add", {"t", "one"}, {"t1"});
  b.add_node("Mul", {"xf", "t1"}, {"xt"});
  b.add_node("Mul", {"xt", "half"}, {"yf"});
  b.add_node("Cast", {"yf"}, {"y"}, {attr_int("to", 10)});
  Case c{b.serialize(), {}};
  c.inputs.emplace_back("x", random_input(DType::kF16, {4, 1000}, 1, 6.0f));
  EXPECT_EQ(expect_agreement(c), 1u) << "the whole body should be one fused node";
}

// Bias + erf GELU as BERT-style exporters write it: the bias is a row operand.
TEST(ActivationBodies, BiasErfGeluWithRowOperandMatchesOrt) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {2, 33, 896});
  b.add_input("bias", DType::kF32, {896});
  b.add_output("y", DType::kF32, {2, 33, 896});
  b.add_initializer("sqrt2", scalar(1.4142135f));
  b.add_initializer("one", scalar(1.0f));
  b.add_initializer("half", scalar(0.5f));
  b.add_node("Add", {"x", "bias"}, {"h"});
  b.add_node("Div", {"h", "sqrt2"}, {"a"});
  b.add_node("Erf", {"a"}, {"e"});
  b.add_node("Add", {"e", "one"}, {"p"});
  b.add_node("Mul", {"h", "p"}, {"m"});
  b.add_node("Mul", {"m", "half"}, {"y"});
  Case c{b.serialize(), {}};
  c.inputs.emplace_back("x", random_input(DType::kF32, {2, 33, 896}, 2, 5.0f));
  c.inputs.emplace_back("bias", random_input(DType::kF32, {896}, 3, 1.0f));
  EXPECT_EQ(expect_agreement(c), 1u);
}

// SiLU and a QuickGelu-style swish (x * sigmoid(1.702 x)) in one graph, with
// the SiLU result also a graph output: both groups fuse separately.
TEST(ActivationBodies, SiluAndSwishMatchOrt) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {3, 2048});
  b.add_output("silu", DType::kF32, {3, 2048});
  b.add_output("y", DType::kF32, {3, 2048});
  b.add_initializer("alpha", scalar(1.702f));
  b.add_node("Sigmoid", {"x"}, {"s"});
  b.add_node("Mul", {"x", "s"}, {"silu"});
  b.add_node("Mul", {"silu", "alpha"}, {"a"});
  b.add_node("Sigmoid", {"a"}, {"sa"});
  b.add_node("Mul", {"silu", "sa"}, {"y"});
  Case c{b.serialize(), {}};
  c.inputs.emplace_back("x", random_input(DType::kF32, {3, 2048}, 4, 12.0f));
  EXPECT_EQ(expect_agreement(c), 2u);
}

}  // namespace
}  // namespace ember::ortref
