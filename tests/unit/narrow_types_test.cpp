// The narrow types (float8, float8e8m0, float4e2m1, int4/uint4, int2/uint2):
// every code decoded against the formats' definitions, every code round-tripped,
// rounding checked against a brute-force search for the nearest code, and Cast
// through the kernel on packed tensors with tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/narrow_types.h"
#include "op_test_util.h"

namespace ember {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Format {
  DType type;
  int exp_bits, mant_bits, bias;
  int codes;  // 256 or 16
};

const Format kFloatFormats[] = {
    {DType::kF8E4M3FN, 4, 3, 7, 256},   {DType::kF8E4M3FNUZ, 4, 3, 8, 256}, {DType::kF8E5M2, 5, 2, 15, 256},
    {DType::kF8E5M2FNUZ, 5, 2, 16, 256}, {DType::kF4E2M1, 2, 1, 1, 16},
};

// The value of a code from the ONNX documents (docs/Float8.md, docs/Float4.md),
// special codes listed by hand.
double reference_value(const Format& f, int code) {
  const bool fnuz = f.type == DType::kF8E4M3FNUZ || f.type == DType::kF8E5M2FNUZ;
  if (fnuz && code == 0x80) return kNaN;
  if (f.type == DType::kF8E4M3FN && (code & 0x7f) == 0x7f) return kNaN;
  if (f.type == DType::kF8E5M2 && (code & 0x7f) > 0x7c) return kNaN;
  if (f.type == DType::kF8E5M2 && (code & 0x7f) == 0x7c) return code & 0x80 ? -INFINITY : INFINITY;
  const int sign_shift = f.exp_bits + f.mant_bits;
  const int e = (code >> f.mant_bits) & ((1 << f.exp_bits) - 1);
  const int m = code & ((1 << f.mant_bits) - 1);
  const double frac = static_cast<double>(m) / (1 << f.mant_bits);
  const double mag = e == 0 ? std::pow(2.0, 1 - f.bias) * frac : std::pow(2.0, e - f.bias) * (1.0 + frac);
  return (code >> sign_shift) & 1 ? -mag : mag;
}

TEST(NarrowTypes, DecodesEveryFloatCode) {
  EXPECT_EQ(narrow_to_double(DType::kF8E4M3FN, 0x7e), 448.0);
  EXPECT_EQ(narrow_to_double(DType::kF8E4M3FNUZ, 0x7f), 240.0);
  EXPECT_EQ(narrow_to_double(DType::kF8E5M2, 0x7b), 57344.0);
  EXPECT_EQ(narrow_to_double(DType::kF8E5M2FNUZ, 0x7f), 57344.0);
  EXPECT_EQ(narrow_to_double(DType::kF4E2M1, 0x7), 6.0);
  EXPECT_EQ(narrow_to_double(DType::kF4E2M1, 0x1), 0.5);
  for (const Format& f : kFloatFormats) {
    for (int code = 0; code < f.codes; ++code) {
      const double want = reference_value(f, code), got = narrow_to_double(f.type, static_cast<uint8_t>(code));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << dtype_name(f.type) << " code " << code;
        EXPECT_TRUE(narrow_is_nan(f.type, static_cast<uint8_t>(code)));
      } else {
        EXPECT_EQ(got, want) << dtype_name(f.type) << " code " << code;
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << dtype_name(f.type) << " code " << code;
      }
    }
  }
}

TEST(NarrowTypes, RoundTripsEveryCode) {
  const NarrowCastOptions saturate{true, E8M0Rounding::kUp}, no_saturate{false, E8M0Rounding::kUp};
  for (const Format& f : kFloatFormats) {
    for (int code = 0; code < f.codes; ++code) {
      const double v = narrow_to_double(f.type, static_cast<uint8_t>(code));
      if (std::isnan(v)) continue;
      if (std::isinf(v)) {  // E5M2's infinities survive only without saturation
        EXPECT_EQ(narrow_from_double(f.type, v, no_saturate), code);
        continue;
      }
      EXPECT_EQ(narrow_from_double(f.type, v, saturate), code) << dtype_name(f.type) << " code " << code;
      EXPECT_EQ(narrow_from_double(f.type, v, no_saturate), code) << dtype_name(f.type) << " code " << code;
    }
  }
  // Code 0 (2^-127) is a float32 subnormal with a fraction bit, which "up" takes to code 1.
  for (int code = 1; code < 255; ++code) {
    EXPECT_EQ(narrow_to_double(DType::kF8E8M0, static_cast<uint8_t>(code)), std::ldexp(1.0, code - 127));
    for (auto r : {E8M0Rounding::kUp, E8M0Rounding::kDown, E8M0Rounding::kNearest}) {
      EXPECT_EQ(narrow_from_double(DType::kF8E8M0, std::ldexp(1.0, code - 127), {true, r}), code) << code;
    }
  }
  EXPECT_TRUE(narrow_is_nan(DType::kF8E8M0, 0xff));
  for (DType t : {DType::kI4, DType::kU4, DType::kI2, DType::kU2}) {
    const int bits = dtype_bits(t);
    for (int code = 0; code < (1 << bits); ++code) {
      const bool is_signed = t == DType::kI4 || t == DType::kI2;
      const int want = is_signed && code >= (1 << (bits - 1)) ? code - (1 << bits) : code;
      EXPECT_EQ(narrow_to_double(t, static_cast<uint8_t>(code)), want);
      EXPECT_EQ(narrow_from_double(t, want, {}), code);
      EXPECT_EQ(narrow_from_int(t, want, {}), code);
    }
  }
}

