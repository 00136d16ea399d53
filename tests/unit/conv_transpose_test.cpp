// ConvTranspose's f32 GEMM + col2im path against the direct loop run in f64:
// odd sizes, groups, strides, dilations, pads, chunked images (a chunk boundary
// inside a line), zero-size batches and channels, NaN/Inf inputs, and the same
// bits for every thread count. Then the op itself on ONNX's attribute forms.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/conv/conv_transpose.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember::test {
namespace {

using kernels::ConvTransposeShape;

struct Case {
  int64_t batch, in_channels, out_channels, group;
  std::array<int64_t, 3> in, kernel, stride, dilation, pad_begin, out_pad;
};

// The output size of the full (unpadded) transposed window, less pads and plus output_padding.
ConvTransposeShape shape_of(const Case& c) {
  ConvTransposeShape s{c.batch, c.in_channels, c.out_channels, c.group, {}};
  for (int d = 0; d < 3; ++d) {
    s.w.in[d] = c.in[d];
    s.w.kernel[d] = c.kernel[d];
    s.w.stride[d] = c.stride[d];
    s.w.dilation[d] = c.dilation[d];
    s.w.pad_begin[d] = c.pad_begin[d];
    s.w.out[d] = c.stride[d] * (c.in[d] - 1) + (c.kernel[d] - 1) * c.dilation[d] + 1 - 2 * c.pad_begin[d] + c.out_pad[d];
  }
  return s;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

std::vector<double> to_f64(const std::vector<float>& v, bool absolute) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = absolute ? std::abs(double{v[i]}) : double{v[i]};
  return out;
}

struct Data {
  std::vector<float> x, w, b;
};

Data make_data(const ConvTransposeShape& s, uint32_t seed) {
  const int64_t k = s.w.kernel_size();
  return {random_floats(static_cast<size_t>(s.batch * s.in_channels * s.w.in_size()), seed),
          random_floats(static_cast<size_t>(s.in_channels * (s.out_channels / s.group) * k), seed + 1),
          random_floats(static_cast<size_t>(s.out_channels), seed + 2)};
}

std::vector<float> run_gemm(const ConvTransposeShape& s, const Data& d, bool bias, int threads) {
  threading::ScopedThreadLimit limit(threads);
  // Prefilled with NaN: every output must be written, none read.
  std::vector<float> y(static_cast<size_t>(s.batch * s.out_channels * s.w.out_size()),
                       std::numeric_limits<float>::quiet_NaN());
  kernels::conv_transpose_f32_gemm(s, d.x.data(), d.w.data(), bias ? d.b.data() : nullptr, y.data());
  return y;
}

// Compares with the f64 reference; the bound scales with the sum of |terms|.
void expect_matches_reference(const ConvTransposeShape& s, const Data& d, bool bias, const std::vector<float>& got) {
  const size_t n = got.size();
  std::vector<double> want(n), magnitude(n);
  const std::vector<double> bd = to_f64(d.b, false), bm = to_f64(d.b, true);
  const std::vector<double> xd = to_f64(d.x, false), xm = to_f64(d.x, true);
  const std::vector<double> wd = to_f64(d.w, false), wm = to_f64(d.w, true);
  kernels::conv_transpose_ref<double>(s, xd.data(), wd.data(), bias ? bd.data() : nullptr, want.data());
  kernels::conv_transpose_ref<double>(s, xm.data(), wm.data(), bias ? bm.data() : nullptr, magnitude.data());
  int reported = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i])
                    : std::isinf(want[i]) ? got[i] == want[i]
                                          : std::abs(got[i] - want[i]) <= 1e-5 * magnitude[i] + 1e-6;
    if (!ok && reported++ < 5) ADD_FAILURE() << "output " << i << ": got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(reported, 0) << "mismatches";
}

void check_case(const Case& c, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "N=" << c.batch << " C=" << c.in_channels << " M=" << c.out_channels
                                  << " group=" << c.group << " in=" << c.in[0] << "x" << c.in[1] << "x" << c.in[2]
                                  << " kernel=" << c.kernel[0] << "x" << c.kernel[1] << "x" << c.kernel[2]
                                  << " stride=" << c.stride[0] << "," << c.stride[1] << "," << c.stride[2]);
  const ConvTransposeShape s = shape_of(c);
  const Data d = make_data(s, seed);
  for (bool bias : {false, true}) {
    const std::vector<float> one = run_gemm(s, d, bias, 1);
    expect_matches_reference(s, d, bias, one);
    const std::vector<float> four = run_gemm(s, d, bias, 4);
    ASSERT_EQ(one.size(), four.size());
    EXPECT_EQ(0, std::memcmp(one.data(), four.data(), one.size() * sizeof(float))) << "thread counts differ";
  }
}

