// Every unary microkernel at every ISA level against the scalar table (tails,
// guard pages on either side, unaligned pointers, in place, NaN/Inf/+-0/denormals),
// and the table-backed op objects: f16/bf16 against the f32 result rounded, 1 vs 2
// threads, and the com.microsoft Gelu family against values computed in float64 with Python's math.
// ctest: every ISA level
// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "base/isa.h"
#include "guard_buffer.h"
#include "kernels/elementwise/unary_ukernels.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

constexpr int kNumKinds = static_cast<int>(UnaryKind::kCount);

// The parameters the op table (src/ops/unary_ops.def) gives each kind's tests.
UnaryParams params_for(UnaryKind k) {
  static constexpr UnaryParams kParams[] = {
#define EMBER_UNARY_KIND(Kind, cost, alpha, beta, gamma, ...) {alpha, beta, gamma},
#include "ops/unary_ops.def"
  };
  return kParams[static_cast<int>(k)];
}

// Results whose size falls below `floor` are compared absolutely (cancellation
// near a zero crossing: HardSigmoid at -2.5, the Gelu family's tails).
double floor_for(UnaryKind k) {
  switch (k) {
    case UnaryKind::kHardSigmoid: case UnaryKind::kHardSwish: case UnaryKind::kGelu: case UnaryKind::kGeluTanh:
    case UnaryKind::kQuickGelu: case UnaryKind::kSilu: case UnaryKind::kMish: return 1.0;
    case UnaryKind::kSin: case UnaryKind::kCos: return 1e-6;
    default: return 0x1p-126;
  }
}

bool close(float got, float want, double floor) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  const double scale = std::max(std::fabs(static_cast<double>(want)), floor);
  return std::fabs(static_cast<double>(got) - want) <= 8 * scale * 0x1p-23;  // 8 ulp against the scalar path
}

std::vector<float> inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-12.0f, 12.0f);
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, 100.0f, -100.0f, 0.5f, -2.5f};
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = (i % 5 == 3) ? specials[(i / 5) % 11] : d(rng);
  return x;
}

TEST(UnarySimd, EveryKindEveryIsaMatchesScalar) {
  const int64_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1031};
  const UnaryTable& scalar = unary_table(Isa::kScalar);
  for (Isa isa : available_isas()) {
    for (int k = 0; k < kNumKinds; ++k) {
      const UnaryKind kind = static_cast<UnaryKind>(k);
      const UnaryParams p = params_for(kind);
      for (int64_t n : sizes) {
        const std::vector<float> x0 = inputs(n + 1, static_cast<uint32_t>(k * 131 + n));
        const std::span<const float> values = std::span(x0).subspan(1);
        std::vector<float> want(n);
        scalar.get(kind)(values.data(), want.data(), n, p);
        // Guard pages instead of sentinels: any access past either end faults.
        for (test::GuardAt at : test::kBothGuards) {
          const test::GuardedBuffer<float> x(values, at);
          test::GuardedBuffer<float> got(n, at), inplace(values, at);
          unary_table(isa).get(kind)(x.data(), got.data(), n, p);
          unary_table(isa).get(kind)(inplace.data(), inplace.data(), n, p);
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(close(got[i], want[i], floor_for(kind)))
                << "kind " << k << " isa " << isa_name(isa) << " n " << n << " " << test::guard_name(at) << " x "
                << x[i] << " got " << got[i] << " want " << want[i];
            ASSERT_TRUE(std::memcmp(&inplace[i], &got[i], 4) == 0 || (std::isnan(inplace[i]) && std::isnan(got[i])));
          }
        }
      }
    }
  }
}

