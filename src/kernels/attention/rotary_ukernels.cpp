#include "kernels/attention/rotary_ukernels.h"

#include <cmath>

#include "kernels/common/isa_tables.h"

namespace ember::kernels::attention {
namespace {

void f32_rotate_half_scalar(const float* x0, const float* x1, const float* cos, const float* sin, float* y0, float* y1,
                            int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = x0[i], b = x1[i];
    y0[i] = std::fma(a, cos[i], -(b * sin[i]));
    y1[i] = std::fma(a, sin[i], b * cos[i]);
  }
}

void f32_rotate_pairs_scalar(const float* x, const float* cos, const float* sin, float* y, int64_t pairs) {
  // The whole blocks of 8 pairs and the first pair after them fuse; the rest
  // round both products (rotary_ukernels.h).
  const int64_t fused = pairs % 8 == 0 ? pairs : pairs - pairs % 8 + 1;
  for (int64_t i = 0; i < fused; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    y[2 * i] = std::fma(a, cos[i], -(b * sin[i]));
    y[2 * i + 1] = std::fma(a, sin[i], b * cos[i]);
  }
  for (int64_t i = fused; i < pairs; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    y[2 * i] = a * cos[i] - b * sin[i];
    y[2 * i + 1] = a * sin[i] + b * cos[i];
  }
}

// std::fma is a libm call at this level (the FMA instruction where the CPU has
// one), so every CPU gets the bits of the FMA levels (rotary_ukernels.h).
void fill_rotary_scalar(RotaryTable& t) {
  t.f32_rotate_half = f32_rotate_half_scalar;
  t.f32_rotate_pairs = f32_rotate_pairs_scalar;
}

}  // namespace

const RotaryTable& rotary_table(Isa isa) {
  static const auto tables = build_isa_tables<RotaryTable>(fill_rotary_scalar, fill_rotary_avx2, fill_rotary_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels::attention