// The code nearest v by exhaustive search: ties go to the even code; a value
// nearer the step past the largest finite value than to it overflows.
uint8_t brute_force_code(const Format& f, double v, bool saturate) {
  const bool fnuz = f.type == DType::kF8E4M3FNUZ || f.type == DType::kF8E5M2FNUZ;
  const int sign = 1 << (f.exp_bits + f.mant_bits);
  int max_code = 0;
  for (int c = 0; c < sign; ++c) {
    if (std::isfinite(reference_value(f, c))) max_code = c;
  }
  const double max = reference_value(f, max_code);
  const double beyond = max + (max - reference_value(f, max_code - 1));
  const double a = std::fabs(v);
  int best = max_code + 1;  // at or past `beyond`, nothing is nearer (and far past it, errors round equal)
  double best_err = a >= beyond ? 0.0 : INFINITY;
  for (int c = 0; c <= max_code + 1 && a < beyond; ++c) {
    const double cv = c <= max_code ? reference_value(f, c) : beyond;
    const double err = std::fabs(cv - a);
    if (err < best_err || (err == best_err && c % 2 == 0)) {
      best = c;
      best_err = err;
    }
  }
  const bool negative = std::signbit(v);
  if (best > max_code || std::isinf(v)) {
    if (saturate || f.type == DType::kF4E2M1) return static_cast<uint8_t>(max_code | (negative ? sign : 0));
    if (f.type == DType::kF8E5M2) return negative ? 0xfc : 0x7c;
    return fnuz ? 0x80 : (negative ? 0xff : 0x7f);
  }
  if (best == 0 && fnuz) return 0;
  return static_cast<uint8_t>(best | (negative ? sign : 0));
}

TEST(NarrowTypes, RoundsToNearestEvenLikeExhaustiveSearch) {
  std::mt19937 rng(7);
  for (const Format& f : kFloatFormats) {
    std::vector<double> inputs = {0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, INFINITY, -INFINITY};
    // Every midpoint between neighbouring codes and the floats on either side of it.
    for (int c = 0; c + 1 < f.codes / 2; ++c) {
      const double lo = reference_value(f, c), hi = reference_value(f, c + 1);
      if (!std::isfinite(hi)) continue;
      const auto mid = static_cast<float>((lo + hi) / 2);
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), static_cast<float>(lo)}) {
        inputs.push_back(x);
        inputs.push_back(-x);
      }
    }
    std::uniform_real_distribution<double> log_mag(-12.0, 18.0);
    for (int i = 0; i < 2000; ++i) {
      const auto x = static_cast<float>(std::exp2(log_mag(rng)));
      inputs.push_back(i % 2 ? x : -x);
    }
    for (double x : inputs) {
      for (bool saturate : {true, false}) {
        EXPECT_EQ(narrow_from_double(f.type, x, {saturate, E8M0Rounding::kUp}), brute_force_code(f, x, saturate))
            << dtype_name(f.type) << " x " << x << " saturate " << saturate;
      }
    }
  }
}