TEST(UnarySimd, SpecialValuesAtEveryIsa) {
  for (Isa isa : available_isas()) {
    const UnaryTable& t = unary_table(isa);
    auto one = [&](UnaryKind k, float x) {
      float y;
      t.get(k)(&x, &y, 1, params_for(k));
      return y;
    };
    EXPECT_EQ(one(UnaryKind::kSigmoid, -INFINITY), 0.0f);
    EXPECT_EQ(one(UnaryKind::kSigmoid, INFINITY), 1.0f);
    EXPECT_EQ(one(UnaryKind::kTanh, INFINITY), 1.0f);
    EXPECT_EQ(one(UnaryKind::kTanh, -INFINITY), -1.0f);
    EXPECT_TRUE(std::signbit(one(UnaryKind::kTanh, -0.0f)));
    // The rational tanh clamps x to +-9: exactly +-1 beyond, never above 1 in magnitude below.
    EXPECT_EQ(one(UnaryKind::kTanh, 9.5f), 1.0f);
    EXPECT_EQ(one(UnaryKind::kTanh, -9.5f), -1.0f);
    EXPECT_EQ(one(UnaryKind::kTanh, 1e-40f), 1e-40f);
    for (float x = 7.0f; x < 9.5f; x += 1.0f / 4096) {
      EXPECT_LE(one(UnaryKind::kTanh, x), 1.0f) << x;
      EXPECT_GE(one(UnaryKind::kTanh, -x), -1.0f) << x;
    }
    EXPECT_EQ(one(UnaryKind::kExp, -INFINITY), 0.0f);
    EXPECT_EQ(one(UnaryKind::kExp, 100.0f), INFINITY);
    EXPECT_EQ(one(UnaryKind::kLog, 0.0f), -INFINITY);
    EXPECT_TRUE(std::isnan(one(UnaryKind::kLog, -1.0f)));
    EXPECT_EQ(one(UnaryKind::kLog, INFINITY), INFINITY);
    EXPECT_EQ(one(UnaryKind::kErf, INFINITY), 1.0f);
    EXPECT_EQ(one(UnaryKind::kErf, -INFINITY), -1.0f);
    EXPECT_EQ(one(UnaryKind::kRound, 2.5f), 2.0f);
    EXPECT_EQ(one(UnaryKind::kRound, -0.5f), -0.0f);
    // ThresholdedRelu is x > alpha ? x : 0 in ONNX and ONNX Runtime, so NaN gives 0.
    EXPECT_EQ(one(UnaryKind::kThresholdedRelu, NAN), 0.0f);
    for (int k = 0; k < kNumKinds; ++k) {
      if (static_cast<UnaryKind>(k) == UnaryKind::kThresholdedRelu) continue;
      EXPECT_TRUE(std::isnan(one(static_cast<UnaryKind>(k), NAN))) << "kind " << k << " at " << isa_name(isa);
    }
  }
}

Tensor f32_tensor(const std::vector<float>& v) { return test::make_tensor<float>({static_cast<int64_t>(v.size())}, v); }

TEST(UnaryOps, HalfTypesMatchRoundedF32AndThreadsAgree) {
  const std::vector<float> x = inputs(50000, 3);
  for (const char* op : {"Sigmoid", "Tanh", "Erf", "Relu", "Exp", "Softplus", "HardSwish", "Sin"}) {
    const Tensor xf = f32_tensor(x);
    std::vector<Float16> h(x.size());
    std::vector<BFloat16> b(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      h[i] = Float16(x[i]);
      b[i] = BFloat16(x[i]);
    }
    std::vector<float> y1, y2;
    {
      threading::ScopedThreadLimit one(1);
      y1 = test::values_of<float>(test::run_op(op, {&xf}).value()[0]);
    }
    {
      threading::ScopedThreadLimit two(2);
      y2 = test::values_of<float>(test::run_op(op, {&xf}).value()[0]);
    }
    ASSERT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4)) << op << ": 1 and 2 threads differ";
    // The f16/bf16 inputs are the f32 inputs rounded; compare against f32 results on those rounded inputs.
    for (int which = 0; which < 2; ++which) {
      const bool f16 = which == 0;
      std::vector<float> xr(x.size());
      for (size_t i = 0; i < x.size(); ++i) xr[i] = f16 ? static_cast<float>(h[i]) : static_cast<float>(b[i]);
      const Tensor xrt = f32_tensor(xr);
      const std::vector<float> ref = test::values_of<float>(test::run_op(op, {&xrt}).value()[0]);
      const Tensor xt = f16 ? test::make_tensor<Float16>({static_cast<int64_t>(h.size())}, h)
                            : test::make_tensor<BFloat16>({static_cast<int64_t>(b.size())}, b);
      const Tensor y = test::run_op(op, {&xt}).value()[0];
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = f16 ? static_cast<float>(Float16(ref[i])) : static_cast<float>(BFloat16(ref[i]));
        const float got = f16 ? static_cast<float>(y.data_as<Float16>()[i]) : static_cast<float>(y.data_as<BFloat16>()[i]);
        ASSERT_TRUE((std::isnan(want) && std::isnan(got)) || want == got)
            << op << (f16 ? " f16" : " bf16") << " x " << xr[i] << " got " << got << " want " << want;
      }
    }
  }
}

