// Reductions, the softmax family and MeanVarianceNormalization. Expected values
// were computed with numpy (float64) and pasted as literals.
// ctest: every ISA level
// ctest: emulated CPUs
#include <cmath>
#include <limits>

#include "kernels/kernel.h"
#include "op_test_util.h"

namespace ember::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor run_one(const std::string& op, std::vector<const Tensor*> inputs, std::vector<ir::Attribute> attrs = {},
               int opset = 17) {
  auto out = run_op(op, std::move(inputs), std::move(attrs), 1, opset);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out.is_ok()) return {};
  return std::move(out.value()[0]);
}

Status run_status(const std::string& op, std::vector<const Tensor*> inputs, std::vector<ir::Attribute> attrs = {},
                  int opset = 17) {
  return run_op(op, std::move(inputs), std::move(attrs), 1, opset).status();
}

void expect_shape(const Tensor& t, Shape shape) { EXPECT_EQ(shape_to_string(t.shape()), shape_to_string(shape)); }

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double rtol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * std::abs(want[i]) + 1e-6) << "at " << i;
    }
  }
}

Tensor iota_2x3x4x5() {
  std::vector<float> v(120);
  for (int i = 0; i < 120; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return make_tensor<float>({2, 3, 4, 5}, v);
}

Tensor example_3x2x2() { return make_tensor<float>({3, 2, 2}, {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2}); }

TEST(ReduceTest, SumAxesInputKeepdims) {
  Tensor x = example_3x2x2();
  Tensor axes = make_tensor<int64_t>({1}, {1});
  Tensor y = run_one("ReduceSum", {&x, &axes}, {attr_int("keepdims", 1)}, 13);
  expect_shape(y, {3, 1, 2});
  expect_near(values_of<float>(y), {25, 3, 70, 3, 115, 3});
}

TEST(ReduceTest, SumNegativeAxisWithoutKeepdims) {
  Tensor x = example_3x2x2();
  Tensor axes = make_tensor<int64_t>({1}, {-2});
  Tensor y = run_one("ReduceSum", {&x, &axes}, {attr_int("keepdims", 0)}, 13);
  expect_shape(y, {3, 2});
  expect_near(values_of<float>(y), {25, 3, 70, 3, 115, 3});
}

TEST(ReduceTest, SumAttributeAxesBeforeOpset13) {
  Tensor x = example_3x2x2();
  Tensor y = run_one("ReduceSum", {&x}, {attr_ints("axes", {1})}, 11);
  expect_shape(y, {3, 1, 2});
  expect_near(values_of<float>(y), {25, 3, 70, 3, 115, 3});
}

TEST(ReduceTest, EmptyAxesReduceAllOrNothing) {
  Tensor x = example_3x2x2();
  Tensor empty_axes = make_tensor<int64_t>({0}, {});
  Tensor all = run_one("ReduceSum", {&x, &empty_axes}, {attr_int("keepdims", 0)}, 13);
  expect_shape(all, {});
  expect_near(values_of<float>(all), {219});
  Tensor omitted = run_one("ReduceSum", {&x, nullptr}, {}, 13);
  expect_shape(omitted, {1, 1, 1});
  expect_near(values_of<float>(omitted), {219});
  Tensor noop = run_one("ReduceSum", {&x, &empty_axes}, {attr_int("noop_with_empty_axes", 1)}, 13);
  expect_shape(noop, {3, 2, 2});
  expect_near(values_of<float>(noop), {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2});
}

TEST(ReduceTest, NoopAppliesTheElementTransform) {
  Tensor x = make_tensor<float>({3}, {-2, 3, 0.5f});
  Tensor y = run_one("ReduceSumSquare", {&x}, {attr_int("noop_with_empty_axes", 1)}, 18);
  expect_shape(y, {3});
  expect_near(values_of<float>(y), {4, 9, 0.25});
  Tensor l1 = run_one("ReduceL1", {&x}, {attr_int("noop_with_empty_axes", 1)}, 18);
  expect_near(values_of<float>(l1), {2, 3, 0.5});
}

TEST(ReduceTest, NonContiguousAxesUseTheGeneralPath) {
  Tensor x = iota_2x3x4x5();
  Tensor y02 = run_one("ReduceSum", {&x}, {attr_ints("axes", {0, 2}), attr_int("keepdims", 0)}, 11);
  expect_shape(y02, {3, 5});
  expect_near(values_of<float>(y02),
              {300, 308, 316, 324, 332, 460, 468, 476, 484, 492, 620, 628, 636, 644, 652});
  Tensor y13 = run_one("ReduceSum", {&x}, {attr_ints("axes", {3, -3})}, 11);
  expect_shape(y13, {2, 1, 4, 1});
  expect_near(values_of<float>(y13), {330, 405, 480, 555, 1230, 1305, 1380, 1455});
}

TEST(ReduceTest, MeanOverTwoAxes) {
  Tensor x = example_3x2x2();
  Tensor y = run_one("ReduceMean", {&x}, {attr_ints("axes", {0, 2}), attr_int("keepdims", 0)});
  expect_shape(y, {2});
  expect_near(values_of<float>(y), {15.5, 21});
}

TEST(ReduceTest, MeanAxesInputFromOpset18) {
  Tensor x = example_3x2x2();
  Tensor axes = make_tensor<int64_t>({2}, {0, -1});
  Tensor y = run_one("ReduceMean", {&x, &axes}, {attr_int("keepdims", 0)}, 18);
  expect_near(values_of<float>(y), {15.5, 21});
}

TEST(ReduceTest, ProdL1L2SumSquareLogSum) {
  Tensor x = make_tensor<float>({2, 3}, {1, -2, 3, -4, 5, -6});
  Tensor axis1 = make_tensor<int64_t>({1}, {1});
  expect_near(values_of<float>(run_one("ReduceProd", {&x}, {attr_ints("axes", {1})})), {-6, 120});
  expect_near(values_of<float>(run_one("ReduceL1", {&x}, {attr_ints("axes", {0})})), {5, 7, 9});
  expect_near(values_of<float>(run_one("ReduceL2", {&x}, {attr_ints("axes", {1})})),
              {3.7416574954986572, 8.774964332580566});
  expect_near(values_of<float>(run_one("ReduceSumSquare", {&x, &axis1}, {}, 18)), {14, 77});
  Tensor a = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(values_of<float>(run_one("ReduceLogSum", {&a}, {attr_ints("axes", {1})})),
              {1.7917594909667969, 2.70805025100708});
}

TEST(ReduceTest, LogSumExpIsStableForLargeValues) {
  Tensor x = make_tensor<double>({2, 3}, {1000, 1001, 1002, -1, 0, 1});
  Tensor y = run_one("ReduceLogSumExp", {&x}, {attr_ints("axes", {1}), attr_int("keepdims", 0)});
  std::vector<double> got = values_of<double>(y);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], 1002.407605964, 1e-9);
  EXPECT_NEAR(got[1], 1.407605964, 1e-9);
}