// ONNX's Cast tables: NaN, Inf and overflow with and without saturation.
TEST(NarrowTypes, SpecialValuesFollowTheCastTables) {
  const NarrowCastOptions sat{true, E8M0Rounding::kUp}, nosat{false, E8M0Rounding::kUp};
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FN, INFINITY, sat), 0x7e);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FN, -INFINITY, sat), 0xfe);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FN, INFINITY, nosat), 0x7f);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FN, -INFINITY, nosat), 0xff);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FN, 464.0, nosat), 0x7e);  // tie: even (448)
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FN, 464.01, nosat), 0x7f);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FN, -0.0, sat), 0x80);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FNUZ, -0.0, sat), 0x00);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FNUZ, -1e-10, sat), 0x00);
  EXPECT_EQ(narrow_from_double(DType::kF8E4M3FNUZ, -INFINITY, nosat), 0x80);
  EXPECT_EQ(narrow_from_double(DType::kF8E5M2, INFINITY, sat), 0x7b);
  EXPECT_EQ(narrow_from_double(DType::kF8E5M2, 1e6, nosat), 0x7c);
  EXPECT_EQ(narrow_from_double(DType::kF8E5M2, -1e6, nosat), 0xfc);
  EXPECT_EQ(narrow_from_double(DType::kF8E5M2FNUZ, 1e6, nosat), 0x80);
  EXPECT_EQ(narrow_from_double(DType::kF8E5M2FNUZ, kNaN, sat), 0x80);
  EXPECT_TRUE(narrow_is_nan(DType::kF8E5M2, narrow_from_double(DType::kF8E5M2, kNaN, sat)));
  EXPECT_EQ(narrow_from_double(DType::kF4E2M1, 1e6, nosat), 0x7);
  EXPECT_EQ(narrow_from_double(DType::kF4E2M1, -INFINITY, nosat), 0xf);
  EXPECT_EQ(narrow_from_double(DType::kF4E2M1, kNaN, sat), 0x8);  // ml_dtypes' choice, in ONNX's expected outputs
}

TEST(NarrowTypes, E8M0RoundingModes) {
  auto code = [](double v, E8M0Rounding r, bool saturate = true) {
    return narrow_from_double(DType::kF8E8M0, v, {saturate, r});
  };
  // 1.1 lies between 2^0 (code 127) and 2^1; 1.5 is the linear midpoint (ties go up).
  EXPECT_EQ(code(1.1, E8M0Rounding::kUp), 128);
  EXPECT_EQ(code(1.1, E8M0Rounding::kDown), 127);
  EXPECT_EQ(code(1.1, E8M0Rounding::kNearest), 127);
  EXPECT_EQ(code(1.5, E8M0Rounding::kNearest), 128);
  EXPECT_EQ(code(1.49, E8M0Rounding::kNearest), 127);
  EXPECT_EQ(code(0.0, E8M0Rounding::kUp), 0);
  EXPECT_EQ(code(kNaN, E8M0Rounding::kUp), 0xff);
  EXPECT_EQ(code(INFINITY, E8M0Rounding::kUp), 0xff);
  const double above_max = std::ldexp(1.5, 127);
  EXPECT_EQ(code(above_max, E8M0Rounding::kUp, true), 0xfe);
  EXPECT_EQ(code(above_max, E8M0Rounding::kUp, false), 0xff);
  EXPECT_EQ(code(-4.0, E8M0Rounding::kUp), 129);  // the sign is ignored
}

TEST(NarrowTypes, IntegersTruncateAndZeroOutOfRange) {
  // Floats: truncate toward zero; outside the type's range (or NaN) give 0.
  for (double x = -20.0; x <= 20.0; x += 0.25) {
    for (DType t : {DType::kI4, DType::kU4, DType::kI2, DType::kU2}) {
      const double whole = std::trunc(x);
      const bool in_range = whole >= narrow_int_min(t) && whole <= narrow_int_max(t);
      const int want = in_range ? static_cast<int>(whole) & ((1 << dtype_bits(t)) - 1) : 0;
      EXPECT_EQ(narrow_from_double(t, x, {}), want) << dtype_name(t) << " " << x;
    }
  }
  EXPECT_EQ(narrow_from_double(DType::kI4, kNaN, {}), 0);
  // Integers wrap: the low bits.
  for (int v = -300; v <= 300; ++v) {
    EXPECT_EQ(narrow_from_int(DType::kI4, v, {}), static_cast<uint8_t>(v & 0xf));
    EXPECT_EQ(narrow_from_int(DType::kU2, v, {}), static_cast<uint8_t>(v & 0x3));
  }
}

