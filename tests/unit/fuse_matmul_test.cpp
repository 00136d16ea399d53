// The MatMul + Add (+ activation) fusion pass and the FusedMatMul kernel: which
// chains fuse, and that a fused graph computes what the unfused graph computes.
//
// Tolerance per element: gemm_test.cpp's GEMM bound, 2^-24 (2 sqrt(K) + 4)
// (sum_k |a b| + |bias|), times 1.25 for the activations' slopes (at most
// 1.13, GELU's), plus 2 ulp of the result for the activation's own rounding
// (Silu rounds once where Sigmoid, Mul round twice).
// ctest: every ISA level
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "kernels/common/shape_util.h"
#include "kernels/elementwise/fused_elementwise.h"
#include "kernels/matmul/fused_matmul.h"
#include "op_test_util.h"
#include "runtime/session.h"
#include "threading/thread_pool.h"

namespace ember {
namespace {

using test::attr_string;
using test::GraphBuilder;
using test::make_session;
using test::make_tensor;
using test::op_types;

const std::string kFused(kernels::kFusedMatMulOp);

std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// One fusion case: A [batch..., m, k] x W [k, n] + bias, then `act`.
struct Case {
  Shape a_shape;
  int64_t k = 0, n = 0;
  Shape bias_shape;
  bool bias_first = false;  // Add(bias, y) instead of Add(y, bias)
  std::string act;          // "", an op type, "Gelu:tanh", "ms:Gelu", "ms:FastGelu", "Silu"
};

void add_activation(GraphBuilder& b, const std::string& act, const std::string& x, const std::string& y) {
  if (act == "Silu") {
    b.node("Sigmoid", {x}, {"sig"}).node("Mul", {"sig", x}, {y});
  } else if (act == "Gelu:tanh") {
    b.node("Gelu", {x}, {y}, {attr_string("approximate", "tanh")});
  } else if (act.starts_with("ms:")) {
    b.node(act.substr(3), {x}, {y});
    b.raw()->nodes.back().domain = "com.microsoft";
    b.raw()->nodes.back().opset = 1;
    b.raw()->opsets["com.microsoft"] = 1;
  } else {
    b.node(act, {x}, {y});
  }
}

std::shared_ptr<ir::Graph> build_case(const Case& c, const std::vector<float>& w, const std::vector<float>& bias) {
  GraphBuilder b(20);
  std::vector<int64_t> dims(c.a_shape.begin(), c.a_shape.end());
  b.input("a", DType::kF32, dims);
  b.constant("w", make_tensor<float>({c.k, c.n}, w)).constant("bias", make_tensor<float>(c.bias_shape, bias));
  b.node("MatMul", {"a", "w"}, {"mm"});
  if (c.bias_first) {
    b.node("Add", {"bias", "mm"}, {c.act.empty() ? "y" : "s"});
  } else {
    b.node("Add", {"mm", "bias"}, {c.act.empty() ? "y" : "s"});
  }
  if (!c.act.empty()) add_activation(b, c.act, "s", "y");
  return b.output("y").build();
}

// Runs the case fused (at 1 and 2 threads) and unfused; checks the fused graph
// is `want_ops` and the outputs agree within the tolerance above.
void expect_case(const Case& c, const std::vector<std::string>& want_ops) {
  SCOPED_TRACE("act '" + c.act + "' a " + shape_to_string(c.a_shape) + " n " + std::to_string(c.n) + " bias " +
               shape_to_string(c.bias_shape) + (c.bias_first ? " bias first" : ""));
  const int64_t rows = shape_numel(c.a_shape) / c.k;
  const std::vector<float> av = random_floats(rows * c.k, 1), w = random_floats(c.k * c.n, 2),
                           bias = random_floats(c.n, 3, -2.0f, 2.0f);
  auto fused = make_session(build_case(c, w, bias), true);
  auto plain = make_session(build_case(c, w, bias), false);
  ASSERT_TRUE(fused && plain);
  EXPECT_EQ(op_types(*fused), want_ops);
  Tensor a = make_tensor<float>(c.a_shape, av);
  std::vector<const Tensor*> in = {&a};
  std::vector<Tensor> want, got1, got2;
  ASSERT_TRUE(plain->run(in, want).is_ok());
  {
    threading::ScopedThreadLimit one(1);
    Status st = fused->run(in, got1);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  }
  {
    threading::ScopedThreadLimit two(2);
    ASSERT_TRUE(fused->run(in, got2).is_ok());
  }
  ASSERT_EQ(got1[0].shape(), want[0].shape());
  ASSERT_EQ(std::memcmp(got1[0].data(), got2[0].data(), got1[0].nbytes()), 0) << "1 vs 2 threads differ";
  const float* y = got1[0].data_as<float>();
  const float* ref = want[0].data_as<float>();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double magnitude = std::abs(bias[j]);
      for (int64_t kk = 0; kk < c.k; ++kk) {
        magnitude += std::abs(static_cast<double>(av[i * c.k + kk]) * w[kk * c.n + j]);
      }
      const double r = ref[i * c.n + j];
      const double gemm_tol = std::ldexp(2.0 * std::sqrt(static_cast<double>(c.k)) + 4.0, -24) * magnitude;
      const double tol = 1.25 * gemm_tol + std::ldexp(std::abs(r), -22);
      ASSERT_LE(std::abs(y[i * c.n + j] - r), tol)
          << "at row " << i << " col " << j << ": got " << y[i * c.n + j] << " want " << r;
    }
  }
}

