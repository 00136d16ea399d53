// Ops added to close the gap between the kernel registry and the shape-rule
// table: RandomNormal(Like) and RandomUniform against numpy's RandomState
// values, GlobalLpPool against a plain loop, com.microsoft BiasAdd.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "op_test_util.h"

namespace ember {
namespace {

using test::attr_float;
using test::attr_int;
using test::attr_ints;
using test::make_tensor;
using test::run_op;
using test::values_of;

// numpy.random.RandomState(0).randn(4) and .rand(3).
constexpr double kRandn0[] = {1.764052345967664, 0.4001572083672233, 0.9787379841057392, 2.240893199201458};
constexpr double kRand0[] = {0.5488135039273248, 0.7151893663724195, 0.6027633760716439};

TEST(RandomOps, NormalMatchesNumpy) {
  auto r = run_op("RandomNormal", {},
                  {attr_ints("shape", {2, 2}), attr_int("dtype", 11), attr_float("seed", 0.0f),
                   attr_float("mean", 1.0f), attr_float("scale", 2.0f)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ((*r)[0].shape(), Shape({2, 2}));
  const std::vector<double> y = values_of<double>((*r)[0]);
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(y[i], kRandn0[i] * 2.0 + 1.0) << i;
}

TEST(RandomOps, NormalLikeTakesInputShapeAndDtype) {
  const Tensor x = make_tensor<float>({4}, {0, 0, 0, 0});
  auto r = run_op("RandomNormalLike", {&x}, {attr_float("seed", 0.0f)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ((*r)[0].dtype(), DType::kF32);
  const std::vector<float> y = values_of<float>((*r)[0]);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(y[i], static_cast<float>(kRandn0[i])) << i;
}

TEST(RandomOps, UniformMatchesNumpy) {
  auto r = run_op("RandomUniform", {},
                  {attr_ints("shape", {3}), attr_int("dtype", 11), attr_float("seed", 0.0f), attr_float("low", -1.0f),
                   attr_float("high", 3.0f)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<double> y = values_of<double>((*r)[0]);
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(y[i], kRand0[i] * 4.0 - 1.0) << i;
}

TEST(RandomOps, RefusesMissingShapeAndIntDtype) {
  EXPECT_FALSE(run_op("RandomNormal", {}, {}).is_ok());
  EXPECT_FALSE(run_op("RandomUniform", {}, {attr_ints("shape", {2}), attr_int("dtype", 7)}).is_ok());
}

TEST(GlobalLpPool, MatchesPlainLoop) {
  // [1, 2, 3, 2] with a NaN plane and an Inf plane; p = 1, 2, 3.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = {1, -2, 3, -4, 5, 0.5f, 2, 2, 2, 2, 2, 2};
  for (int64_t p : {1, 2, 3}) {
    const Tensor x = make_tensor<float>({1, 2, 3, 2}, xs);
    auto r = run_op("GlobalLpPool", {&x}, {attr_int("p", p)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ((*r)[0].shape(), Shape({1, 2, 1, 1}));
    const std::vector<float> y = values_of<float>((*r)[0]);
    for (size_t c = 0; c < 2; ++c) {
      double sum = 0;
      for (size_t i = 0; i < 6; ++i) sum += std::pow(std::abs(static_cast<double>(xs[c * 6 + i])), p);
      EXPECT_NEAR(y[c], std::pow(sum, 1.0 / static_cast<double>(p)), 1e-5) << "p=" << p << " c=" << c;
    }
  }
  const Tensor special = make_tensor<float>({1, 2, 2}, {NAN, 1, -inf, 1});
  auto r = run_op("GlobalLpPool", {&special}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<float> y = values_of<float>((*r)[0]);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], inf);
  const Tensor empty = make_tensor<float>({1, 2, 0}, {});
  auto e = run_op("GlobalLpPool", {&empty}, {});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(values_of<float>((*e)[0]), std::vector<float>({0, 0}));
  const Tensor flat = make_tensor<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(run_op("GlobalLpPool", {&flat}, {}).is_ok());
}

TEST(BiasAdd, AddsBiasAndSkip) {
  const Tensor x = make_tensor<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor bias = make_tensor<float>({3}, {10, 20, 30});
  const Tensor skip = make_tensor<float>({1, 2, 3}, {100, 200, 300, 400, 500, 600});
  auto r = run_op("BiasAdd", {&x, &bias, &skip}, {}, 1, 1, "com.microsoft");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>((*r)[0]), std::vector<float>({111, 222, 333, 414, 525, 636}));
  const Tensor short_bias = make_tensor<float>({2}, {1, 2});
  EXPECT_FALSE(run_op("BiasAdd", {&x, &short_bias, &skip}, {}, 1, 1, "com.microsoft").is_ok());
}

}  // namespace
}  // namespace ember
