// Resize: the fast f32 NCHW path against the reference path over odd sizes,
// up- and downsampling, 1x1 and zero-size tensors, NaN/Inf inputs and several
// thread counts; and the reference's coordinate rules against values worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/tensor.h"
#include "kernels/image/resize.h"
#include "threading/thread_pool.h"

namespace ember::kernels::image {
namespace {

std::vector<AxisPlan> plans_for(const ResizeParams& p, const Shape& in, const Shape& out) {
  std::vector<AxisPlan> plans;
  for (size_t d = 0; d < in.size(); ++d) {
    double scale = in[d] == 0 ? 1.0 : static_cast<double>(out[d]) / static_cast<double>(in[d]);
    plans.push_back(plan_resize_axis(p, in[d], out[d], scale, 0.0, 1.0));
  }
  return plans;
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  float* x = t.data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) x[i] = dist(rng);
  return t;
}

void expect_paths_agree(const ResizeParams& p, const Tensor& in, const Shape& out_shape) {
  std::vector<AxisPlan> plans = plans_for(p, in.shape(), out_shape);
  ASSERT_TRUE(can_resize_nchw_f32(in, plans));
  Tensor expected = Tensor::allocate(DType::kF32, out_shape);
  resize_reference(in, expected, plans, p);
  for (int threads : {1, 3}) {
    threading::ScopedThreadLimit limit(threads);
    Tensor got = Tensor::allocate(DType::kF32, out_shape);
    resize_nchw_f32(in, got, plans);
    const float* e = expected.data_as<float>();
    const float* g = got.data_as<float>();
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (std::isnan(e[i])) {
        EXPECT_TRUE(std::isnan(g[i])) << "element " << i << " of " << shape_to_string(out_shape);
      } else if (std::isinf(e[i])) {
        EXPECT_EQ(e[i], g[i]) << "element " << i << " of " << shape_to_string(out_shape);
      } else {
        EXPECT_NEAR(e[i], g[i], 1e-5 + 1e-5 * std::abs(e[i])) << "element " << i << " of " << shape_to_string(out_shape);
      }
    }
  }
}

std::vector<ResizeParams> fast_params() {
  std::vector<ResizeParams> all;
  for (CoordMode c : {CoordMode::kHalfPixel, CoordMode::kAlignCorners, CoordMode::kAsymmetric,
                      CoordMode::kPytorchHalfPixel, CoordMode::kHalfPixelSymmetric}) {
    ResizeParams linear;
    linear.mode = ResizeMode::kLinear;
    linear.coord = c;
    all.push_back(linear);
    for (NearestMode n : {NearestMode::kRoundPreferFloor, NearestMode::kRoundPreferCeil, NearestMode::kFloor,
                          NearestMode::kCeil}) {
      ResizeParams nearest;
      nearest.coord = c;
      nearest.nearest = n;
      all.push_back(nearest);
    }
  }
  return all;
}

TEST(ResizeFast, MatchesReferenceOverShapes) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 1, 1, 1}, {1, 1, 1, 1}},     {{1, 1, 1, 1}, {1, 1, 3, 5}},   {{2, 3, 5, 7}, {2, 3, 11, 13}},
      {{1, 2, 9, 17}, {1, 2, 4, 6}},    {{1, 4, 8, 8}, {1, 4, 16, 16}}, {{3, 1, 7, 3}, {3, 1, 2, 9}},
      {{1, 5, 6, 6}, {1, 5, 6, 13}},    {{1, 5, 6, 6}, {1, 5, 1, 6}},   {{0, 3, 4, 4}, {0, 3, 8, 8}},
      {{2, 0, 4, 4}, {2, 0, 3, 3}},     {{1, 2, 4, 5}, {1, 2, 0, 5}},   {{1, 1, 33, 65}, {1, 1, 17, 129}},
  };
  uint32_t seed = 1;
  for (const auto& [in_shape, out_shape] : cases) {
    Tensor in = random_tensor(in_shape, seed++);
    for (const ResizeParams& p : fast_params()) {
      SCOPED_TRACE(shape_to_string(in_shape) + " -> " + shape_to_string(out_shape));
      expect_paths_agree(p, in, out_shape);
    }
  }
}

TEST(ResizeFast, SpreadsNaNAndInfAsReference) {
  Tensor in = random_tensor({2, 2, 5, 6}, 7);
  float* x = in.data_as<float>();
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[17] = std::numeric_limits<float>::infinity();
  x[40] = -std::numeric_limits<float>::infinity();
  x[41] = std::numeric_limits<float>::infinity();
  x[59] = std::numeric_limits<float>::quiet_NaN();
  for (const ResizeParams& p : fast_params()) {
    expect_paths_agree(p, in, {2, 2, 9, 11});
    expect_paths_agree(p, in, {2, 2, 3, 4});
  }
}