TEST(ReduceTest, MaxMinPropagateNaN) {
  Tensor x = make_tensor<float>({2, 3}, {1, kNaN, 3, -4, 5, -kInf});
  expect_near(values_of<float>(run_one("ReduceMax", {&x}, {attr_ints("axes", {-1})})), {kNaN, 5});
  expect_near(values_of<float>(run_one("ReduceMin", {&x}, {attr_ints("axes", {-1})})), {kNaN, -kInf});
  expect_near(values_of<float>(run_one("ReduceMax", {&x}, {attr_ints("axes", {0})})), {1, kNaN, 3});
}

TEST(ReduceTest, ZeroSizeReducedAxisGivesTheIdentity) {
  Tensor x = make_tensor<float>({2, 0}, {});
  auto reduce = [&](const std::string& op) {
    Tensor y = run_one(op, {&x}, {attr_ints("axes", {1}), attr_int("keepdims", 0)}, 11);
    expect_shape(y, {2});
    return values_of<float>(y);
  };
  expect_near(reduce("ReduceSum"), {0, 0});
  expect_near(reduce("ReduceProd"), {1, 1});
  expect_near(reduce("ReduceMax"), {-kInf, -kInf});
  expect_near(reduce("ReduceMin"), {kInf, kInf});
  expect_near(reduce("ReduceMean"), {kNaN, kNaN});
  expect_near(reduce("ReduceL2"), {0, 0});
  expect_near(reduce("ReduceLogSum"), {-kInf, -kInf});
  expect_near(reduce("ReduceLogSumExp"), {-kInf, -kInf});
  Tensor xi = make_tensor<int32_t>({0, 2}, {});
  Tensor yi = run_one("ReduceMax", {&xi}, {attr_ints("axes", {0})});
  EXPECT_EQ(values_of<int32_t>(yi), (std::vector<int32_t>{std::numeric_limits<int32_t>::lowest(),
                                                          std::numeric_limits<int32_t>::lowest()}));
}

