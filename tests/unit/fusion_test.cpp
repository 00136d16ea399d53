// The elementwise fusion pass and the FusedElementwise kernel: which groups
// form, and that a fused graph computes what the unfused graph computes.
// ctest: every ISA level
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "graph_builder.h"
#include "kernels/elementwise/fused_elementwise.h"
#include "op_test_util.h"
#include "runtime/session.h"
#include "threading/thread_pool.h"

namespace ember {
namespace {

using test::attr_int;
using test::GraphBuilder;
using test::make_session;
using test::make_tensor;
using test::op_types;
using test::values_of;

Tensor random_tensor(DType dtype, Shape shape, uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
  Tensor t = Tensor::allocate(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = dist(rng);
    if (dtype == DType::kF32) t.data_as<float>()[i] = v;
    if (dtype == DType::kF16) t.data_as<Float16>()[i] = Float16(v);
    if (dtype == DType::kBF16) t.data_as<BFloat16>()[i] = BFloat16(v);
  }
  return t;
}

// Runs `build()` fused and unfused on the same inputs at 1 and 2 threads.
void expect_fused_matches_unfused(const std::function<std::shared_ptr<ir::Graph>()>& build,
                                  const std::vector<Tensor>& inputs, double rel_tolerance,
                                  const std::vector<std::string>& want_ops) {
  auto fused = make_session(build(), true);
  auto plain = make_session(build(), false);
  ASSERT_TRUE(fused && plain);
  EXPECT_EQ(op_types(*fused), want_ops);
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  std::vector<Tensor> want, got1, got2;
  ASSERT_TRUE(plain->run(ptrs, want).is_ok());
  {
    threading::ScopedThreadLimit one(1);
    Status st = fused->run(ptrs, got1);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  }
  {
    threading::ScopedThreadLimit two(2);
    ASSERT_TRUE(fused->run(ptrs, got2).is_ok());
  }
  ASSERT_EQ(want.size(), got1.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got1[k].shape(), want[k].shape());
    ASSERT_EQ(got1[k].dtype(), want[k].dtype());
    EXPECT_EQ(std::memcmp(got1[k].data(), got2[k].data(), got1[k].nbytes()), 0) << "1 vs 2 threads differ";
    Tensor a = got1[k], b = want[k];
    for (int64_t i = 0; i < a.numel(); ++i) {
      double x, y;
      if (a.dtype() == DType::kF32) {
        x = a.data_as<float>()[i];
        y = b.data_as<float>()[i];
      } else if (a.dtype() == DType::kF16) {
        x = a.data_as<Float16>()[i];
        y = b.data_as<Float16>()[i];
      } else {
        x = a.data_as<BFloat16>()[i];
        y = b.data_as<BFloat16>()[i];
      }
      if (rel_tolerance == 0) {
        ASSERT_EQ(x, y) << "output " << k << " element " << i;
      } else {
        ASSERT_LE(std::fabs(x - y), rel_tolerance * std::max(1.0, std::fabs(y))) << "output " << k << " element " << i;
      }
    }
  }
}

const std::vector<std::string> kOneFused = {std::string(kernels::kFusedElementwiseOp)};

TEST(Fusion, ChainWithRowBiasAndScalarIsBitExact) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF32, {3, 70, 33}).input("bias", DType::kF32, {33}).input("s", DType::kF32, {});
    b.node("Relu", {"x"}, {"r"}).node("Add", {"r", "bias"}, {"a"}).node("Mul", {"s", "a"}, {"m"});
    b.node("Sub", {"m", "s"}, {"d"}).node("Tanh", {"d"}, {"y"});
    return b.output("y").build();
  };
  expect_fused_matches_unfused(
      build, {random_tensor(DType::kF32, {3, 70, 33}, 1), random_tensor(DType::kF32, {33}, 2), make_tensor<float>({}, {0.7f})},
      0.0, kOneFused);
}

TEST(Fusion, GeluBodyWithSharedInputIsBitExact) {
  // x/sqrt(2) -> Erf -> +1 -> *x -> *0.5: x feeds two members.
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF32, {-1, 4096});
    b.constant("sqrt2", make_tensor<float>({}, {1.4142135f})).constant("one", make_tensor<float>({}, {1.0f}));
    b.constant("half", make_tensor<float>({}, {0.5f}));
    b.node("Div", {"x", "sqrt2"}, {"a"}).node("Erf", {"a"}, {"e"}).node("Add", {"e", "one"}, {"p"});
    b.node("Mul", {"x", "p"}, {"m"}).node("Mul", {"m", "half"}, {"y"});
    return b.output("y").build();
  };
  expect_fused_matches_unfused(build, {random_tensor(DType::kF32, {5, 4096}, 3)}, 0.0, kOneFused);
}

