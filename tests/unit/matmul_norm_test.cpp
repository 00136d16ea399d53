// MatMul / Gemm / MatMulInteger and the normalization ops. Expected values were
// computed with numpy and pasted as literals.
// ctest: every ISA level
// ctest: emulated CPUs
#include <cmath>
#include <limits>

#include "unit/op_test_util.h"

namespace ember {
namespace {

using test::attr_float;
using test::attr_int;
using test::make_tensor;
using test::run_op;
using test::values_of;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << "element " << i;
  }
}

Shape shape_of(const Tensor& t) { return t.shape(); }

TEST(MatMul, TwoD) {
  Tensor a = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make_tensor<float>({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto r = run_op("MatMul", {&a, &b});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 4}));
  expect_close(values_of<float>(r.value()[0]), {38, 44, 50, 56, 83, 98, 113, 128});
}

TEST(MatMul, BroadcastsBatchDims) {
  std::vector<float> av(12), bv(18);
  for (int i = 0; i < 12; ++i) av[i] = static_cast<float>(i - 5);
  for (int i = 0; i < 18; ++i) bv[i] = static_cast<float>(i) * 0.5f;
  Tensor a = make_tensor<float>({2, 1, 2, 3}, av);
  Tensor b = make_tensor<float>({3, 3, 2}, bv);
  auto r = run_op("MatMul", {&a, &b});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 3, 2, 2}));
  expect_close(values_of<float>(r.value()[0]),
               {-10.0, -16.0, -1.0, -2.5, -46.0, -52.0, -10.0, -11.5, -82.0, -88.0, -19.0, -20.5,
                8.0,   11.0,  17.0, 24.5, 26.0,  29.0,  62.0,  69.5,  44.0,  47.0,  107.0, 114.5});
}

TEST(MatMul, OneDimensionalOperands) {
  Tensor v = make_tensor<float>({3}, {1, 2, 3});
  Tensor a = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make_tensor<float>({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto left = run_op("MatMul", {&v, &b});
  ASSERT_TRUE(left.is_ok()) << left.status().to_string();
  EXPECT_EQ(shape_of(left.value()[0]), (Shape{4}));
  expect_close(values_of<float>(left.value()[0]), {38, 44, 50, 56});
  auto right = run_op("MatMul", {&a, &v});
  ASSERT_TRUE(right.is_ok()) << right.status().to_string();
  EXPECT_EQ(shape_of(right.value()[0]), (Shape{2}));
  expect_close(values_of<float>(right.value()[0]), {14, 32});
  auto dot = run_op("MatMul", {&v, &v});
  ASSERT_TRUE(dot.is_ok()) << dot.status().to_string();
  EXPECT_EQ(dot.value()[0].rank(), 0);
  expect_close(values_of<float>(dot.value()[0]), {14});
}

TEST(MatMul, ZeroSizes) {
  Tensor a = make_tensor<float>({2, 0}, {});
  Tensor b = make_tensor<float>({0, 3}, {});
  auto k0 = run_op("MatMul", {&a, &b});
  ASSERT_TRUE(k0.is_ok()) << k0.status().to_string();
  EXPECT_EQ(shape_of(k0.value()[0]), (Shape{2, 3}));
  expect_close(values_of<float>(k0.value()[0]), {0, 0, 0, 0, 0, 0});
  Tensor e = make_tensor<float>({0, 2, 4}, {});
  Tensor f = make_tensor<float>({4, 5}, std::vector<float>(20, 1.0f));
  auto m0 = run_op("MatMul", {&e, &f});
  ASSERT_TRUE(m0.is_ok()) << m0.status().to_string();
  EXPECT_EQ(shape_of(m0.value()[0]), (Shape{0, 2, 5}));
}

// Odd sizes around vector widths, checked against a double-precision loop.
TEST(MatMul, TailsMatchNaiveLoop) {
  const int64_t m = 7, k = 19, n = 33;
  std::vector<float> av(m * k), bv(k * n);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>((i * 13) % 7) * 0.25f - 0.5f;
  Tensor a = make_tensor<float>({m, k}, av);
  Tensor b = make_tensor<float>({1, k, n}, bv);
  auto r = run_op("MatMul", {&a, &b});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < k; ++q) s += static_cast<double>(av[i * k + q]) * bv[q * n + j];
      want[i * n + j] = static_cast<float>(s);
    }
  }
  expect_close(values_of<float>(r.value()[0]), want);
}

