// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear against values
// worked out by hand (round half to even, saturation) and the ONNX examples.
// ctest: every ISA level
// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "base/isa.h"
#include "guard_buffer.h"
#include "kernels/quant/qgemm.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember {
namespace {

using test::make_tensor;
using test::run_op;
using test::values_of;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(QuantizeLinear, PerTensorRoundsHalfToEvenAndSaturates) {
  const Tensor x = make_tensor<float>({12}, {0.0f, 1.5f, 2.5f, -1.5f, -2.5f, 300.0f, -300.0f, kNaN, kInf, -kInf,
                                             -0.0f, 1e-40f});
  const Tensor scale = make_tensor<float>({}, {1.0f});
  const Tensor zp = make_tensor<uint8_t>({}, {128});
  auto y = run_op("QuantizeLinear", {&x, &scale, &zp});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // NaN clamps to the low end, as ONNX Runtime's MAXPS-based clamp does.
  EXPECT_EQ(values_of<uint8_t>((*y)[0]),
            (std::vector<uint8_t>{128, 130, 130, 126, 126, 255, 0, 0, 255, 0, 128, 128}));
  auto y0 = run_op("QuantizeLinear", {&x, &scale});
  ASSERT_TRUE(y0.is_ok()) << y0.status().to_string();
  EXPECT_EQ(values_of<uint8_t>((*y0)[0]), (std::vector<uint8_t>{0, 2, 2, 0, 0, 255, 0, 0, 255, 0, 0, 0}));
}

TEST(QuantizeLinear, PerAxisAndBlockedInt8) {
  const Tensor x = make_tensor<float>({2, 4}, {1.0f, 3.0f, 5.0f, 7.0f, -1.0f, -3.0f, 250.0f, -600.0f});
  const Tensor scale = make_tensor<float>({4}, {1.0f, 2.0f, 4.0f, 2.0f});
  const Tensor zp = make_tensor<int8_t>({4}, {0, 1, -1, 3});
  auto y = run_op("QuantizeLinear", {&x, &scale, &zp}, {test::attr_int("axis", 1)}, 1, 13);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  // 3/2 = 1.5 -> 2, 5/4 = 1.25 -> 1, 7/2 = 3.5 -> 4; -3/2 = -1.5 -> -2, 250/4 = 62.5 -> 62.
  EXPECT_EQ(values_of<int8_t>((*y)[0]), (std::vector<int8_t>{1, 3, 0, 7, -1, -1, 61, -128}));

  const Tensor bscale = make_tensor<float>({2, 2}, {1.0f, 2.0f, 4.0f, 8.0f});
  const Tensor bzp = make_tensor<int8_t>({2, 2}, {0, 0, 10, -10});
  auto yb = run_op("QuantizeLinear", {&x, &bscale, &bzp}, {test::attr_int("axis", 1), test::attr_int("block_size", 2)},
                   1, 21);
  ASSERT_TRUE(yb.is_ok()) << yb.status().to_string();
  // Row 0: /1 /1 /2 /2; row 1: /4 +10, /4 +10, /8 -10, /8 -10.
  EXPECT_EQ(values_of<int8_t>((*yb)[0]), (std::vector<int8_t>{1, 3, 2, 4, 10, 9, 21, -85}));
}

TEST(QuantizeLinear, SixteenBitOutputsAndHalfInputs) {
  const Tensor x = make_tensor<float>({4}, {1.0f, -70000.0f, 70000.0f, 2.5f});
  const Tensor scale = make_tensor<float>({}, {0.5f});
  const Tensor zp = make_tensor<int16_t>({}, {-7});
  auto y = run_op("QuantizeLinear", {&x, &scale, &zp}, {}, 1, 21);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int16_t>((*y)[0]), (std::vector<int16_t>{-5, -32768, 32767, -2}));
  auto yu = run_op("QuantizeLinear", {&x, &scale}, {test::attr_int("output_dtype", static_cast<int64_t>(DType::kU16))},
                   1, 21);
  ASSERT_TRUE(yu.is_ok()) << yu.status().to_string();
  EXPECT_EQ(values_of<uint16_t>((*yu)[0]), (std::vector<uint16_t>{2, 0, 65535, 5}));

  const Tensor xh = make_tensor<Float16>({3}, {Float16(0.75f), Float16(-1.25f), Float16(1000.0f)});
  const Tensor sh = make_tensor<Float16>({}, {Float16(0.5f)});
  auto yh = run_op("QuantizeLinear", {&xh, &sh}, {}, 1, 19);
  ASSERT_TRUE(yh.is_ok()) << yh.status().to_string();
  EXPECT_EQ(values_of<uint8_t>((*yh)[0]), (std::vector<uint8_t>{2, 0, 255}));
}

