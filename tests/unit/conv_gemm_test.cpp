// Conv's f32 GEMM path (packed filter against im2col panels) against a direct
// loop in f64 (conv_test_util.h), at every ISA level: odd sizes, groups
// (depthwise too), strides, dilations, pads (wider than the kernel), the
// pointwise shortcut, panels that end inside a line, K deeper than one block,
// zero-size batches and channels, NaN/Inf inputs, nothing touched outside X
// and Y (guard pages), and the same bits for every thread count. (Infinite
// weights are left out: im2col multiplies them by the padding's zeros, NaN as
// in ONNX's zero-padded definition, where the loop here skips padding taps.)
// ctest: every ISA level
// ctest: emulated CPUs
#include <cstring>
#include <limits>
#include <span>
#include <string>
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

std::vector<float> run_gemm(Isa isa, const ConvShape& s, const ConvData& d, bool bias, int threads) {
  kernels::ConvFilter filter;
  filter.pack(kernels::sgemm::sgemm_table(isa), d.w.data(), bias ? d.b.data() : nullptr, s.out_channels, s.group,
              s.in_channels / s.group * s.w.kernel_size());
  threading::ScopedThreadLimit limit(threads);
  // Prefilled with NaN: every output must be written before it is read.
  std::vector<float> y(static_cast<size_t>(s.batch * s.out_channels * s.w.out_size()),
                       std::numeric_limits<float>::quiet_NaN());
  kernels::conv_f32_gemm(s, filter, d.x.data(), y.data());
  return y;
}

// At every ISA level this CPU has, with and without bias: the reference's
// values at one thread, the same bits at two and three.
void check_case(const ConvCase& c, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "N=" << c.batch << " C=" << c.in_channels << " M=" << c.out_channels
                                  << " group=" << c.group << " in=" << c.in[0] << "x" << c.in[1] << "x" << c.in[2]
                                  << " kernel=" << c.kernel[0] << "x" << c.kernel[1] << "x" << c.kernel[2]);
  const ConvShape s = conv_shape_of(c);
  const ConvData d = make_conv_data(s, seed);
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    for (bool bias : {false, true}) {
      const std::vector<float> one = run_gemm(isa, s, d, bias, 1);
      expect_conv_matches_reference(s, d, bias, one);
      for (int threads : {2, 3}) {
        const std::vector<float> more = run_gemm(isa, s, d, bias, threads);
        ASSERT_EQ(one.size(), more.size());
        EXPECT_TRUE(one.empty() || std::memcmp(one.data(), more.data(), one.size() * sizeof(float)) == 0)
            << threads << " threads differ";
      }
    }
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