TEST(MatMul, PropagatesNanAndInf) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor a = make_tensor<float>({1, 2}, {std::nanf(""), 1});
  Tensor b = make_tensor<float>({2, 2}, {1, 0, inf, 2});
  auto r = run_op("MatMul", {&a, &b});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  auto y = values_of<float>(r.value()[0]);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
}

TEST(MatMul, HalfAndIntegerTypes) {
  Tensor a = make_tensor<Float16>({1, 3}, {Float16(0.5f), Float16(1.5f), Float16(-2.0f)});
  Tensor b = make_tensor<Float16>({3, 1}, {Float16(2.0f), Float16(4.0f), Float16(1.0f)});
  auto h = run_op("MatMul", {&a, &b});
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_FLOAT_EQ(static_cast<float>(values_of<Float16>(h.value()[0])[0]), 5.0f);
  Tensor c = make_tensor<int64_t>({2, 2}, {1, -2, 3, 4});
  Tensor d = make_tensor<int64_t>({2, 1}, {5, 6});
  auto i = run_op("MatMul", {&c, &d});
  ASSERT_TRUE(i.is_ok()) << i.status().to_string();
  EXPECT_EQ(values_of<int64_t>(i.value()[0]), (std::vector<int64_t>{-7, 39}));
}

TEST(MatMul, RejectsBadShapesAndTypes) {
  Tensor a = make_tensor<float>({2, 3}, std::vector<float>(6));
  Tensor b = make_tensor<float>({4, 2}, std::vector<float>(8));
  auto r = run_op("MatMul", {&a, &b});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("K=3"), std::string::npos) << r.status().message();
  Tensor c = make_tensor<int32_t>({3, 2}, std::vector<int32_t>(6));
  EXPECT_FALSE(run_op("MatMul", {&a, &c}).is_ok());
  Tensor x = make_tensor<float>({2, 2, 3}, std::vector<float>(12));
  Tensor y = make_tensor<float>({3, 3, 1}, std::vector<float>(9));
  EXPECT_FALSE(run_op("MatMul", {&x, &y}).is_ok());
}

TEST(Gemm, AllAttributesWithVectorBias) {
  Tensor a = make_tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor b = make_tensor<float>({4, 3}, {1, 0, 2, 0, 1, 3, 1, 1, 1, 2, 2, 0});
  Tensor c = make_tensor<float>({4}, {1, 2, 3, 4});
  auto r = run_op("Gemm", {&a, &b, &c},
                  {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.5f), attr_float("beta", 2.0f)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 4}));
  expect_close(values_of<float>(r.value()[0]), {7.5, 13.0, 10.5, 12.0, 9.0, 15.0, 12.0, 14.0});
}

TEST(Gemm, ColumnBiasNoBiasAndDouble) {
  Tensor a = make_tensor<double>({2, 2}, {1, 2, 3, 4});
  Tensor b = make_tensor<double>({2, 2}, {1, 1, 0, 1});
  Tensor c = make_tensor<double>({2, 1}, {10, 20});
  auto r = run_op("Gemm", {&a, &b, &c});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<double>(r.value()[0]), (std::vector<double>{11, 13, 23, 27}));
  auto no_c = run_op("Gemm", {&a, &b}, {}, 1, 13);
  ASSERT_TRUE(no_c.is_ok()) << no_c.status().to_string();
  EXPECT_EQ(values_of<double>(no_c.value()[0]), (std::vector<double>{1, 3, 3, 7}));
  auto legacy = run_op("Gemm", {&a, &b, &c}, {attr_int("broadcast", 1)}, 1, 6);
  ASSERT_TRUE(legacy.is_ok()) << legacy.status().to_string();
  EXPECT_EQ(values_of<double>(legacy.value()[0]), (std::vector<double>{11, 13, 23, 27}));
}

TEST(Gemm, RejectsBadBiasAndAttributes) {
  Tensor a = make_tensor<float>({2, 2}, {1, 2, 3, 4});
  Tensor c = make_tensor<float>({3}, {1, 2, 3});
  auto r = run_op("Gemm", {&a, &a, &c});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("[3]"), std::string::npos) << r.status().message();
  EXPECT_FALSE(run_op("Gemm", {&a, &a}, {attr_int("transA", 2)}).is_ok());
  Tensor v = make_tensor<float>({2}, {1, 2});
  EXPECT_FALSE(run_op("Gemm", {&v, &a}).is_ok());
}