TEST(Fusion, SigmoidMulBecomesSilu) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF32, {2, 1000});
    b.node("Sigmoid", {"x"}, {"s"}).node("Mul", {"x", "s"}, {"y"});
    return b.output("y").build();
  };
  // x * sigmoid(x) in one kernel rounds once less than the two-node form.
  expect_fused_matches_unfused(build, {random_tensor(DType::kF32, {2, 1000}, 4, -30.0f, 30.0f)}, 2e-6, kOneFused);
}

TEST(Fusion, F16CastBodyMatchesUnfused) {
  // The form exporters give f16 activations: up-cast, compute in f32, down-cast.
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF16, {4, 300});
    b.constant("k", make_tensor<float>({}, {0.79788456f}));
    b.node("Cast", {"x"}, {"xf"}, {attr_int("to", 1)}).node("Mul", {"xf", "k"}, {"m"}).node("Tanh", {"m"}, {"t"});
    b.node("Cast", {"t"}, {"y"}, {attr_int("to", 10)});
    return b.output("y").build();
  };
  expect_fused_matches_unfused(build, {random_tensor(DType::kF16, {4, 300}, 5)}, 0.0, kOneFused);
}

TEST(Fusion, Bf16ChainRoundsAtInnerCasts) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kBF16, {1000});
    b.node("Cast", {"x"}, {"xf"}, {attr_int("to", 1)}).node("Exp", {"xf"}, {"e"});
    b.node("Cast", {"e"}, {"eb"}, {attr_int("to", 16)}).node("Cast", {"eb"}, {"ef"}, {attr_int("to", 1)});
    b.node("Neg", {"ef"}, {"y"});
    return b.output("y").build();
  };
  expect_fused_matches_unfused(build, {random_tensor(DType::kBF16, {1000}, 6)}, 0.0, kOneFused);
}

TEST(Fusion, IntermediateReadElsewhereEndsTheGroup) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF32, {64});
    b.node("Exp", {"x"}, {"e"}).node("Neg", {"e"}, {"n"}).node("Abs", {"n"}, {"y"});
    b.node("ReduceSum", {"e"}, {"s"}, {attr_int("keepdims", 1)});
    return b.output("y").output("s").build();
  };
  // Exp's output has a consumer outside the Neg/Abs group: Exp stays a node.
  auto fused = make_session(build(), true);
  ASSERT_TRUE(fused);
  EXPECT_EQ(op_types(*fused), (std::vector<std::string>{"Exp", std::string(kernels::kFusedElementwiseOp), "ReduceSum"}));
  expect_fused_matches_unfused(build, {random_tensor(DType::kF32, {64}, 7)}, 0.0,
                               {"Exp", std::string(kernels::kFusedElementwiseOp), "ReduceSum"});
}

TEST(Fusion, GraphOutputsAndBroadcastingOperandsAreNotAbsorbed) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF32, {8, 1}).input("z", DType::kF32, {1, 8});
    // t is a graph output; the Add broadcasts [8,1] against [1,8] (neither a row nor a scalar).
    b.node("Relu", {"x"}, {"t"}).node("Add", {"t", "z"}, {"a"}).node("Sigmoid", {"a"}, {"y"});
    return b.output("t").output("y").build();
  };
  expect_fused_matches_unfused(build, {random_tensor(DType::kF32, {8, 1}, 8), random_tensor(DType::kF32, {1, 8}, 9)},
                               0.0, {"Relu", "Add", "Sigmoid"});
}

TEST(Fusion, SymbolicShapesFuseAndRunAtAnySize) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF32, {-1, 16}).input("w", DType::kF32, {16});
    b.node("Mul", {"x", "w"}, {"m"}).node("Sigmoid", {"m"}, {"y"});
    return b.output("y").build();
  };
  for (int64_t rows : {0, 1, 33, 2049}) {
    expect_fused_matches_unfused(build, {random_tensor(DType::kF32, {rows, 16}, 10), random_tensor(DType::kF32, {16}, 11)},
                                 0.0, kOneFused);
  }
}

TEST(Fusion, NonFloatChainsAreLeftAlone) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kI32, {10});
    b.node("Abs", {"x"}, {"a"}).node("Neg", {"a"}, {"y"});
    return b.output("y").build();
  };
  auto s = make_session(build(), true);
  ASSERT_TRUE(s);
  EXPECT_EQ(op_types(*s), (std::vector<std::string>{"Abs", "Neg"}));
}