TEST(FuseMatMul, EveryActivationMatchesUnfused) {
  for (const std::string act : {"", "Relu", "Tanh", "Sigmoid", "Gelu", "Gelu:tanh", "ms:Gelu", "ms:FastGelu", "Silu"}) {
    expect_case({{37, 70}, 70, 45, {45}, false, act}, {kFused});
    expect_case({{2, 3, 33}, 33, 100, {1, 100}, true, act}, {kFused});
  }
}

TEST(FuseMatMul, TileTailsBatchesAndBiasShapes) {
  for (int64_t m : {1, 7, 12, 13, 150}) {
    for (int64_t n : {1, 16, 31, 33, 65}) {
      expect_case({{m, 20}, 20, n, {n}, m % 2 == 0, "Relu"}, {kFused});
    }
  }
  expect_case({{2, 3, 300}, 300, 129, {1, 129}, false, "Gelu"}, {kFused});
  expect_case({{2, 1, 3, 17}, 17, 40, {1, 1, 40}, true, "Silu"}, {kFused});
  expect_case({{17}, 17, 40, {40}, false, "Tanh"}, {kFused});  // 1-D A: a [40] output
  expect_case({{0, 17}, 17, 40, {40}, false, "Relu"}, {kFused});
}

TEST(FuseMatMul, DeclinesBiasThatIsNotARow) {
  // [1, 1, N] against a 2-D product widens the output; [N, 1] is a column.
  expect_case({{5, 8}, 8, 6, {1, 1, 6}, false, "Relu"}, {"MatMul", std::string(kernels::kFusedElementwiseOp)});
  GraphBuilder b;
  b.input("a", DType::kF32, {6, 8});
  b.constant("w", make_tensor<float>({8, 6}, random_floats(48, 4)));
  b.constant("c", make_tensor<float>({6, 1}, random_floats(6, 5)));
  b.node("MatMul", {"a", "w"}, {"mm"}).node("Add", {"mm", "c"}, {"y"});
  auto s = make_session(b.output("y").build(), true);
  ASSERT_TRUE(s);
  EXPECT_EQ(op_types(*s), (std::vector<std::string>{"MatMul", "Add"}));
}

