#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/dtype.h"

namespace ember {
namespace {

TEST(Float16, RoundTripsEveryHalfValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    auto h = static_cast<uint16_t>(bits);
    float f = Float16::to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Float16::to_float(Float16::from_float(f)))) << bits;
    } else {
      EXPECT_EQ(Float16::from_float(f), h) << bits;
    }
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(Float16::from_float(1.0f), 0x3c00);
  EXPECT_EQ(Float16::from_float(-2.0f), 0xc000);
  EXPECT_EQ(Float16::from_float(65504.0f), 0x7bff);
  EXPECT_EQ(Float16::from_float(65520.0f), 0x7c00);  // ties to even: rounds to Inf
  EXPECT_EQ(Float16::from_float(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(Float16::from_float(5.9604645e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(Float16::from_float(2.9802322e-08f), 0x0000);  // half of it: ties to even (0)
  EXPECT_EQ(Float16::from_float(1.0f + 1.0f / 2048), 0x3c00);  // tie between 1 and 1+2^-10: even
  EXPECT_EQ(Float16::from_float(1.0f + 3.0f / 2048), 0x3c02);
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(BFloat16::from_float(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16::to_float(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16::from_float(1.00390625f), 0x3f80);  // tie: even
  EXPECT_EQ(BFloat16::from_float(1.01171875f), 0x3f82);  // tie: up to even
  EXPECT_TRUE(std::isnan(BFloat16::to_float(BFloat16::from_float(std::nanf("")))));
}

TEST(DType, Sizes) {
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
}

}  // namespace
}  // namespace ember
