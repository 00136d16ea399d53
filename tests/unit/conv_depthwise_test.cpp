// Conv's f32 depthwise path (one input channel per group) against a direct
// loop in f64 (conv_test_util.h), at every ISA level this CPU has: output
// widths 1..33 and sizes past them around the vector widths (8, 16) and the
// blocks of up to eight vectors, strides 1, 2 and 3 (load, deinterleave and
// gather paths), dilation, asymmetric pads and pads wider than the kernel,
// kernels 1, 3, 5 and 7, 1-D, 2-D and 3-D, batches, channel multipliers, bias
// or none, NaN/Inf inputs and weights, no write past the output, no read
// outside the input (guard pages), and the same bits at 1, 2 and 3 threads.
// Then the Conv op: group == channels takes this path.
// ctest: every ISA level
// ctest: emulated CPUs, gtest filter -ConvDepthwise.ReadsNothingOutsideTheInput
// (Debian's QEMU 7.2 faults on VMASKMOVPS lanes that are masked off, which the
// CPUs do not: the guard-page test runs natively only.)
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "base/isa.h"
#include "conv_test_util.h"
#include "guard_buffer.h"
#include "kernels/conv/conv_f32.h"
#include "kernels/registry.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember::test {
namespace {

using kernels::ConvShape;

constexpr size_t kGuard = 37;
constexpr float kGuardValue = -12345.0f;

// Prefilled with NaN (every output must be written) and followed by guard
// values that must stay.
std::vector<float> run_depthwise(Isa isa, const ConvShape& s, const ConvData& d, bool bias, int threads) {
  const size_t size = static_cast<size_t>(s.batch * s.out_channels * s.w.out_size());
  std::vector<float> y(size, std::numeric_limits<float>::quiet_NaN());
  y.resize(size + kGuard, kGuardValue);
  threading::ScopedThreadLimit limit(threads);
  kernels::conv_f32_depthwise(kernels::dwconv::dwconv_table(isa), s, d.x.data(), d.w.data(),
                              bias ? d.b.data() : nullptr, y.data());
  for (size_t i = size; i < y.size(); ++i) {
    EXPECT_EQ(y[i], kGuardValue) << "wrote " << i - size << " past the output";
  }
  y.resize(size);
  return y;
}

void check_data(const ConvShape& s, const ConvData& d) {
  ASSERT_TRUE(kernels::conv_is_depthwise(s));
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    for (bool bias : {false, true}) {
      SCOPED_TRACE(bias ? "bias" : "no bias");
      const std::vector<float> one = run_depthwise(isa, s, d, bias, 1);
      expect_conv_matches_reference(s, d, bias, one);
      for (int threads : {2, 3}) {
        const std::vector<float> more = run_depthwise(isa, s, d, bias, threads);
        EXPECT_EQ(0, std::memcmp(one.data(), more.data(), one.size() * sizeof(float))) << threads << " threads differ";
      }
    }
  }
}

void check_case(const ConvCase& c, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "N=" << c.batch << " C=" << c.in_channels << " M=" << c.out_channels
                                  << " in=" << c.in[0] << "x" << c.in[1] << "x" << c.in[2] << " kernel=" << c.kernel[0]
                                  << "x" << c.kernel[1] << "x" << c.kernel[2] << " stride=" << c.stride[2]
                                  << " dilation=" << c.dilation[2] << " pads=" << c.pad_begin[2] << ","
                                  << c.pad_end[2]);
  const ConvShape s = conv_shape_of(c);
  check_data(s, make_conv_data(s, seed));
}

// Input widths giving every output width 1..33 and some past it.
std::vector<int64_t> widths_for(int64_t kernel, int64_t stride, int64_t dilation, int64_t pads) {
  std::vector<int64_t> out;
  for (int64_t ow = 1; ow <= 33; ++ow) out.push_back(ow);
  for (int64_t ow : {37, 47, 61, 67, 97, 113, 131, 163, 257}) out.push_back(ow);
  std::vector<int64_t> in;
  for (int64_t ow : out) in.push_back(std::max<int64_t>(1, (ow - 1) * stride + (kernel - 1) * dilation + 1 - pads));
  return in;
}

TEST(ConvDepthwise, EveryWidthOneDimensional) {
  uint32_t seed = 1;
  for (int64_t stride : {1, 2, 3}) {
    for (int64_t kernel : {1, 3, 5}) {
      const int64_t pad = kernel / 2;
      for (int64_t in_w : widths_for(kernel, stride, 1, 2 * pad)) {
        check_case({1, 3, 3, 3, {1, 1, in_w}, {1, 1, kernel}, {1, 1, stride}, {1, 1, 1}, {0, 0, pad}, {0, 0, pad}},
                   seed++);
      }
    }
  }
}

TEST(ConvDepthwise, EveryWidthTwoDimensional) {
  uint32_t seed = 100;
  for (int64_t stride : {1, 2}) {
    for (int64_t in_w : widths_for(3, stride, 1, 2)) {
      check_case({1, 2, 2, 2, {1, 5, in_w}, {1, 3, 3}, {1, stride, stride}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, seed++);
    }
  }
}

TEST(ConvDepthwise, DilationAndAsymmetricPads) {
  check_case({1, 4, 4, 4, {1, 9, 40}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 2}, {0, 2, 2}}, 200);
  check_case({1, 4, 4, 4, {1, 9, 41}, {1, 3, 5}, {1, 2, 2}, {1, 1, 3}, {0, 0, 3}, {0, 2, 0}}, 201);
  check_case({1, 2, 2, 2, {1, 7, 29}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 2, 0}, {0, 0, 2}}, 202);
  check_case({1, 3, 3, 3, {1, 4, 35}, {1, 5, 5}, {1, 1, 2}, {1, 1, 1}, {0, 0, 2}, {0, 4, 1}}, 203);
}