TEST(ReduceTest, ZeroSizeKeptAxisGivesAnEmptyOutput) {
  Tensor x = make_tensor<float>({0, 3}, {});
  Tensor y = run_one("ReduceSum", {&x}, {attr_ints("axes", {1})}, 11);
  expect_shape(y, {0, 1});
  EXPECT_EQ(y.numel(), 0);
}

TEST(ReduceTest, IntegerDtypes) {
  Tensor i32 = make_tensor<int32_t>({2, 2}, {1, -2, 3, 7});
  EXPECT_EQ(values_of<int32_t>(run_one("ReduceSum", {&i32}, {attr_ints("axes", {1})}, 11)),
            (std::vector<int32_t>{-1, 10}));
  Tensor i64 = make_tensor<int64_t>({1, 3}, {-7, 0, 1});
  EXPECT_EQ(values_of<int64_t>(run_one("ReduceMean", {&i64}, {attr_ints("axes", {1})})),
            (std::vector<int64_t>{-2}));
  Tensor i8 = make_tensor<int8_t>({2}, {-128, 100});
  EXPECT_EQ(values_of<int8_t>(run_one("ReduceMin", {&i8})), (std::vector<int8_t>{-128}));
  Tensor u8 = make_tensor<uint8_t>({3}, {200, 100, 7});
  EXPECT_EQ(values_of<uint8_t>(run_one("ReduceMax", {&u8})), (std::vector<uint8_t>{200}));
  // Integer sums wrap like numpy's astype.
  EXPECT_EQ(values_of<uint8_t>(run_one("ReduceSum", {&u8}, {}, 11)), (std::vector<uint8_t>{51}));
  Tensor u32 = make_tensor<uint32_t>({2}, {3, 4});
  EXPECT_EQ(values_of<uint32_t>(run_one("ReduceL2", {&u32})), (std::vector<uint32_t>{5}));
}

TEST(ReduceTest, BoolMaxMin) {
  Tensor b = make_tensor<bool>({2, 2}, {true, false, false, false});
  EXPECT_EQ(values_of<bool>(run_one("ReduceMax", {&b}, {attr_ints("axes", {1})})), (std::vector<bool>{true, false}));
  EXPECT_EQ(values_of<bool>(run_one("ReduceMin", {&b}, {attr_ints("axes", {0})})), (std::vector<bool>{false, false}));
  EXPECT_FALSE(run_status("ReduceSum", {&b}, {}, 11).is_ok());
}

TEST(ReduceTest, Float16SumAccumulatesWide) {
  // An f16 running sum of ones sticks at 2048 (2049 is not representable).
  std::vector<Float16> v(4096, Float16(1.0f));
  Tensor x = make_tensor<Float16>({4096}, v);
  Tensor y = run_one("ReduceSum", {&x}, {}, 11);
  EXPECT_EQ(static_cast<float>(values_of<Float16>(y)[0]), 4096.0f);
  Tensor m = run_one("ReduceMean", {&x});
  EXPECT_EQ(static_cast<float>(values_of<Float16>(m)[0]), 1.0f);
}

TEST(ReduceTest, BadAxesAndAttributesAreErrors) {
  Tensor x = example_3x2x2();
  Status out_of_range = run_status("ReduceMean", {&x}, {attr_ints("axes", {3})});
  EXPECT_FALSE(out_of_range.is_ok());
  EXPECT_NE(out_of_range.message().find("out of range"), std::string::npos) << out_of_range.message();
  EXPECT_FALSE(run_status("ReduceMean", {&x}, {attr_ints("axes", {1, -2})}).is_ok());
  Tensor axes = make_tensor<int64_t>({1}, {1});
  EXPECT_FALSE(run_status("ReduceSum", {&x, &axes}, {}, 11).is_ok());
  EXPECT_FALSE(run_status("ReduceMean", {&x}, {attr_ints("axes", {1})}, 18).is_ok());
  EXPECT_FALSE(run_status("ReduceSum", {&x}, {attr_float("keepdims", 1.0f)}, 13).is_ok());
  Tensor float_axes = make_tensor<float>({1}, {1});
  EXPECT_FALSE(run_status("ReduceSum", {&x, &float_axes}, {}, 13).is_ok());
}