// Panels of output positions that begin and end inside a line.
TEST(ConvGemm, PanelsAcrossLines) {
  check_case({1, 16, 4, 1, {1, 40, 45}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 11);
  check_case({1, 3, 14, 1, {1, 23, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 0}, {0, 1, 2}}, 15);
}

// K (channels x taps, plus the bias column) cut into blocks: Whisper's strided
// 1-D shape and a 2-D one.
TEST(ConvGemm, DeepK) {
  check_case({1, 96, 20, 1, {1, 1, 75}, {1, 1, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1}, {0, 0, 1}}, 16);
  check_case({2, 40, 13, 1, {1, 6, 37}, {1, 3, 3}, {1, 1, 1}, {1, 2, 1}, {0, 2, 1}, {0, 1, 1}}, 17);
}

TEST(ConvGemm, ZeroSize) {
  check_case({0, 3, 4, 1, {1, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 12);
  check_case({2, 0, 4, 1, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 13);  // output = bias
}

TEST(ConvGemm, NanAndInfPropagate) {
  const ConvCase c{1, 3, 4, 1, {1, 6, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
  const ConvShape s = conv_shape_of(c);
  ConvData d = make_conv_data(s, 14);
  d.x[0] = std::numeric_limits<float>::quiet_NaN();
  d.x[s.w.in_size() + 17] = std::numeric_limits<float>::infinity();
  d.x[2 * s.w.in_size() + 41] = -std::numeric_limits<float>::infinity();
  for (Isa isa : available_isas()) {
    for (bool bias : {false, true}) expect_conv_matches_reference(s, d, bias, run_gemm(isa, s, d, bias, 1));
  }
}

// X and Y against a guard page at either end: im2col reads and the tiles
// write nothing outside them (masked-off vector lanes may reach past; the CPU
// suppresses their faults), pointwise, strided and padded, at every level.
TEST(ConvGemm, TouchesNothingOutsideXAndY) {
  const ConvCase cases[] = {
      {1, 5, 7, 1, {1, 1, 23}, {1, 1, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 2}, {0, 0, 2}},
      {1, 6, 13, 1, {1, 7, 9}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 4, 3, 1, {1, 5, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
  };
  uint32_t seed = 1100;
  for (const ConvCase& c : cases) {
    const ConvShape s = conv_shape_of(c);
    const ConvData d = make_conv_data(s, seed++);
    for (Isa isa : available_isas()) {
      kernels::ConvFilter filter;
      filter.pack(kernels::sgemm::sgemm_table(isa), d.w.data(), d.b.data(), s.out_channels, s.group,
                  s.in_channels / s.group * s.w.kernel_size());
      for (GuardAt at : kBothGuards) {
        SCOPED_TRACE(testing::Message() << isa_name(isa) << " " << guard_name(at) << " M=" << c.out_channels);
        const GuardedBuffer<float> x(std::span<const float>(d.x), at);
        GuardedBuffer<float> y(static_cast<size_t>(s.out_channels * s.w.out_size()), at);
        kernels::conv_f32_gemm(s, filter, x.data(), y.data());
        expect_conv_matches_reference(s, d, true, std::vector<float>(y.begin(), y.end()));
      }
    }
  }
}

// The Conv op with W and B given as constants or at run time: constants are
// packed once at creation (and their inputs released), with the same bits.
Result<std::vector<Tensor>> run_conv(const std::vector<const Tensor*>& inputs, bool constant, int64_t group,
                                     bool* prepacked) {
  ir::Node node;
  node.name = "test_Conv";
  node.op_type = "Conv";
  node.opset = 17;
  node.attributes = {attr_int("group", group), attr_ints("pads", {1, 1, 1, 1})};
  std::vector<DType> dtypes;
  std::vector<const Tensor*> constants;
  for (size_t i = 0; i < inputs.size(); ++i) {
    dtypes.push_back(inputs[i]->dtype());
    constants.push_back(constant && i > 0 ? inputs[i] : nullptr);
  }
  node.num_explicit_inputs = inputs.size();
  kernels::KernelInit init{node, dtypes, constants, nullptr};
  EMBER_ASSIGN_OR_RETURN(auto kernel, kernels::create_kernel(init));
  *prepacked = kernel->prepacked_input(1) && kernel->prepacked_input(2) && kernel->packed_bytes() > 0;
  return kernels::evaluate(*kernel, inputs, 1);
}

TEST(ConvGemm, ConstantFilterPackedOnceWithTheSameBits) {
  const ConvShape s = conv_shape_of({2, 6, 14, 2, {1, 9, 17}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
  const ConvData d = make_conv_data(s, 900);
  Tensor x = make_tensor<float>({2, 6, 9, 17}, d.x);
  Tensor w = make_tensor<float>({14, 3, 3, 3}, d.w);
  Tensor b = make_tensor<float>({14}, d.b);
  bool packed = false;
  auto runtime = run_conv({&x, &w, &b}, false, 2, &packed);
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().to_string();
  EXPECT_FALSE(packed);
  auto constant = run_conv({&x, &w, &b}, true, 2, &packed);
  ASSERT_TRUE(constant.is_ok()) << constant.status().to_string();
  EXPECT_TRUE(packed);
  const std::vector<float> a = values_of<float>(runtime.value()[0]), c = values_of<float>(constant.value()[0]);
  expect_conv_matches_reference(s, d, true, c);
  ASSERT_EQ(a.size(), c.size());
  EXPECT_EQ(0, std::memcmp(a.data(), c.data(), a.size() * sizeof(float)));

  // Depthwise reads W as it is: nothing packed.
  Tensor x1 = make_tensor<float>({1, 2, 4, 4}, std::vector<float>(32, 1.0f));
  Tensor w1 = make_tensor<float>({2, 1, 3, 3}, std::vector<float>(18, 1.0f));
  Tensor b1 = make_tensor<float>({2}, {0.5f, -0.5f});
  ASSERT_TRUE(run_conv({&x1, &w1, &b1}, true, 2, &packed).is_ok());
  EXPECT_FALSE(packed);
}

}  // namespace
}  // namespace ember::test
