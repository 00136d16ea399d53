// The small ops: the random family (RandomUniformLike, Bernoulli, Dropout)
// against numpy's RandomState, Det, NonMaxSuppression, CumProd, Shrink,
// ReverseSequence, LpNormalization, GroupNormalization and the training mode
// of BatchNormalization. Expected values were computed with
// numpy (and onnx.reference) by hand.
#include <cmath>
#include <cstdint>
#include <vector>

#include "unit/op_test_util.h"

namespace ember {
namespace {

using test::attr_float;
using test::attr_int;
using test::make_tensor;
using test::run_op;
using test::values_of;

Tensor bool_scalar(bool v) { return make_tensor<bool>({}, {v}); }

// numpy.random.RandomState(0).random_sample(3), bit for bit.
TEST(RandomUniformLike, SeedGivesNumpysRandomStateValues) {
  Tensor like = Tensor::allocate(DType::kF64, {3});
  auto r = run_op("RandomUniformLike", {&like}, {attr_float("seed", 0.0f)}, 1, 22);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<double>(r.value()[0]),
            (std::vector<double>{0.5488135039273248, 0.7151893663724195, 0.6027633760716439}));
}

TEST(RandomUniformLike, ScalesToLowHighInTheOutputDtype) {
  Tensor like = Tensor::allocate(DType::kI32, {2, 2});
  auto r = run_op("RandomUniformLike", {&like},
                  {attr_float("seed", 0.0f), attr_float("low", -2.0f), attr_float("high", 2.0f),
                   attr_int("dtype", static_cast<int64_t>(DType::kF32))},
                  1, 22);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<float> y = values_of<float>(r.value()[0]);
  EXPECT_FLOAT_EQ(y[0], 0.5488135039273248f * 4.0f - 2.0f);
  for (float v : y) EXPECT_TRUE(v >= -2.0f && v < 2.0f) << v;
}

TEST(RandomUniformLike, WithoutSeedEachRunDraws) {
  Tensor like = Tensor::allocate(DType::kF32, {64});
  auto a = run_op("RandomUniformLike", {&like}, {}, 1, 22);
  auto b = run_op("RandomUniformLike", {&like}, {}, 1, 22);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE(values_of<float>(a.value()[0]), values_of<float>(b.value()[0]));
}

TEST(RandomUniformLike, IntegerOutputDtypeIsRefused) {
  Tensor like = Tensor::allocate(DType::kF32, {2});
  auto r = run_op("RandomUniformLike", {&like}, {attr_int("dtype", static_cast<int64_t>(DType::kI32))}, 1, 22);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("int32"), std::string::npos) << r.status().to_string();
}

// numpy.random.RandomState(5).binomial(1, p): p == 0 still takes a draw, p > 0.5
// counts failures of 1 - p.
TEST(Bernoulli, SeedGivesNumpysBinomialValues) {
  Tensor p = make_tensor<float>({7}, {0.0f, 0.3f, 0.7f, 1.0f, 0.5f, 0.1f, 0.9f});
  auto r = run_op("Bernoulli", {&p}, {attr_float("seed", 5.0f), attr_int("dtype", static_cast<int64_t>(DType::kI64))},
                  1, 22);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{0, 1, 1, 1, 0, 0, 1}));
}

TEST(Bernoulli, ProbabilityOutsideZeroOneIsAnError) {
  Tensor p = make_tensor<float>({2}, {0.5f, std::nanf("")});
  auto r = run_op("Bernoulli", {&p}, {}, 1, 22);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("input[1]"), std::string::npos) << r.status().to_string();
}

TEST(Dropout, InferenceIsIdentityWithAllOnesMask) {
  Tensor x = make_tensor<float>({2, 2}, {1, -2, 3, NAN});
  Tensor ratio = make_tensor<float>({}, {0.9f});
  auto r = run_op("Dropout", {&x, &ratio}, {attr_int("seed", 0)}, 2, 22);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<float> y = values_of<float>(r.value()[0]);
  EXPECT_EQ(y[0], 1);
  EXPECT_EQ(y[2], 3);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(values_of<bool>(r.value()[1]), (std::vector<bool>{true, true, true, true}));
}

TEST(Dropout, OldOpsetMaskHasTheDataType) {
  Tensor x = make_tensor<float>({2}, {1, 2});
  auto r = run_op("Dropout", {&x}, {attr_float("ratio", 0.3f)}, 2, 7);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[1]), (std::vector<float>{1, 1}));
}

// Kept where RandomState(0).random_sample() >= ratio, scaled by 1 / (1 - ratio):
// the samples are 0.549, 0.715, 0.603, 0.545, 0.424, 0.646.
TEST(Dropout, TrainingModeMasksWithTheSeededSamples) {
  Tensor x = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor ratio = make_tensor<float>({}, {0.6f});
  Tensor training = bool_scalar(true);
  auto r = run_op("Dropout", {&x, &ratio, &training}, {attr_int("seed", 0)}, 2, 22);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<bool>(r.value()[1]), (std::vector<bool>{false, true, true, false, false, true}));
  const std::vector<float> y = values_of<float>(r.value()[0]);
  EXPECT_FLOAT_EQ(y[1], 2.0f / 0.4f);
  EXPECT_EQ(y[0], 0.0f);
}