TEST(ReduceTest, InferNeedsTheAxesValue) {
  ir::Node node;
  node.name = "r";
  node.op_type = "ReduceSum";
  node.opset = 13;
  std::vector<DType> dtypes = {DType::kF32, DType::kI64};
  std::vector<const Tensor*> constants = {nullptr, nullptr};
  kernels::KernelInit init{node, dtypes, constants, nullptr};
  auto kernel = kernels::create_kernel(init);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().to_string();
  Tensor x(DType::kF32, {3, 2}, nullptr);
  Tensor axes(DType::kI64, {1}, nullptr);
  Tensor y;
  std::vector<const Tensor*> ins = {&x, &axes};
  std::vector<Tensor*> outs = {&y};
  kernels::KernelContext ctx(ins, outs);
  EXPECT_TRUE(kernels::is_needs_value(kernel.value()->infer(ctx)));
}

Tensor softmax_input() { return make_tensor<float>({2, 3, 2}, {1, 2, 3, 4, 5, 6, 0, -1, 7, 1, 2, 2}); }

TEST(SoftmaxTest, AlongAxisFromOpset13) {
  Tensor x = softmax_input();
  Tensor y = run_one("Softmax", {&x}, {attr_int("axis", 1)}, 13);
  expect_shape(y, {2, 3, 2});
  expect_near(values_of<float>(y),
              {0.015876239976466765, 0.015876239976466765, 0.11731042782619838, 0.11731042782619838,
               0.8668133321973349, 0.8668133321973349, 0.0009049591825877397, 0.03511902695933972,
               0.9924082466500291, 0.2594964603424191, 0.006686794167383234, 0.7053845126982411});
}

TEST(SoftmaxTest, CoercesTo2DBeforeOpset13) {
  Tensor x = softmax_input();
  Tensor y = run_one("Softmax", {&x}, {}, 11);
  expect_near(values_of<float>(y),
              {0.00426977854528211, 0.011606461431184656, 0.03154963320110002, 0.08576079462509835,
               0.233122009623613, 0.6336913225737218, 0.0008964610508339357, 0.0003297895904127522,
               0.9830889135841138, 0.0024368337844031876, 0.006624000995118271, 0.006624000995118271});
}

TEST(SoftmaxTest, LogSoftmaxDefaultAxis) {
  Tensor x = softmax_input();
  Tensor y = run_one("LogSoftmax", {&x}, {}, 13);
  expect_near(values_of<float>(y),
              {-1.3132616875182228, -0.3132616875182228, -1.3132616875182228, -0.3132616875182228,
               -1.3132616875182228, -0.3132616875182228, -0.3132616875182228, -1.3132616875182228,
               -0.0024756851377303315, -6.00247568513773, -0.6931471805599453, -0.6931471805599453});
}

TEST(SoftmaxTest, LargeValuesAndInfiniteRows) {
  Tensor x = make_tensor<float>({3, 2}, {10000, 10001, -kInf, -kInf, -kInf, 0});
  Tensor y = run_one("Softmax", {&x}, {}, 13);
  expect_near(values_of<float>(y), {0.2689414213699951, 0.7310585786300049, kNaN, kNaN, 0, 1});
  Tensor l = run_one("LogSoftmax", {&x}, {}, 13);
  expect_near(values_of<float>(l), {-1.3132616875182228, -0.3132616875182228, kNaN, kNaN, -kInf, 0});
}

TEST(SoftmaxTest, HardmaxPicksTheFirstMaximum) {
  Tensor x = make_tensor<float>({2, 3}, {3, 1, 3, -1, 0, 2});
  Tensor y = run_one("Hardmax", {&x}, {}, 13);
  expect_near(values_of<float>(y), {1, 0, 0, 0, 0, 1});
  Tensor a0 = run_one("Hardmax", {&x}, {attr_int("axis", 0)}, 13);
  expect_near(values_of<float>(a0), {1, 1, 1, 0, 0, 0});
}