// An f16 op rounds (and overflows) in f16 before a Cast widens it: the fused body
// must too. 60000 + 60000 is inf in f16; 1 + 2^-11 rounds to 1.
TEST(Fusion, F16ResultsRoundAndOverflowAsUnfused) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kF16, {4}).input("z", DType::kF16, {4});
    b.node("Add", {"x", "z"}, {"s"}).node("Cast", {"s"}, {"sf"}, {attr_int("to", 1)}).node("Neg", {"sf"}, {"y"});
    return b.output("y").build();
  };
  Tensor x = Tensor::allocate(DType::kF16, {4}), z = Tensor::allocate(DType::kF16, {4});
  const float xs[] = {60000.0f, 1.0f, -3.0f, 0.5f}, zs[] = {60000.0f, 0.00048828125f, 1.25f, 0.25f};
  for (int i = 0; i < 4; ++i) {
    x.data_as<Float16>()[i] = Float16(xs[i]);
    z.data_as<Float16>()[i] = Float16(zs[i]);
  }
  expect_fused_matches_unfused(build, {x, z}, 0.0, kOneFused);
  auto s = make_session(build(), true);
  std::vector<Tensor> out;
  std::vector<const Tensor*> in = {&x, &z};
  ASSERT_TRUE(s->run(in, out).is_ok());
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{-std::numeric_limits<float>::infinity(), -1.0f, 1.75f, -0.75f}));
}

// Opset 6 Add broadcasts B along `axis`, not numpy-style: not fused, and right.
TEST(Fusion, LegacyAxisBroadcastIsNotFused) {
  auto build = [] {
    GraphBuilder b(6);
    b.input("x", DType::kF32, {1, 2, 1, 2}).input("w", DType::kF32, {2});
    b.node("Add", {"x", "w"}, {"a"}, {attr_int("broadcast", 1), attr_int("axis", 1)}).node("Relu", {"a"}, {"y"});
    return b.output("y").build();
  };
  auto s = make_session(build(), true);
  ASSERT_TRUE(s);
  EXPECT_EQ(op_types(*s), (std::vector<std::string>{"Add", "Relu"}));
  Tensor x = make_tensor<float>({1, 2, 1, 2}, {0, 0, 0, 0}), w = make_tensor<float>({2}, {1, 10});
  std::vector<Tensor> out;
  std::vector<const Tensor*> in = {&x, &w};
  ASSERT_TRUE(s->run(in, out).is_ok());
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 1, 10, 10}));
}

TEST(Fusion, CastOnlyGroupReturnsItsInput) {
  auto build = [] {
    GraphBuilder b;
    b.input("x", DType::kBF16, {100});
    b.node("Cast", {"x"}, {"a"}, {attr_int("to", 1)}).node("Cast", {"a"}, {"y"}, {attr_int("to", 1)});
    return b.output("y").build();
  };
  expect_fused_matches_unfused(build, {random_tensor(DType::kBF16, {100}, 12)}, 0.0, kOneFused);
}

// A FusedElementwise node written by hand (not by the pass): a body whose
// first step combines two scalar inputs and whose output is an input cast.
TEST(Fusion, HandWrittenBodyWithScalarOnlyStep) {
  GraphBuilder body;
  body.input("s1", DType::kF32, {}).input("s2", DType::kF32, {1}).input("x", DType::kF32, {6});
  body.node("Sub", {"s1", "s2"}, {"d"}).node("Mul", {"d", "x"}, {"y"});
  auto body_graph = body.output("y").build();
  ASSERT_TRUE(body_graph->rebuild_links().is_ok());
  ir::Attribute attr;
  attr.name = "body";
  attr.type = ir::AttrType::kGraph;
  attr.g = body_graph;
  GraphBuilder b;
  b.input("s1", DType::kF32, {}).input("s2", DType::kF32, {1}).input("x", DType::kF32, {6});
  b.node(std::string(kernels::kFusedElementwiseOp), {"s1", "s2", "x"}, {"y"}, {attr});
  auto g = b.raw();
  g->nodes[0].domain = std::string(kernels::kEmberDomain);
  g->nodes[0].opset = 1;
  g->opsets[std::string(kernels::kEmberDomain)] = 1;
  auto s = make_session(b.output("y").build(), true);
  ASSERT_TRUE(s);
  Tensor s1 = make_tensor<float>({}, {5.0f}), s2 = make_tensor<float>({1}, {2.0f});
  Tensor x = make_tensor<float>({6}, {1, -2, 3, 0.5f, 0, 10});
  std::vector<Tensor> out;
  std::vector<const Tensor*> in = {&s1, &s2, &x};
  Status st = s->run(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{3, -6, 9, 1.5f, 0, 30}));
}

}  // namespace
}  // namespace ember