TEST(Dropout, TrainingRatioOfOneIsAnError) {
  Tensor x = make_tensor<float>({2}, {1, 2});
  Tensor ratio = make_tensor<float>({}, {1.0f});
  Tensor training = bool_scalar(true);
  auto r = run_op("Dropout", {&x, &ratio, &training}, {}, 1, 22);
  EXPECT_FALSE(r.is_ok());
}

TEST(Det, BatchedWithPivotingSingularAndEmpty) {
  // [[0, 1], [1, 0]] needs a row swap: det -1. The second is singular.
  Tensor m = make_tensor<float>({3, 2, 2}, {0, 1, 1, 0, 1, 2, 2, 4, 2, 1, 7, 5});
  auto r = run_op("Det", {&m}, {}, 1, 22);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].shape(), (Shape{3}));
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{-1, 0, 3}));

  Tensor empty = Tensor::allocate(DType::kF64, {0, 0});
  auto e = run_op("Det", {&empty}, {}, 1, 22);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(values_of<double>(e.value()[0]), (std::vector<double>{1.0}));

  Tensor not_square = Tensor::allocate(DType::kF32, {2, 3});
  EXPECT_FALSE(run_op("Det", {&not_square}, {}, 1, 22).is_ok());
}

TEST(Det, ThreeByThree) {
  Tensor m = make_tensor<double>({3, 3}, {2, -3, 1, 2, 0, -1, 1, 4, 5});
  auto r = run_op("Det", {&m}, {}, 1, 22);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_NEAR(values_of<double>(r.value()[0])[0], 49.0, 1e-12);
}

// Two classes over four boxes, flipped corners in box 1; score ties keep the
// lower box index first.
TEST(NonMaxSuppression, PerClassWithThresholdsAndFlippedCorners) {
  Tensor boxes = make_tensor<float>({1, 4, 4}, {0, 0, 1, 1,  1.1f, 1, 0.1f, 0,  0, 10, 1, 11,  0, 0.5f, 1, 1.5f});
  Tensor scores = make_tensor<float>({1, 2, 4}, {0.9f, 0.8f, 0.7f, 0.7f,  0.1f, 0.6f, 0.6f, 0.05f});
  Tensor max_boxes = make_tensor<int64_t>({1}, {3});
  Tensor iou = make_tensor<float>({1}, {0.5f});
  Tensor score_threshold = make_tensor<float>({1}, {0.08f});
  auto r = run_op("NonMaxSuppression", {&boxes, &scores, &max_boxes, &iou, &score_threshold}, {}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // Class 0: box 0, box 1 suppressed (IoU 0.82), box 2, box 3 (IoU 1/3 with box 0) would be
  // the fourth but max is 3. Class 1: boxes 1, 2; box 0 (0.1) loses to box 1's overlap; box 3 under the threshold.
  EXPECT_EQ(r.value()[0].shape(), (Shape{5, 3}));
  EXPECT_EQ(values_of<int64_t>(r.value()[0]),
            (std::vector<int64_t>{0, 0, 0, 0, 0, 2, 0, 0, 3, 0, 1, 1, 0, 1, 2}));
}

TEST(NonMaxSuppression, NoMaxOutputSelectsNothing) {
  Tensor boxes = make_tensor<float>({1, 1, 4}, {0, 0, 1, 1});
  Tensor scores = make_tensor<float>({1, 1, 1}, {0.9f});
  auto r = run_op("NonMaxSuppression", {&boxes, &scores}, {}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].shape(), (Shape{0, 3}));
}

TEST(CumProd, ExclusiveReverseAndIntegerWrap) {
  Tensor x = make_tensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axis = make_tensor<int64_t>({}, {1});
  auto r = run_op("CumProd", {&x, &axis}, {attr_int("exclusive", 1), attr_int("reverse", 1)}, 1, 26);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{6, 3, 1, 30, 6, 1}));

  // 65536 * 65536 wraps to 0 in int32: products wrap in the element type.
  Tensor big = make_tensor<int32_t>({3}, {65536, 65536, -3});
  Tensor axis0 = make_tensor<int64_t>({}, {0});
  auto w = run_op("CumProd", {&big, &axis0}, {}, 1, 26);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(values_of<int32_t>(w.value()[0]), (std::vector<int32_t>{65536, 0, 0}));
}

// Integer Shrink shifts in double and then truncates, as the reference's astype
// does: a bias of 0.5 must not become 0.
TEST(Shrink, IntegerInputShiftsByTheFractionalBias) {
  Tensor x = make_tensor<int32_t>({5}, {-3, -1, 0, 1, 3});
  auto r = run_op("Shrink", {&x}, {attr_float("lambd", 0.5f), attr_float("bias", 0.5f)}, 1, 9);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{-2, 0, 0, 0, 2}));
}