TEST(MatMulInteger, ZeroPoints) {
  Tensor a = make_tensor<uint8_t>({2, 3}, {11, 7, 3, 10, 6, 2});
  Tensor b = make_tensor<uint8_t>({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor azp = make_tensor<uint8_t>({}, {12});
  Tensor bzp = make_tensor<uint8_t>({2}, {0, 1});
  auto r = run_op("MatMulInteger", {&a, &b, &azp, &bzp}, {}, 1, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dtype(), DType::kI32);
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{-38, -68, -44, -80}));
}

TEST(MatMulInteger, SignedExtremes) {
  Tensor a = make_tensor<int8_t>({2, 2}, {-128, 127, 5, -3});
  Tensor b = make_tensor<int8_t>({2, 2}, {127, -128, -1, 2});
  auto r = run_op("MatMulInteger", {&a, &b}, {}, 1, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{-16383, 16638, 638, -646}));
  Tensor f = make_tensor<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(run_op("MatMulInteger", {&f, &b}, {}, 1, 10).is_ok());
}

TEST(LayerNormalization, LastAxisWithStatistics) {
  Tensor x = make_tensor<float>({2, 4}, {1, 2, 3, 4, 2, 4, 6, 10});
  Tensor s = make_tensor<float>({4}, {1, 2, 0.5f, -1});
  Tensor b = make_tensor<float>({4}, {0, 1, 0, 1});
  auto r = run_op("LayerNormalization", {&x, &s, &b}, {}, 3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(values_of<float>(r.value()[0]), {-1.3416354656219482, 0.10557633638381958, 0.2236059159040451,
                                                -0.34163546562194824, -1.1832152605056763, -0.01418447494506836,
                                                0.08451537787914276, -0.5212768316268921});
  EXPECT_EQ(shape_of(r.value()[1]), (Shape{2, 1}));
  expect_close(values_of<float>(r.value()[1]), {2.5, 5.5});
  EXPECT_EQ(shape_of(r.value()[2]), (Shape{2, 1}));
  expect_close(values_of<float>(r.value()[2]), {0.8944236636161804, 0.33806151151657104});
}

TEST(LayerNormalization, AxisZeroBroadcastScale) {
  Tensor x = make_tensor<float>({2, 2}, {1, 2, 3, 5});
  Tensor s = make_tensor<float>({2}, {2, 3});
  auto r = run_op("LayerNormalization", {&x, &s}, {attr_int("axis", -2)}, 3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(values_of<float>(r.value()[0]), {-2.366426467895508, -1.521274209022522, 0.3380609154701233,
                                                4.563822269439697});
  EXPECT_EQ(shape_of(r.value()[1]), (Shape{1, 1}));
  expect_close(values_of<float>(r.value()[1]), {2.75});
  expect_close(values_of<float>(r.value()[2]), {0.67612183});
}

TEST(LayerNormalization, RejectsBadAxisScaleAndStashType) {
  Tensor x = make_tensor<float>({2, 2}, {1, 2, 3, 5});
  Tensor s = make_tensor<float>({2}, {2, 3});
  Tensor s3 = make_tensor<float>({3}, {2, 3, 4});
  EXPECT_FALSE(run_op("LayerNormalization", {&x, &s}, {attr_int("axis", 2)}).is_ok());
  EXPECT_FALSE(run_op("LayerNormalization", {&x, &s3}).is_ok());
  EXPECT_FALSE(run_op("LayerNormalization", {&x, &s}, {attr_int("stash_type", 7)}).is_ok());
  Tensor i = make_tensor<int32_t>({2}, {1, 2});
  EXPECT_FALSE(run_op("LayerNormalization", {&i, &i}).is_ok());
}

TEST(BatchNormalization, Inference) {
  std::vector<float> xv(8);
  for (int i = 0; i < 8; ++i) xv[i] = static_cast<float>(i);
  Tensor x = make_tensor<float>({1, 2, 2, 2}, xv);
  Tensor s = make_tensor<float>({2}, {1, 2});
  Tensor b = make_tensor<float>({2}, {0, 1});
  Tensor mean = make_tensor<float>({2}, {1, 5});
  Tensor var = make_tensor<float>({2}, {4, 0.25f});
  auto r = run_op("BatchNormalization", {&x, &s, &b, &mean, &var}, {}, 1, 15);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(values_of<float>(r.value()[0]), {-0.49999940395355225, 0.0, 0.49999940395355225, 0.9999988079071045,
                                                -2.999919891357422, 1.0, 4.999919891357422, 8.999839782714844});
  // training_mode=1 normalizes with the batch's own statistics: each channel here
  // has mean c*4+1.5 and population variance 1.25.
  auto training = run_op("BatchNormalization", {&x, &s, &b, &mean, &var}, {attr_int("training_mode", 1)}, 1, 15);
  ASSERT_TRUE(training.is_ok()) << training.status().to_string();
  expect_close(values_of<float>(training.value()[0]), {-1.3416355, -0.4472118, 0.4472118, 1.3416355, -1.6832710,
                                                       0.1055764, 1.8944236, 3.6832710});
  Tensor bad = make_tensor<float>({3}, {1, 2, 3});
  EXPECT_FALSE(run_op("BatchNormalization", {&x, &s, &b, &bad, &var}, {}, 1, 15).is_ok());
}

TEST(BatchNormalization, NonSpatialLegacy) {
  Tensor x = make_tensor<float>({2, 1, 2}, {1, 2, 3, 4});
  Tensor s = make_tensor<float>({1, 2}, {1, 2});
  Tensor b = make_tensor<float>({1, 2}, {0, 1});
  Tensor mean = make_tensor<float>({1, 2}, {1, 0});
  Tensor var = make_tensor<float>({1, 2}, {1, 4});
  auto r = run_op("BatchNormalization", {&x, &s, &b, &mean, &var}, {attr_int("spatial", 0), attr_float("epsilon", 0)},
                  1, 7);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(values_of<float>(r.value()[0]), {0, 3, 2, 5});
}

TEST(InstanceNormalization, PerChannelStatistics) {
  Tensor x = make_tensor<float>({2, 2, 4}, {1, 2, 3, 4, 0, 0, 2, 2, 5, 5, 5, 5, -1, 1, -1, 1});
  Tensor s = make_tensor<float>({2}, {1, 3});
  Tensor b = make_tensor<float>({2}, {0, -1});
  auto r = run_op("InstanceNormalization", {&x, &s, &b}, {}, 1, 6);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(values_of<float>(r.value()[0]),
               {-1.3416354656219482, -0.4472118318080902, 0.4472118318080902, 1.3416354656219482, -3.9999849796295166,
                -3.9999849796295166, 1.9999849796295166, 1.9999849796295166, 0.0, 0.0, 0.0, 0.0, -3.9999849796295166,
                1.9999849796295166, -3.9999849796295166, 1.9999849796295166});
  Tensor bad = make_tensor<float>({3}, {1, 2, 3});
  EXPECT_FALSE(run_op("InstanceNormalization", {&x, &bad, &b}, {}, 1, 6).is_ok());
}


std::vector<float> ramp(int n, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * scale + offset;
  return v;
}

TEST(Conv, AsymmetricPadsStridesAndBias) {
  Tensor x = make_tensor<float>({1, 1, 4, 4}, ramp(16));
  Tensor w = make_tensor<float>({1, 1, 2, 2}, {1, 2, -1, 0.5f});
  Tensor b = make_tensor<float>({1}, {0.5f});
  auto r = run_op("Conv", {&x, &w, &b}, {test::attr_ints("strides", {2, 2}), test::attr_ints("pads", {1, 0, 0, 1})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{1, 1, 2, 2}));
  expect_close(values_of<float>(r.value()[0]), {1, 0, 11, 16});
}

TEST(Conv, GroupsDilationAndSamePadding) {
  Tensor x = make_tensor<float>({1, 2, 2, 2}, ramp(8));
  Tensor w = make_tensor<float>({2, 1, 2, 1}, {2, -1, 1, 3});
  auto grouped = run_op("Conv", {&x, &w}, {attr_int("group", 2)});
  ASSERT_TRUE(grouped.is_ok()) << grouped.status().to_string();
  EXPECT_EQ(shape_of(grouped.value()[0]), (Shape{1, 2, 1, 2}));
  expect_close(values_of<float>(grouped.value()[0]), {-2, -1, 22, 26});

  Tensor x1 = make_tensor<float>({1, 1, 6}, {1, 2, 3, 4, 5, 6});
  Tensor w1 = make_tensor<float>({1, 1, 2}, {1, -1});
  auto dilated = run_op("Conv", {&x1, &w1}, {test::attr_ints("dilations", {2})});
  ASSERT_TRUE(dilated.is_ok()) << dilated.status().to_string();
  expect_close(values_of<float>(dilated.value()[0]), {-2, -2, -2, -2});

  Tensor x2 = make_tensor<float>({1, 1, 3, 3}, ramp(9));
  Tensor w2 = make_tensor<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  auto same = run_op("Conv", {&x2, &w2}, {test::attr_string("auto_pad", "SAME_UPPER"), test::attr_ints("strides", {2, 2})});
  ASSERT_TRUE(same.is_ok()) << same.status().to_string();
  EXPECT_EQ(shape_of(same.value()[0]), (Shape{1, 1, 2, 2}));
  expect_close(values_of<float>(same.value()[0]), {8, 12, 20, 24});
}

TEST(Conv, RejectsBadGroupsAndAttributes) {
  Tensor x = make_tensor<float>({1, 2, 2, 2}, ramp(8));
  Tensor w = make_tensor<float>({2, 1, 2, 1}, {2, -1, 1, 3});
  EXPECT_FALSE(run_op("Conv", {&x, &w}).is_ok());  // W has C/group = 1 but group = 1
  EXPECT_FALSE(run_op("Conv", {&x, &w}, {attr_int("group", 2), test::attr_string("auto_pad", "FOO")}).is_ok());
  EXPECT_FALSE(run_op("Conv", {&x, &w}, {attr_int("group", 2), test::attr_ints("strides", {0, 1})}).is_ok());
  Tensor big = make_tensor<float>({1, 2, 3, 1}, ramp(6));
  EXPECT_FALSE(run_op("Conv", {&x, &big}, {attr_int("group", 2)}).is_ok());
}

TEST(Pool, MaxWithPaddingAndIndices) {
  Tensor x = make_tensor<float>({1, 1, 4, 4}, ramp(16, 1.5f, -3.0f));
  auto r = run_op("MaxPool", {&x}, {test::attr_ints("kernel_shape", {2, 2}), test::attr_ints("strides", {2, 2}),
                                    test::attr_ints("pads", {1, 1, 1, 1})},
                  2, 12);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{1, 1, 3, 3}));
  expect_close(values_of<float>(r.value()[0]), {-3.0, 0.0, 1.5, 9.0, 12.0, 13.5, 15.0, 18.0, 19.5});
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{0, 2, 3, 8, 10, 11, 12, 14, 15}));
}

