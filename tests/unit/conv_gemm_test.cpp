// Conv's f32 im2col + sgemm path against a direct loop in f64: odd sizes,
// groups (depthwise too), strides, dilations, pads (wider than the kernel),
// the pointwise shortcut, chunks that end inside a line, zero-size batches and
// channels, NaN/Inf inputs, and the same bits for every thread count. (Infinite
// weights are left out: im2col multiplies them by the padding's zeros, NaN as in
// ONNX's zero-padded definition, where the loop here skips padding taps.)
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "kernels/conv/conv_gemm.h"
#include "threading/thread_pool.h"

namespace ember::test {
namespace {

using kernels::ConvGemmShape;

struct Case {
  int64_t batch, in_channels, out_channels, group;
  std::array<int64_t, 3> in, kernel, stride, dilation, pad_begin, pad_end;
};

ConvGemmShape shape_of(const Case& c) {
  ConvGemmShape s{c.batch, c.in_channels, c.out_channels, c.group, {}};
  for (int d = 0; d < 3; ++d) {
    s.w.in[d] = c.in[d];
    s.w.kernel[d] = c.kernel[d];
    s.w.stride[d] = c.stride[d];
    s.w.dilation[d] = c.dilation[d];
    s.w.pad_begin[d] = c.pad_begin[d];
    s.w.pad_end[d] = c.pad_end[d];
    const int64_t span = c.in[d] + c.pad_begin[d] + c.pad_end[d] - ((c.kernel[d] - 1) * c.dilation[d] + 1);
    s.w.out[d] = span / c.stride[d] + 1;
  }
  return s;
}

// The plain loop; `absolute` sums |x| * |w| (+ |bias|) for the error bound.
std::vector<double> reference(const ConvGemmShape& s, const std::vector<float>& x, const std::vector<float>& wt,
                              const float* bias, bool absolute) {
  const kernels::Window3d& w = s.w;
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  std::vector<double> y(static_cast<size_t>(s.batch * s.out_channels * w.out_size()));
  const auto v = [absolute](float f) { return absolute ? std::abs(double{f}) : double{f}; };
  size_t o = 0;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.out_channels; ++m) {
      for (int64_t od = 0; od < w.out[0]; ++od) {
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
            double acc = bias ? v(bias[m]) : 0.0;
            for (int64_t c = 0; c < cpg; ++c) {
              const int64_t ci = (m / mpg) * cpg + c;
              for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
                const int64_t id = od * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
                for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
                  const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
                  for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
                    const int64_t iw = ow * w.stride[2] - w.pad_begin[2] + kw * w.dilation[2];
                    if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1] || iw < 0 || iw >= w.in[2]) continue;
                    const float xv = x[static_cast<size_t>(((n * s.in_channels + ci) * w.in[0] + id) * w.in[1] * w.in[2] +
                                                           ih * w.in[2] + iw)];
                    const float wv = wt[static_cast<size_t>(((m * cpg + c) * w.kernel[0] + kd) * w.kernel[1] * w.kernel[2] +
                                                            kh * w.kernel[2] + kw)];
                    acc += v(xv) * v(wv);
                  }
                }
              }
            }
            y[o] = acc;
          }
        }
      }
    }
  }
  return y;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

struct Data {
  std::vector<float> x, w, b;
};

Data make_data(const ConvGemmShape& s, uint32_t seed) {
  return {random_floats(static_cast<size_t>(s.batch * s.in_channels * s.w.in_size()), seed),
          random_floats(static_cast<size_t>(s.out_channels * (s.in_channels / s.group) * s.w.kernel_size()), seed + 1),
          random_floats(static_cast<size_t>(s.out_channels), seed + 2)};
}

std::vector<float> run_gemm(const ConvGemmShape& s, const Data& d, bool bias, int threads) {
  threading::ScopedThreadLimit limit(threads);
  // Prefilled with NaN: every output must be written before it is read.
  std::vector<float> y(static_cast<size_t>(s.batch * s.out_channels * s.w.out_size()),
                       std::numeric_limits<float>::quiet_NaN());
  kernels::conv_f32_gemm(s, d.x.data(), d.w.data(), bias ? d.b.data() : nullptr, y.data());
  return y;
}

void expect_matches_reference(const ConvGemmShape& s, const Data& d, bool bias, const std::vector<float>& got) {
  const std::vector<double> want = reference(s, d.x, d.w, bias ? d.b.data() : nullptr, false);
  const std::vector<double> magnitude = reference(s, d.x, d.w, bias ? d.b.data() : nullptr, true);
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
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
                                  << " kernel=" << c.kernel[0] << "x" << c.kernel[1] << "x" << c.kernel[2]);
  const ConvGemmShape s = shape_of(c);
  const Data d = make_data(s, seed);
  for (bool bias : {false, true}) {
    const std::vector<float> one = run_gemm(s, d, bias, 1);
    expect_matches_reference(s, d, bias, one);
    const std::vector<float> four = run_gemm(s, d, bias, 4);
    ASSERT_EQ(one.size(), four.size());
    EXPECT_EQ(0, std::memcmp(one.data(), four.data(), one.size() * sizeof(float))) << "thread counts differ";
  }
}

TEST(ConvGemm, OneDimensional) {
  check_case({1, 5, 7, 1, {1, 1, 23}, {1, 1, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 1}, {0, 0, 1}}, 1);
  check_case({2, 6, 4, 2, {1, 1, 30}, {1, 1, 3}, {1, 1, 2}, {1, 1, 3}, {0, 0, 2}, {0, 0, 0}}, 2);
}

TEST(ConvGemm, TwoDimensional) {
  check_case({1, 3, 5, 1, {1, 9, 11}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 3);
  check_case({2, 4, 6, 2, {1, 7, 8}, {1, 2, 3}, {1, 2, 3}, {1, 2, 1}, {0, 1, 0}, {0, 0, 2}}, 4);
  check_case({1, 8, 8, 8, {1, 13, 13}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 5);  // depthwise
  check_case({1, 2, 3, 1, {1, 3, 4}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 4, 5}, {0, 4, 5}}, 6);  // pads > kernel
}

TEST(ConvGemm, ThreeDimensional) {
  check_case({1, 3, 4, 1, {4, 5, 6}, {2, 3, 2}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}}, 7);
}

TEST(ConvGemm, Pointwise) {
  check_case({2, 17, 33, 1, {1, 9, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 8);
  check_case({1, 6, 4, 2, {1, 9, 7}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 9);  // strided: im2col
  check_case({1, 4, 1, 1, {1, 1, 10}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 10);  // one output row
}

// More column floats than one GEMM holds: chunk boundaries fall inside a line.
TEST(ConvGemm, ChunkedImages) {
  check_case({1, 16, 4, 1, {1, 200, 200}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 11);
}

TEST(ConvGemm, ZeroSize) {
  check_case({0, 3, 4, 1, {1, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 12);
  check_case({2, 0, 4, 1, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 13);  // output = bias
}

TEST(ConvGemm, NanAndInfPropagate) {
  const Case c{1, 3, 4, 1, {1, 6, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
  const ConvGemmShape s = shape_of(c);
  Data d = make_data(s, 14);
  d.x[0] = std::numeric_limits<float>::quiet_NaN();
  d.x[s.w.in_size() + 17] = std::numeric_limits<float>::infinity();
  d.x[2 * s.w.in_size() + 41] = -std::numeric_limits<float>::infinity();
  for (bool bias : {false, true}) expect_matches_reference(s, d, bias, run_gemm(s, d, bias, 1));
}

}  // namespace
}  // namespace ember::test
