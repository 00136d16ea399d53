#pragma once
// The oracle of the f32 Conv tests (conv_gemm_test, conv_depthwise_test): a
// direct loop in f64 over the in-bounds taps, and the check of a result
// against it.
//
// Tolerance per output: 1e-5 * (sum of |x * w| over its taps + |bias|) + 1e-6.
// The fast paths sum the same products in f32 in another grouping (K blocks,
// FMA), each rounding at most 2^-24 relative to a partial sum that is at most
// that magnitude; 1e-5 (about 170 roundings' worth) covers the K of these
// cases.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/conv/conv_f32.h"

namespace ember::test {

struct ConvCase {
  int64_t batch, in_channels, out_channels, group;
  std::array<int64_t, 3> in, kernel, stride, dilation, pad_begin, pad_end;
};

inline kernels::ConvShape conv_shape_of(const ConvCase& c) {
  kernels::ConvShape s{c.batch, c.in_channels, c.out_channels, c.group, {}};
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
inline std::vector<double> conv_reference(const kernels::ConvShape& s, const std::vector<float>& x,
                                          const std::vector<float>& wt, const float* bias, bool absolute) {
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

inline std::vector<float> conv_random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

struct ConvData {
  std::vector<float> x, w, b;
};

inline ConvData make_conv_data(const kernels::ConvShape& s, uint32_t seed) {
  return {conv_random_floats(static_cast<size_t>(s.batch * s.in_channels * s.w.in_size()), seed),
          conv_random_floats(static_cast<size_t>(s.out_channels * (s.in_channels / s.group) * s.w.kernel_size()),
                             seed + 1),
          conv_random_floats(static_cast<size_t>(s.out_channels), seed + 2)};
}

inline void expect_conv_matches_reference(const kernels::ConvShape& s, const ConvData& d, bool bias,
                                          const std::vector<float>& got) {
  const std::vector<double> want = conv_reference(s, d.x, d.w, bias ? d.b.data() : nullptr, false);
  const std::vector<double> magnitude = conv_reference(s, d.x, d.w, bias ? d.b.data() : nullptr, true);
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

}  // namespace ember::test