TEST(ResizeFast, RefusesWhatItDoesNotCover) {
  Tensor in = random_tensor({1, 2, 4, 4}, 3);
  ResizeParams cubic;
  cubic.mode = ResizeMode::kCubic;
  EXPECT_FALSE(can_resize_nchw_f32(in, plans_for(cubic, in.shape(), {1, 2, 8, 8})));
  ResizeParams linear;
  linear.mode = ResizeMode::kLinear;
  EXPECT_FALSE(can_resize_nchw_f32(in, plans_for(linear, in.shape(), {1, 4, 8, 8})));
  linear.antialias = true;
  EXPECT_FALSE(can_resize_nchw_f32(in, plans_for(linear, in.shape(), {1, 2, 2, 2})));
  ResizeParams crop;
  crop.mode = ResizeMode::kLinear;
  crop.coord = CoordMode::kTfCropAndResize;
  std::vector<AxisPlan> plans = plans_for(crop, in.shape(), {1, 2, 4, 4});
  plans[3] = plan_resize_axis(crop, 4, 4, 1.0, -0.5, 1.5);
  EXPECT_FALSE(can_resize_nchw_f32(in, plans));
}

std::vector<double> resize_1d(const ResizeParams& p, std::vector<double> values, int64_t out_len, double scale,
                              double roi_start = 0.0, double roi_end = 1.0) {
  Tensor in = Tensor::allocate(DType::kF64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), in.data_as<double>());
  Tensor out = Tensor::allocate(DType::kF64, {out_len});
  std::vector<AxisPlan> plans = {plan_resize_axis(p, in.dim(0), out_len, scale, roi_start, roi_end)};
  resize_reference(in, out, plans, p);
  return std::vector<double>(out.data_as<double>(), out.data_as<double>() + out_len);
}

TEST(ResizeReference, CoordinateRulesByHand) {
  ResizeParams linear;
  linear.mode = ResizeMode::kLinear;
  EXPECT_EQ(resize_1d(linear, {1, 2}, 4, 2.0), (std::vector<double>{1, 1.25, 1.75, 2}));
  linear.coord = CoordMode::kAlignCorners;
  EXPECT_EQ(resize_1d(linear, {1, 2, 3}, 5, 5.0 / 3), (std::vector<double>{1, 1.5, 2, 2.5, 3}));
  ResizeParams nearest;
  nearest.coord = CoordMode::kAsymmetric;
  nearest.nearest = NearestMode::kFloor;
  EXPECT_EQ(resize_1d(nearest, {1, 2, 3}, 6, 2.0), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  // half_pixel 0.6x: source coordinates 0.333 and 2 round to pixels 0 and 2.
  nearest.coord = CoordMode::kHalfPixel;
  nearest.nearest = NearestMode::kRoundPreferFloor;
  EXPECT_EQ(resize_1d(nearest, {1, 2, 3, 4}, 2, 0.6), (std::vector<double>{1, 3}));
  ResizeParams crop;
  crop.mode = ResizeMode::kLinear;
  crop.coord = CoordMode::kTfCropAndResize;
  crop.extrapolation_value = 10;
  // roi [-0.5, 1.5] over 3 pixels: coordinates -1, 1, 3; the ends extrapolate.
  EXPECT_EQ(resize_1d(crop, {1, 2, 3}, 3, 1.0, -0.5, 1.5), (std::vector<double>{10, 2, 10}));
}

TEST(ResizeReference, IntegersRoundHalfToEven) {
  ResizeParams linear;
  linear.mode = ResizeMode::kLinear;
  Tensor in = Tensor::allocate(DType::kU8, {2});
  in.data_as<uint8_t>()[0] = 0;
  in.data_as<uint8_t>()[1] = 2;
  Tensor out = Tensor::allocate(DType::kU8, {4});
  std::vector<AxisPlan> plans = {plan_resize_axis(linear, 2, 4, 2.0, 0, 1)};
  resize_reference(in, out, plans, linear);
  // 0, 0.5, 1.5, 2
  EXPECT_EQ(out.data_as<uint8_t>()[1], 0);
  EXPECT_EQ(out.data_as<uint8_t>()[2], 2);
}

}  // namespace
}  // namespace ember::kernels::image
