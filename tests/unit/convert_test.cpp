// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "base/isa.h"
#include "kernels/common/convert.h"
#include "unit/guard_buffer.h"

namespace ember::kernels {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Independent oracles: f16 decoded from its fields, bf16 as the top half of f32.
float f16_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return static_cast<float>(sign ? -v : v);
}

// The f16 nearest to x, ties to even, found by search over all finite f16
// values (slow but independent of any rounding code).
uint16_t f16_nearest(float x) {
  if (std::isnan(x)) return 0x7e00;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 65520.0) return sign | 0x7c00;  // 65520 = max f16 + half an ULP rounds to inf
  uint16_t best = 0;
  for (uint16_t h = 1; h < 0x7c00; ++h) {
    const double d = std::fabs(f16_value(h) - a), db = std::fabs(f16_value(best) - a);
    if (d < db || (d == db && (h & 1) == 0)) best = h;
  }
  return sign | best;
}

std::vector<float> interesting_floats() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f,
                          6.1e-5f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(), 3.0e38f,
                          1.00048828125f /* f16 tie */, 1.00146484375f /* f16 tie, odd below */};
  // bf16 ties: low half exactly 0x8000 with even and odd kept bits.
  v.push_back(from_bits(0x3f808000u));
  v.push_back(from_bits(0x3f818000u));
  v.push_back(from_bits(0x7f7f8000u));  // rounds up to inf
  for (int i = 0; i < 3000; ++i) v.push_back(std::ldexp(static_cast<float>(i * 7919 % 4096) - 2048.0f, i % 50 - 30));
  return v;
}

TEST(Convert, F16AndBf16ToF32AreExactForEveryBitPattern) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (Isa isa : available_isas()) {
    for (test::GuardAt at : test::kBothGuards) {
      const ConvertTable& t = convert_table(isa);
      const test::GuardedBuffer<uint16_t> in(all, at);
      test::GuardedBuffer<float> out(all.size(), at);
      t.f16_to_f32(in.data(), out.data(), static_cast<int64_t>(all.size()));
      for (uint32_t i = 0; i < 65536; ++i) {
        const float want = f16_value(static_cast<uint16_t>(i));
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(out[i])) << isa_name(isa) << " f16 " << i << " " << test::guard_name(at);
        } else {
          ASSERT_EQ(bits_of(out[i]), bits_of(want)) << isa_name(isa) << " f16 " << i << " " << test::guard_name(at);
        }
      }
      t.bf16_to_f32(in.data(), out.data(), static_cast<int64_t>(all.size()));
      for (uint32_t i = 0; i < 65536; ++i) {
        ASSERT_EQ(bits_of(out[i]), i << 16) << isa_name(isa) << " bf16 " << i << " " << test::guard_name(at);
      }
    }
  }
}

TEST(Convert, F32ToF16RoundsToNearestEven) {
  const std::vector<float> in = interesting_floats();
  std::vector<uint16_t> want(in.size());
  for (size_t i = 0; i < in.size(); ++i) want[i] = f16_nearest(in[i]);
  for (Isa isa : available_isas()) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{31}, int64_t{32},
                      int64_t{33}, int64_t{47}, static_cast<int64_t>(in.size())}) {
      for (test::GuardAt at : test::kBothGuards) {
        const std::span<const float> values = std::span(in).first(static_cast<size_t>(n));
        const test::GuardedBuffer<float> x(values, at);
        test::GuardedBuffer<uint16_t> out(static_cast<size_t>(n), at);
        convert_table(isa).f32_to_f16(x.data(), out.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          if (std::isnan(in[i])) {
            EXPECT_TRUE((out[i] & 0x7c00) == 0x7c00 && (out[i] & 0x3ff) != 0) << isa_name(isa) << " NaN";
          } else {
            ASSERT_EQ(out[i], want[i]) << isa_name(isa) << " x=" << in[i] << " n=" << n << " " << test::guard_name(at);
          }
        }
      }
    }
  }
}

TEST(Convert, F32ToBf16RoundsToNearestEven) {
  const std::vector<float> in = interesting_floats();
  for (Isa isa : available_isas()) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{17}, size_t{31}, size_t{32}, size_t{33}, size_t{47}, in.size()}) {
      for (test::GuardAt at : test::kBothGuards) {
        const std::span<const float> values = std::span(in).first(len);
        const test::GuardedBuffer<float> x(values, at);
        test::GuardedBuffer<uint16_t> out(len, at);
        convert_table(isa).f32_to_bf16(x.data(), out.data(), static_cast<int64_t>(len));
        for (size_t i = 0; i < len; ++i) {
          const uint32_t u = bits_of(in[i]);
          if (std::isnan(in[i])) {
            EXPECT_TRUE((out[i] & 0x7f80) == 0x7f80 && (out[i] & 0x7f) != 0) << isa_name(isa) << " NaN";
            continue;
          }
          if (std::isinf(in[i])) {
            ASSERT_EQ(out[i], u >> 16) << isa_name(isa);
            continue;
          }
          // Nearest of the two candidates by exact distance, ties to the even one.
          const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
          const double d_lo = std::fabs(static_cast<double>(from_bits(lo)) - in[i]);
          const double d_hi = std::isinf(from_bits(hi))
                                  ? std::fabs(std::ldexp(1.0, 128) - std::fabs(static_cast<double>(in[i])))
                                  : std::fabs(static_cast<double>(from_bits(hi)) - in[i]);
          const uint32_t want = (d_lo < d_hi || (d_lo == d_hi && ((lo >> 16) & 1) == 0)) ? lo : hi;
          ASSERT_EQ(out[i], want >> 16) << isa_name(isa) << " x=" << in[i] << " " << test::guard_name(at);
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember::kernels