TEST(Pool, AverageCountIncludePadAndCeilMode) {
  Tensor x = make_tensor<float>({1, 1, 4, 4}, ramp(16, 1.5f, -3.0f));
  const std::vector<ir::Attribute> attrs{test::attr_ints("kernel_shape", {2, 2}), test::attr_ints("strides", {2, 2}),
                                         test::attr_ints("pads", {1, 1, 1, 1})};
  auto excl = run_op("AveragePool", {&x}, attrs);
  ASSERT_TRUE(excl.is_ok()) << excl.status().to_string();
  expect_close(values_of<float>(excl.value()[0]), {-3.0, -0.75, 1.5, 6.0, 8.25, 10.5, 15.0, 17.25, 19.5});
  auto incl_attrs = attrs;
  incl_attrs.push_back(attr_int("count_include_pad", 1));
  auto incl = run_op("AveragePool", {&x}, incl_attrs);
  ASSERT_TRUE(incl.is_ok()) << incl.status().to_string();
  expect_close(values_of<float>(incl.value()[0]), {-0.75, -0.375, 0.375, 3.0, 8.25, 5.25, 3.75, 8.625, 4.875});
  auto ceil = run_op("AveragePool", {&x},
                     {test::attr_ints("kernel_shape", {3, 3}), test::attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)});
  ASSERT_TRUE(ceil.is_ok()) << ceil.status().to_string();
  EXPECT_EQ(shape_of(ceil.value()[0]), (Shape{1, 1, 2, 2}));
  expect_close(values_of<float>(ceil.value()[0]), {4.5, 6.75, 13.5, 15.75});
}

TEST(Pool, GlobalAndErrors) {
  Tensor x = make_tensor<float>({1, 1, 4, 4}, ramp(16, 1.5f, -3.0f));
  auto avg = run_op("GlobalAveragePool", {&x});
  ASSERT_TRUE(avg.is_ok()) << avg.status().to_string();
  EXPECT_EQ(shape_of(avg.value()[0]), (Shape{1, 1, 1, 1}));
  expect_close(values_of<float>(avg.value()[0]), {8.25});
  auto mx = run_op("GlobalMaxPool", {&x});
  ASSERT_TRUE(mx.is_ok()) << mx.status().to_string();
  expect_close(values_of<float>(mx.value()[0]), {19.5});
  EXPECT_FALSE(run_op("MaxPool", {&x}).is_ok());  // kernel_shape is required
  EXPECT_FALSE(run_op("AveragePool", {&x}, {test::attr_ints("kernel_shape", {5, 5})}).is_ok());
  EXPECT_FALSE(run_op("MaxPool", {&x}, {test::attr_ints("kernel_shape", {2})}).is_ok());
}

}  // namespace
}  // namespace ember