TEST(ConvTransposeGemm, OneDimensional) {
  check_case({1, 3, 5, 1, {1, 1, 7}, {1, 1, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 1);
  check_case({2, 4, 6, 2, {1, 1, 13}, {1, 1, 5}, {1, 1, 3}, {1, 1, 2}, {0, 0, 2}, {0, 0, 1}}, 2);
  check_case({1, 1, 1, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 3);
}

TEST(ConvTransposeGemm, TwoDimensionalStridesDilationsPads) {
  check_case({1, 2, 3, 1, {1, 5, 7}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 0}}, 4);
  check_case({2, 6, 9, 3, {1, 4, 5}, {1, 2, 3}, {1, 3, 1}, {1, 2, 3}, {0, 0, 1}, {0, 2, 0}}, 5);
  check_case({1, 8, 8, 8, {1, 9, 11}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 0, 0}}, 6);  // depthwise
  check_case({1, 17, 33, 1, {1, 6, 3}, {1, 4, 4}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 0, 0}}, 7);
}

TEST(ConvTransposeGemm, ThreeDimensional) {
  check_case({1, 3, 4, 1, {3, 4, 5}, {2, 3, 2}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1}, {1, 0, 0}}, 8);
  check_case({2, 4, 4, 2, {2, 3, 3}, {3, 3, 3}, {1, 1, 1}, {2, 1, 1}, {2, 1, 1}, {0, 0, 0}}, 9);
}

// Padding so large that some taps fall outside on both sides of every line.
TEST(ConvTransposeGemm, PadsWiderThanTheKernel) {
  check_case({1, 2, 2, 1, {1, 3, 4}, {1, 5, 5}, {1, 1, 3}, {1, 2, 1}, {0, 5, 3}, {0, 0, 2}}, 10);
}

// More column floats than one GEMM holds: chunk boundaries fall inside a line (2-D)
// and inside the only line (1-D).
TEST(ConvTransposeGemm, ChunkedImages) {
  check_case({1, 2, 16, 1, {1, 200, 200}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 0, 0}}, 11);
  check_case({1, 2, 64, 1, {1, 1, 8000}, {1, 1, 9}, {1, 1, 3}, {1, 1, 1}, {0, 0, 4}, {0, 0, 2}}, 12);
}

TEST(ConvTransposeGemm, ZeroSize) {
  check_case({0, 3, 4, 1, {1, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 13);
  // No input channels: the output is the bias.
  check_case({2, 0, 4, 1, {1, 3, 3}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 14);
}

TEST(ConvTransposeGemm, NanAndInfPropagate) {
  const Case c{1, 3, 4, 1, {1, 6, 7}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
  const ConvTransposeShape s = shape_of(c);
  Data d = make_data(s, 15);
  d.x[0] = std::numeric_limits<float>::quiet_NaN();
  d.x[s.w.in_size() + 17] = std::numeric_limits<float>::infinity();
  d.x[2 * s.w.in_size() + 41] = std::numeric_limits<float>::quiet_NaN();
  d.w[5] = std::numeric_limits<float>::infinity();
  for (bool bias : {false, true}) expect_matches_reference(s, d, bias, run_gemm(s, d, bias, 1));
}

Tensor run_conv_transpose(const Tensor& x, const Tensor& w, std::vector<ir::Attribute> attrs) {
  auto out = run_op("ConvTranspose", {&x, &w}, std::move(attrs), 1, 17);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out.is_ok()) return {};
  return std::move(out.value()[0]);
}

// ONNX's convtranspose_autopad_same: SAME_UPPER puts the odd padding unit at the end.
TEST(ConvTransposeOp, AutoPadSameUpperShape) {
  Tensor x = make_tensor<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  Tensor w = make_tensor<float>({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  Tensor y = run_conv_transpose(x, w, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2})});
  EXPECT_EQ(shape_to_string(y.shape()), shape_to_string(Shape{1, 2, 6, 6}));
  const std::vector<float> v = values_of<float>(y);
  // Row 0 is the first tap row (no padding before); column 0 likewise.
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[2], 2.0f);
}

TEST(ConvTransposeOp, OutputShapeLargerThanTheWindowPadsWithBias) {
  Tensor x = make_tensor<float>({1, 1, 2}, {1.0f, 2.0f});
  Tensor w = make_tensor<float>({1, 1, 2}, {1.0f, 10.0f});
  Tensor b = make_tensor<float>({1}, {0.5f});
  auto out = run_op("ConvTranspose", {&x, &w, &b}, {attr_ints("output_shape", {5})}, 1, 17);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<float>(out.value()[0]), (std::vector<float>{1.5f, 12.5f, 20.5f, 0.5f, 0.5f}));
}

TEST(ConvTransposeOp, RejectsMismatchedWeights) {
  Tensor x = make_tensor<float>({1, 2, 3}, std::vector<float>(6, 1.0f));
  Tensor w = make_tensor<float>({3, 1, 2}, std::vector<float>(6, 1.0f));
  auto out = run_op("ConvTranspose", {&x, &w}, {}, 1, 17);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().to_string().find("group"), std::string::npos) << out.status().to_string();
}

}  // namespace
}  // namespace ember::test