TEST(SoftmaxTest, ZeroSizeAndBadInputs) {
  Tensor empty = make_tensor<float>({0, 4}, {});
  Tensor y = run_one("Softmax", {&empty}, {}, 13);
  expect_shape(y, {0, 4});
  Tensor x = softmax_input();
  EXPECT_FALSE(run_status("Softmax", {&x}, {attr_int("axis", 3)}, 13).is_ok());
  Tensor ints = make_tensor<int32_t>({2}, {1, 2});
  EXPECT_FALSE(run_status("Softmax", {&ints}, {}, 13).is_ok());
}

TEST(MeanVarianceNormalizationTest, DefaultAxes) {
  Tensor x = make_tensor<float>({1, 2, 2, 2}, {1, 2, 3, 5, 0, 0, 4, -4});
  Tensor y = run_one("MeanVarianceNormalization", {&x}, {}, 13);
  expect_shape(y, {1, 2, 2, 2});
  expect_near(values_of<float>(y), {-1.1832159558199231, -0.5070925524942528, 0.16903085083141758,
                                    1.5212776574827582, 0.0, 0.0, 1.4142135618730949, -1.4142135618730949});
  Tensor rank2 = make_tensor<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(run_status("MeanVarianceNormalization", {&rank2}, {}, 13).is_ok());
}

TEST(LossTest, NegativeLogLikelihoodWithWeights) {
  Tensor x = make_tensor<float>({2, 3}, {-1, -2, -0.5f, -0.25f, -3, -1.5f});
  Tensor target = make_tensor<int64_t>({2}, {2, 0});
  Tensor weight = make_tensor<float>({3}, {1, 2, 0.5f});
  auto nll = [&](const std::string& reduction) {
    return run_one("NegativeLogLikelihoodLoss", {&x, &target, &weight}, {attr_string("reduction", reduction)}, 13);
  };
  Tensor none = nll("none");
  expect_shape(none, {2});
  expect_near(values_of<float>(none), {0.25, 0.25});
  Tensor mean = nll("mean");
  expect_shape(mean, {});
  expect_near(values_of<float>(mean), {0.3333333333333333});
  expect_near(values_of<float>(nll("sum")), {0.5});
}

TEST(LossTest, NegativeLogLikelihoodRejectsBadTargets) {
  Tensor x = make_tensor<float>({2, 3}, {-1, -2, -0.5f, -0.25f, -3, -1.5f});
  Tensor target = make_tensor<int32_t>({2}, {3, 0});
  Status bad = run_status("NegativeLogLikelihoodLoss", {&x, &target}, {}, 13);
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("outside [0, 3)"), std::string::npos) << bad.message();
  Tensor ignored = make_tensor<int32_t>({2}, {3, 0});
  Tensor y = run_one("NegativeLogLikelihoodLoss", {&x, &ignored}, {attr_int("ignore_index", 3)}, 13);
  expect_near(values_of<float>(y), {0.25});
  Tensor wrong_shape = make_tensor<int64_t>({3}, {0, 0, 0});
  EXPECT_FALSE(run_status("NegativeLogLikelihoodLoss", {&x, &wrong_shape}, {}, 13).is_ok());
  EXPECT_FALSE(run_status("NegativeLogLikelihoodLoss", {&x, &target}, {attr_string("reduction", "max")}, 13).is_ok());
}

TEST(LossTest, SoftmaxCrossEntropyWithLogProbAndIgnoreIndex) {
  Tensor scores = make_tensor<float>({1, 3, 2}, {1, 2, 0.5f, -1, 3, 0});
  Tensor labels = make_tensor<int64_t>({1, 2}, {2, 1});
  auto out = run_op("SoftmaxCrossEntropyLoss", {&scores, &labels}, {attr_string("reduction", "none")}, 2, 13);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_shape(out.value()[0], {1, 2});
  expect_near(values_of<float>(out.value()[0]), {0.19673409691961713, 3.1698460195562856});
  expect_near(values_of<float>(out.value()[1]), {-2.196734096919617, -0.16984601955628548, -2.696734096919617,
                                                 -3.1698460195562856, -0.19673409691961713, -2.1698460195562856});
  Tensor mean = run_one("SoftmaxCrossEntropyLoss", {&scores, &labels}, {attr_int("ignore_index", 1)}, 13);
  expect_near(values_of<float>(mean), {0.19673409691961713});
}

}  // namespace
}  // namespace ember::test