// Expected values: Python math in float64, x * 0.5 * (1 + erf(x / sqrt(2))) and
// x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), x * sigmoid(1.702 x).
TEST(UnaryOps, ContribGeluFamily) {
  const std::vector<float> x = {-3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.0f};
  const std::vector<double> gelu = {-0.0040496941, -0.1586552539, -0.1542687694, 0.0, 0.3457312306, 0.8413447461, 2.9959503059};
  const std::vector<double> fast = {-0.0036373921, -0.1588080094, -0.1542859902, 0.0, 0.3457140098, 0.8411919906, 2.9963626079};
  const std::vector<double> quick = {-0.01807131, -0.154204234, -0.149611563, 0.0, 0.350388437, 0.845795766, 2.98192869};
  const Tensor xt = f32_tensor(x);
  auto check = [&](const std::vector<Tensor>& out, const std::vector<double>& want, const char* what) {
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(out[0].data_as<float>()[i], want[i], 2e-6 * std::max(1.0, std::fabs(want[i]))) << what << " " << i;
  };
  check(test::run_op("Gelu", {&xt}, {}, 1, 1, "com.microsoft").value(), gelu, "Gelu");
  check(test::run_op("Gelu", {&xt}, {}, 1, 20).value(), gelu, "onnx Gelu");
  check(test::run_op("Gelu", {&xt}, {test::attr_string("approximate", "tanh")}, 1, 20).value(), fast, "onnx Gelu tanh");
  check(test::run_op("FastGelu", {&xt}, {}, 1, 1, "com.microsoft").value(), fast, "FastGelu");
  check(test::run_op("QuickGelu", {&xt}, {}, 1, 1, "com.microsoft").value(), quick, "QuickGelu");
  // BiasGelu / FastGelu with bias: x [2, 3] + bias [3] = the inputs above shifted.
  const Tensor x2 = test::make_tensor<float>({2, 3}, {-3.5f, -1.5f, -1.0f, -0.5f, 0.0f, 2.5f});
  const Tensor bias = test::make_tensor<float>({3}, {0.5f, 0.5f, 0.5f});
  const std::vector<double> biased = {-0.0040496941, -0.1586552539, -0.1542687694, 0.0, 0.3457312306, 2.9959503059};
  check(test::run_op("BiasGelu", {&x2, &bias}, {}, 1, 1, "com.microsoft").value(), biased, "BiasGelu");
  const std::vector<double> fast_biased = {-0.0036373921, -0.1588080094, -0.1542859902, 0.0, 0.3457140098, 2.9963626079};
  check(test::run_op("FastGelu", {&x2, &bias}, {}, 1, 1, "com.microsoft").value(), fast_biased, "FastGelu+bias");
  // ONNX Swish (opset 24): x sigmoid(alpha x); alpha 1 is SiLU. Python float64 values.
  const std::vector<double> silu = {-0.1422776195, -0.2689414214, -0.1887703344, 0.0, 0.3112296656, 0.7310585786, 2.8577223805};
  check(test::run_op("Swish", {&xt}, {}, 1, 24).value(), silu, "Swish");
  const std::vector<double> swish2 = {-0.0074178695, -0.1192029220, -0.1344707107, 0.0, 0.3655292893, 0.8807970780, 2.9925821305};
  check(test::run_op("Swish", {&xt}, {test::attr_float("alpha", 2.0f)}, 1, 24).value(), swish2, "Swish alpha 2");
  const Tensor xd = test::make_tensor<double>({7}, {-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0});
  const Tensor yd = test::run_op("Swish", {&xd}, {test::attr_float("alpha", 2.0f)}, 1, 24).value()[0];
  for (size_t i = 0; i < swish2.size(); ++i) EXPECT_NEAR(yd.data_as<double>()[i], swish2[i], 1e-9) << "f64 Swish " << i;
  EXPECT_FALSE(test::run_op("Swish", {&xt}, {}, 1, 23).is_ok()) << "Swish exists from opset 24";
  const Tensor bad_bias = test::make_tensor<float>({2}, {0.0f, 0.0f});
  EXPECT_FALSE(test::run_op("BiasGelu", {&x2, &bad_bias}, {}, 1, 1, "com.microsoft").is_ok());
  const Tensor empty = test::make_tensor<float>({0, 3}, {});
  EXPECT_EQ(test::run_op("BiasGelu", {&empty, &bias}, {}, 1, 1, "com.microsoft").value()[0].numel(), 0);
}

}  // namespace
}  // namespace ember::kernels