TEST(NarrowTypes, PackedElementsLowBitsFirst) {
  std::vector<uint8_t> bytes(3, 0xaa);
  for (int i = 0; i < 5; ++i) set_narrow_code(bytes.data(), DType::kU4, i, static_cast<uint8_t>(i + 1));
  EXPECT_EQ(bytes[0], 0x21);
  EXPECT_EQ(bytes[1], 0x43);
  EXPECT_EQ(bytes[2], 0xa5);  // the last element's neighbour is untouched
  for (int i = 0; i < 5; ++i) EXPECT_EQ(narrow_code_at(bytes.data(), DType::kU4, i), i + 1);
  std::vector<uint8_t> crumbs(2, 0);
  for (int i = 0; i < 6; ++i) set_narrow_code(crumbs.data(), DType::kI2, i, static_cast<uint8_t>(i % 4));
  EXPECT_EQ(crumbs[0], 0xe4);  // 3,2,1,0 from the top
  EXPECT_EQ(crumbs[1], 0x04);
  EXPECT_EQ(dtype_nbytes(DType::kI2, 6), 2u);
  EXPECT_EQ(dtype_nbytes(DType::kI4, 5), 3u);
  EXPECT_EQ(dtype_nbytes(DType::kF8E5M2, 5), 5u);
  EXPECT_EQ(dtype_nbytes(DType::kU4, 0), 0u);
}

// Cast f32 -> int4 -> f32 through the kernel, over lengths that end inside a
// byte, in parallel ranges of whole bytes, and zero-size.
TEST(NarrowTypes, CastKernelPacksWithTails) {
  for (int64_t n : {0, 1, 7, 9, 100001}) {
    Tensor x = Tensor::allocate(DType::kF32, Shape{n});
    for (int64_t i = 0; i < n; ++i) x.data_as<float>()[i] = static_cast<float>(i % 19) - 9.0f;
    auto packed = test::run_op("Cast", {&x}, {test::attr_int("to", static_cast<int64_t>(DType::kI4))}, 1, 21);
    ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
    ASSERT_EQ((*packed)[0].nbytes(), static_cast<size_t>((n + 1) / 2));
    auto back = test::run_op("Cast", {&(*packed)[0]}, {test::attr_int("to", static_cast<int64_t>(DType::kF32))}, 1, 21);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    for (int64_t i = 0; i < n; ++i) {
      const float v = x.data_as<float>()[i];
      const float want = v >= -8 && v <= 7 ? v : 0.0f;
      ASSERT_EQ((*back)[0].data_as<float>()[i], want) << "n " << n << " i " << i;
    }
  }
}

// QuantizeLinear to int4 per axis (a zero point of each row, saturation, NaN to
// the minimum) over an odd element count, and DequantizeLinear back.
TEST(NarrowTypes, QuantizeInt4PerAxisRoundTrips) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = test::make_tensor<float>({3, 3}, {0.0f, 2.5f, 3.5f, -100.0f, 100.0f, nan, 1.0f, -1.0f, 7.0f});
  Tensor scale = test::make_tensor<float>({3}, {1.0f, 2.0f, 0.5f});
  Tensor zp = Tensor::allocate(DType::kI4, Shape{3});
  for (int i = 0; i < 3; ++i) set_narrow_code(zp.data(), DType::kI4, i, narrow_from_int(DType::kI4, i - 1, {}));
  auto q = test::run_op("QuantizeLinear", {&x, &scale, &zp}, {test::attr_int("axis", 0)}, 1, 21);
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  ASSERT_EQ((*q)[0].dtype(), DType::kI4);
  // Row 0 (zp -1): 0, 2.5 -> 2 (half to even), 3.5 -> 4, each - 1. Row 1 (zp 0): saturates, NaN -> -8.
  // Row 2 (scale 0.5, zp 1): 2 + 1, -2 + 1, 14 + 1 -> 7.
  const std::vector<int> want = {-1, 1, 3, -8, 7, -8, 3, -1, 7};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(narrow_to_double(DType::kI4, narrow_code_at((*q)[0].data(), DType::kI4, i)), want[i]) << i;
  }
  auto dq = test::run_op("DequantizeLinear", {&(*q)[0], &scale, &zp}, {test::attr_int("axis", 0)}, 1, 21);
  ASSERT_TRUE(dq.is_ok()) << dq.status().to_string();
  const std::vector<float> back = {0.0f, 2.0f, 4.0f, -16.0f, 14.0f, -16.0f, 1.0f, -1.0f, 3.0f};
  EXPECT_EQ(test::values_of<float>((*dq)[0]), back);
}

TEST(NarrowTypes, OtherKernelsRefuseNarrowInputs) {
  Tensor x = Tensor::allocate(DType::kF8E4M3FN, Shape{4});
  auto r = test::run_op("Add", {&x, &x}, {}, 1, 21);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(r.status().to_string().find("float8e4m3fn"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace ember