TEST(ReverseSequence, BatchAxisZeroAndLengthsOutOfRange) {
  // [batch 2, time 3, 1]: the first two steps of batch 0 reversed, all three of batch 1.
  Tensor x = make_tensor<float>({2, 3, 1}, {1, 2, 3, 4, 5, 6});
  Tensor lens = make_tensor<int64_t>({2}, {2, 3});
  std::vector<ir::Attribute> attrs = {attr_int("batch_axis", 0), attr_int("time_axis", 1)};
  auto r = run_op("ReverseSequence", {&x, &lens}, attrs, 1, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{2, 1, 3, 6, 5, 4}));

  Tensor too_long = make_tensor<int64_t>({2}, {1, 4});
  auto e = run_op("ReverseSequence", {&x, &too_long}, attrs, 1, 10);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().to_string().find("sequence_lens[1] = 4"), std::string::npos) << e.status().to_string();
}

TEST(LpNormalization, ZeroNormGivesZero) {
  Tensor x = make_tensor<float>({2, 2}, {3, -4, 0, 0});
  auto l2 = run_op("LpNormalization", {&x}, {attr_int("axis", 1), attr_int("p", 2)}, 1, 22);
  ASSERT_TRUE(l2.is_ok()) << l2.status().to_string();
  EXPECT_EQ(values_of<float>(l2.value()[0]), (std::vector<float>{0.6f, -0.8f, 0, 0}));
  auto l1 = run_op("LpNormalization", {&x}, {attr_int("axis", 0), attr_int("p", 1)}, 1, 22);
  ASSERT_TRUE(l1.is_ok()) << l1.status().to_string();
  EXPECT_EQ(values_of<float>(l1.value()[0]), (std::vector<float>{1, -1, 0, 0}));
  EXPECT_FALSE(run_op("LpNormalization", {&x}, {attr_int("p", 3)}, 1, 22).is_ok());
}

// One instance, 4 channels in 2 groups of [a, -a] (mean 0, variance a^2), epsilon 0:
// normalized values are +-1. Opset 18 scales per group, opset 21 per channel.
TEST(GroupNormalization, Opset18ScalesPerGroupOpset21PerChannel) {
  Tensor x = make_tensor<float>({1, 4, 1}, {2, -2, 5, -5});
  Tensor group_scale = make_tensor<float>({2}, {1, 10});
  Tensor group_bias = make_tensor<float>({2}, {0, 1});
  std::vector<ir::Attribute> attrs = {attr_int("num_groups", 2), attr_float("epsilon", 0.0f)};
  auto r18 = run_op("GroupNormalization", {&x, &group_scale, &group_bias}, attrs, 1, 18);
  ASSERT_TRUE(r18.is_ok()) << r18.status().to_string();
  EXPECT_EQ(values_of<float>(r18.value()[0]), (std::vector<float>{1, -1, 11, -9}));

  Tensor channel_scale = make_tensor<float>({4}, {1, 2, 3, 4});
  Tensor channel_bias = make_tensor<float>({4}, {0, 0, 0, 1});
  auto r21 = run_op("GroupNormalization", {&x, &channel_scale, &channel_bias}, attrs, 1, 21);
  ASSERT_TRUE(r21.is_ok()) << r21.status().to_string();
  EXPECT_EQ(values_of<float>(r21.value()[0]), (std::vector<float>{1, -2, 3, -3}));
  EXPECT_FALSE(run_op("GroupNormalization", {&x, &group_scale, &group_bias}, attrs, 1, 21).is_ok());
}

// Batch statistics per channel; running stats = input * momentum + batch * (1 - momentum).
TEST(BatchNormalization, TrainingModeOutputsRunningStatistics) {
  Tensor x = make_tensor<float>({2, 1, 2}, {1, 3, 5, 7});
  Tensor one = make_tensor<float>({1}, {1});
  Tensor zero = make_tensor<float>({1}, {0});
  Tensor mean = make_tensor<float>({1}, {10});
  Tensor var = make_tensor<float>({1}, {2});
  auto r = run_op("BatchNormalization", {&x, &one, &zero, &mean, &var},
                  {attr_int("training_mode", 1), attr_float("momentum", 0.5f), attr_float("epsilon", 0.0f)}, 3, 15);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<float> y = values_of<float>(r.value()[0]);
  EXPECT_NEAR(y[0], -3.0 / std::sqrt(5.0), 1e-6);
  EXPECT_NEAR(y[3], 3.0 / std::sqrt(5.0), 1e-6);
  EXPECT_FLOAT_EQ(values_of<float>(r.value()[1])[0], 10 * 0.5f + 4 * 0.5f);
  EXPECT_FLOAT_EQ(values_of<float>(r.value()[2])[0], 2 * 0.5f + 5 * 0.5f);
}

}  // namespace
}  // namespace ember