TEST(FuseMatMul, DeclinesSharedOrGraphOutputMatMulResult) {
  for (bool graph_output : {false, true}) {
    GraphBuilder b;
    b.input("a", DType::kF32, {4, 8});
    b.constant("w", make_tensor<float>({8, 6}, random_floats(48, 6)));
    b.constant("bias", make_tensor<float>({6}, random_floats(6, 7)));
    b.node("MatMul", {"a", "w"}, {"mm"}).node("Add", {"mm", "bias"}, {"y"});
    if (graph_output) {
      b.output("mm");
    } else {
      b.node("Neg", {"mm"}, {"z"}).output("z");
    }
    auto s = make_session(b.output("y").build(), true);
    ASSERT_TRUE(s);
    for (const std::string& op : op_types(*s)) EXPECT_NE(op, kFused) << "graph output " << graph_output;
  }
}

// The Add's result read twice (or a graph output) leaves the activation out.
TEST(FuseMatMul, SharedAddResultKeepsTheActivationApart) {
  for (bool graph_output : {false, true}) {
    GraphBuilder b;
    b.input("a", DType::kF32, {4, 8});
    b.constant("w", make_tensor<float>({8, 6}, random_floats(48, 8)));
    b.constant("bias", make_tensor<float>({6}, random_floats(6, 9)));
    b.node("MatMul", {"a", "w"}, {"mm"}).node("Add", {"bias", "mm"}, {"s"}).node("Relu", {"s"}, {"y"});
    if (graph_output) {
      b.output("s");
    } else {
      b.node("Tanh", {"s"}, {"z"}).output("z");
    }
    auto s = make_session(b.output("y").build(), true);
    ASSERT_TRUE(s);
    const std::vector<std::string> ops = op_types(*s);
    ASSERT_FALSE(ops.empty());
    EXPECT_EQ(ops[0], kFused);
    EXPECT_EQ(s->graph().nodes[0].find_attr("activation"), nullptr);
    EXPECT_EQ(ops[1], "Relu");
  }
}

TEST(FuseMatMul, DeclinesRuntimeOperandsAndOtherTypes) {
  {  // B a graph input
    GraphBuilder b;
    b.input("a", DType::kF32, {4, 8}).input("w", DType::kF32, {8, 6});
    b.constant("bias", make_tensor<float>({6}, random_floats(6, 10)));
    b.node("MatMul", {"a", "w"}, {"mm"}).node("Add", {"mm", "bias"}, {"y"});
    auto s = make_session(b.output("y").build(), true);
    ASSERT_TRUE(s);
    EXPECT_EQ(op_types(*s), (std::vector<std::string>{"MatMul", "Add"}));
  }
  {  // bias a graph input
    GraphBuilder b;
    b.input("a", DType::kF32, {4, 8}).input("bias", DType::kF32, {6});
    b.constant("w", make_tensor<float>({8, 6}, random_floats(48, 11)));
    b.node("MatMul", {"a", "w"}, {"mm"}).node("Add", {"mm", "bias"}, {"y"});
    auto s = make_session(b.output("y").build(), true);
    ASSERT_TRUE(s);
    EXPECT_EQ(op_types(*s), (std::vector<std::string>{"MatMul", "Add"}));
  }
  {  // f16
    Tensor w = Tensor::allocate(DType::kF16, {8, 6}), bias = Tensor::allocate(DType::kF16, {6});
    for (int64_t i = 0; i < w.numel(); ++i) w.data_as<Float16>()[i] = Float16(0.25f);
    for (int64_t i = 0; i < bias.numel(); ++i) bias.data_as<Float16>()[i] = Float16(1.0f);
    GraphBuilder b;
    b.input("a", DType::kF16, {4, 8});
    b.constant("w", w).constant("bias", bias);
    b.node("MatMul", {"a", "w"}, {"mm"}).node("Add", {"mm", "bias"}, {"y"});
    auto s = make_session(b.output("y").build(), true);
    ASSERT_TRUE(s);
    EXPECT_EQ(op_types(*s), (std::vector<std::string>{"MatMul", "Add"}));
  }
}

}  // namespace
}  // namespace ember