// More padding than kernel: whole rows and vectors of taps outside the input.
TEST(ConvDepthwise, PadsWiderThanKernel) {
  check_case({1, 2, 2, 2, {1, 3, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 4, 21}, {0, 4, 19}}, 300);
  check_case({1, 2, 2, 2, {1, 1, 3}, {1, 1, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 30}, {0, 0, 30}}, 301);
}

TEST(ConvDepthwise, KernelsOneToSeven) {
  uint32_t seed = 400;
  for (int64_t k : {1, 3, 5, 7}) {
    check_case({1, 5, 5, 5, {1, 17, 53}, {1, k, k}, {1, 1, 1}, {1, 1, 1}, {0, k / 2, k / 2}, {0, k / 2, k / 2}},
               seed++);
    check_case({1, 5, 5, 5, {1, 1, 131}, {1, 1, k}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, seed++);
  }
}

TEST(ConvDepthwise, BatchesMultipliersAndThreeDimensions) {
  check_case({3, 4, 4, 4, {1, 6, 19}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 500);
  check_case({2, 3, 6, 3, {1, 5, 23}, {1, 3, 3}, {1, 2, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 501);  // 2 per channel
  check_case({1, 1, 4, 1, {1, 1, 50}, {1, 1, 5}, {1, 1, 1}, {1, 1, 1}, {0, 0, 2}, {0, 0, 2}}, 502);  // group 1, C 1
  check_case({2, 3, 3, 3, {5, 6, 21}, {3, 3, 3}, {2, 1, 1}, {1, 1, 2}, {1, 1, 2}, {0, 1, 2}}, 503);
}

TEST(ConvDepthwise, ZeroSize) {
  check_case({0, 3, 3, 3, {1, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 600);
  check_case({2, 3, 3, 3, {1, 0, 4}, {1, 1, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 601);  // only padding
}

// NaN and infinities at the row ends and inside, in the input and in the
// weights: they reach exactly the outputs whose in-bounds taps read them.
TEST(ConvDepthwise, NanAndInfPropagate) {
  for (int64_t stride : {1, 2, 3}) {
    const ConvShape s =
        conv_shape_of({1, 3, 3, 3, {1, 6, 45}, {1, 3, 3}, {1, stride, stride}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
    ConvData d = make_conv_data(s, 700);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    d.x[0] = nan;
    d.x[44] = inf;
    d.x[2 * 45 + 20] = -inf;
    d.x[s.w.in_size() + 3 * 45 + 44] = nan;
    d.w[9 + 4] = inf;   // channel 1's center tap
    d.w[18 + 0] = nan;  // channel 2's corner tap
    SCOPED_TRACE(stride);
    check_data(s, d);
  }
}

// The input against a guard page at either end: whatever the pads and strides,
// no load takes a float from outside X (masked-off vector lanes may reach past
// it; the CPU suppresses their faults).
TEST(ConvDepthwise, ReadsNothingOutsideTheInput) {
  for (int64_t stride : {1, 2, 3}) {
    for (int64_t in_w = 1; in_w <= 80; ++in_w) {
      const ConvShape s = conv_shape_of(
          {1, 2, 2, 2, {1, 3, in_w}, {1, 3, 3}, {1, 1, stride}, {1, 1, 1}, {0, 1, 2}, {0, 1, 2}});
      const ConvData d = make_conv_data(s, 1000 + static_cast<uint32_t>(in_w));
      for (GuardAt at : kBothGuards) {
        const GuardedBuffer<float> x(std::span<const float>(d.x), at);
        for (Isa isa : available_isas()) {
          SCOPED_TRACE(testing::Message() << isa_name(isa) << " stride " << stride << " width " << in_w << " "
                                          << guard_name(at));
          std::vector<float> y(static_cast<size_t>(s.out_channels * s.w.out_size()));
          kernels::conv_f32_depthwise(kernels::dwconv::dwconv_table(isa), s, x.data(), d.w.data(), d.b.data(),
                                      y.data());
          expect_conv_matches_reference(s, d, true, y);
        }
      }
    }
  }
}

// Through the Conv op: group == channels runs the depthwise path, the same
// bits as calling it. (An infinite corner weight tells the paths apart: the
// GEMM path multiplies it by the padding's zeros, NaN on the border.)
TEST(ConvDepthwise, ConvOpTakesThisPath) {
  const ConvShape s = conv_shape_of({2, 8, 8, 8, {1, 12, 35}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
  ConvData d = make_conv_data(s, 800);
  d.w[0] = std::numeric_limits<float>::infinity();
  Tensor x = make_tensor<float>({2, 8, 12, 35}, d.x);
  Tensor w = make_tensor<float>({8, 1, 3, 3}, d.w);
  Tensor b = make_tensor<float>({8}, d.b);
  auto r = run_op("Conv", {&x, &w, &b}, {attr_int("group", 8), attr_ints("pads", {1, 1, 1, 1})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<float> got = values_of<float>(r.value()[0]);
  std::vector<float> want(got.size());
  kernels::conv_f32_depthwise(kernels::dwconv::dwconv_table(), s, d.x.data(), d.w.data(), d.b.data(), want.data());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
  EXPECT_FALSE(std::isnan(got[0]));
}

}  // namespace
}  // namespace ember::test