TEST(DequantizeLinear, PerTensorPerAxisAndTypes) {
  const Tensor x = make_tensor<uint8_t>({2, 3}, {0, 128, 255, 1, 2, 3});
  const Tensor scale = make_tensor<float>({}, {0.5f});
  const Tensor zp = make_tensor<uint8_t>({}, {128});
  auto y = run_op("DequantizeLinear", {&x, &scale, &zp});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>((*y)[0]), (std::vector<float>{-64.0f, 0.0f, 63.5f, -63.5f, -63.0f, -62.5f}));

  const Tensor xs = make_tensor<int8_t>({2, 3}, {-128, 0, 127, 1, -1, 5});
  const Tensor ascale = make_tensor<float>({2}, {2.0f, 0.25f});
  const Tensor azp = make_tensor<int8_t>({2}, {1, -1});
  auto ya = run_op("DequantizeLinear", {&xs, &ascale, &azp}, {test::attr_int("axis", 0)}, 1, 13);
  ASSERT_TRUE(ya.is_ok()) << ya.status().to_string();
  EXPECT_EQ(values_of<float>((*ya)[0]), (std::vector<float>{-258.0f, -2.0f, 252.0f, 0.5f, 0.0f, 1.5f}));

  const Tensor xi = make_tensor<int32_t>({3}, {-1000000, 0, 123456789});
  const Tensor si = make_tensor<float>({}, {0.125f});
  auto yi = run_op("DequantizeLinear", {&xi, &si});
  ASSERT_TRUE(yi.is_ok()) << yi.status().to_string();
  EXPECT_EQ(values_of<float>((*yi)[0]), (std::vector<float>{-125000.0f, 0.0f, 15432099.0f}));

  const Tensor x16 = make_tensor<uint16_t>({2}, {0, 65535});
  const Tensor sh = make_tensor<Float16>({}, {Float16(2.0f)});
  const Tensor zp16 = make_tensor<uint16_t>({}, {32768});
  auto yh = run_op("DequantizeLinear", {&x16, &sh, &zp16}, {}, 1, 21);
  ASSERT_TRUE(yh.is_ok()) << yh.status().to_string();
  ASSERT_EQ((*yh)[0].dtype(), DType::kF16);
  // -65536 and 65534 are past f16's largest finite value, 65504.
  EXPECT_EQ(static_cast<float>((*yh)[0].data_as<Float16>()[0]), -kInf);
  EXPECT_EQ(static_cast<float>((*yh)[0].data_as<Float16>()[1]), kInf);
}

TEST(DequantizeLinear, BlockedRejectsMismatchedScale) {
  const Tensor x = make_tensor<uint8_t>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor scale = make_tensor<float>({2, 3}, {1, 1, 1, 1, 1, 1});
  auto y = run_op("DequantizeLinear", {&x, &scale}, {test::attr_int("axis", 1), test::attr_int("block_size", 2)}, 1,
                  21);
  EXPECT_FALSE(y.is_ok());
}

TEST(DequantizeLinear, RejectsZeroPointOfAnotherType) {
  const Tensor x = make_tensor<uint8_t>({4}, {0, 1, 2, 3});
  const Tensor scale = make_tensor<float>({}, {0.5f});
  const Tensor zp = make_tensor<float>({}, {1.0f});
  auto y = run_op("DequantizeLinear", {&x, &scale, &zp}, {}, 1, 21);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("x_zero_point"), std::string::npos) << y.status().to_string();
}

TEST(DynamicQuantizeLinear, OnnxExamples) {
  // The examples of the ONNX operator documentation (checked with numpy).
  const Tensor x = make_tensor<float>({6}, {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f});
  auto y = run_op("DynamicQuantizeLinear", {&x}, {}, 3, 11);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_of<uint8_t>((*y)[0]), (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ((*y)[1].data_as<float>()[0], 0.019607844f);
  EXPECT_EQ((*y)[2].data_as<uint8_t>()[0], 153);

  const Tensor neg = make_tensor<float>({6}, {-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f});
  auto yn = run_op("DynamicQuantizeLinear", {&neg}, {}, 3, 11);
  ASSERT_TRUE(yn.is_ok()) << yn.status().to_string();
  EXPECT_EQ(values_of<uint8_t>((*yn)[0]), (std::vector<uint8_t>{191, 121, 172, 96, 42, 0}));
  EXPECT_FLOAT_EQ((*yn)[1].data_as<float>()[0], 0.015686275f);
  EXPECT_EQ((*yn)[2].data_as<uint8_t>()[0], 255);

  const Tensor zeros = make_tensor<float>({3}, {0.0f, 0.0f, 0.0f});
  auto yz = run_op("DynamicQuantizeLinear", {&zeros}, {}, 3, 11);
  ASSERT_TRUE(yz.is_ok()) << yz.status().to_string();
  EXPECT_EQ((*yz)[1].data_as<float>()[0], 1.0f);
  EXPECT_EQ((*yz)[2].data_as<uint8_t>()[0], 0);
}

// Inputs for the microkernels: ties, values past both ends, NaN, infinities,
// signed zeros and denormals among random values.
std::vector<float> special_inputs(int64_t n, std::mt19937& rng) {
  const float specials[] = {2.5f, -2.5f, 3.5f, 0.5f, -0.5f, 1e9f, -1e9f, kNaN, kInf, -kInf, 0.0f, -0.0f, 1e-40f,
                            -1e-40f};
  std::vector<float> x(static_cast<size_t>(n) + 1);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = i % 5 == 4 ? specials[(i / 5) % std::size(specials)] : std::uniform_real_distribution<float>(-200, 200)(rng);
  }
  return x;
}

TEST(QuantizeMicrokernels, EveryIsaAndTailAgainstLrint) {
  std::mt19937 rng(11);
  for (Isa isa : available_isas()) {
    const auto& t = kernels::quant::qgemm_table(isa);
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1031}) {
      const std::vector<float> x = special_inputs(n, rng);
      const std::span<const float> values = std::span(x).subspan(1);
      // Input and output against a guard page, at the end and at the start.
      for (test::GuardAt at : test::kBothGuards) {
        const test::GuardedBuffer<float> gx(values, at);
        for (bool is_signed : {false, true}) {
          const int32_t zp = is_signed ? -5 : 131;
          const float scale = 0.5f;
          test::GuardedBuffer<uint8_t> y(static_cast<size_t>(n), 0xEE, at);
          t.f32_quantize(gx.data(), y.data(), n, scale, zp, is_signed);
          for (int64_t i = 0; i < n; ++i) {
            const float v = x[static_cast<size_t>(i) + 1];
            const double lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
            const double q = std::isnan(v) ? lo : std::clamp(static_cast<double>(std::lrint(std::clamp(
                                                                 static_cast<double>(v / scale), -1e6, 1e6))) + zp,
                                                             lo, hi);
            const uint8_t want = static_cast<uint8_t>(static_cast<int32_t>(q));
            ASSERT_EQ(y[static_cast<size_t>(i)], want)
                << isa_name(isa) << " n=" << n << " x=" << v << " " << test::guard_name(at);
          }
        }
        float lo = 1, hi = -1;
        t.f32_range(gx.data(), n, &lo, &hi);
        float want_lo = 0, want_hi = 0;
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[static_cast<size_t>(i) + 1];
          if (std::isnan(v)) continue;
          want_lo = std::min(want_lo, v);
          want_hi = std::max(want_hi, v);
        }
        EXPECT_EQ(lo, want_lo) << isa_name(isa) << " n=" << n << " " << test::guard_name(at);
        EXPECT_EQ(hi, want_hi) << isa_name(isa) << " n=" << n << " " << test::guard_name(at);
      }
    }
  }
}

TEST(Quantize, SameBitsForOneAndTwoThreads) {
  std::mt19937 rng(3);
  Tensor x = Tensor::allocate(DType::kF32, {64, 1500});
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = std::uniform_real_distribution<float>(-9, 7)(rng);
  std::vector<float> sv(1500);
  for (auto& s : sv) s = std::uniform_real_distribution<float>(0.01f, 0.1f)(rng);
  const Tensor scale = make_tensor<float>({1500}, sv);
  std::vector<std::vector<uint8_t>> q, d;
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto y = run_op("DynamicQuantizeLinear", {&x}, {}, 3, 11);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    q.push_back(values_of<uint8_t>((*y)[0]));
    auto ya = run_op("QuantizeLinear", {&x, &scale}, {test::attr_int("axis", 1)}, 1, 13);
    ASSERT_TRUE(ya.is_ok()) << ya.status().to_string();
    d.push_back(values_of<uint8_t>((*ya)[0]));
  }
  EXPECT_EQ(q[0], q[1]);
  EXPECT_EQ(d[0], d[1]);
}

}  // namespace
}  // namespace ember
