#include "kernels/quant/gbq_ukernels.h"

#include "kernels/common/isa_tables.h"

namespace ember::kernels::quant {
namespace {

// Block by block, so no division per code.
void f32_q2_dequant_scalar(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                           const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t end = k - k0 < block_size ? k : k0 + block_size;
    const int zp = zps ? zps[b] : 2;
    for (int64_t i = k0; i < end; ++i) {
      const int code = (codes[i >> 2] >> (2 * (i & 3))) & 3;
      y[i] = static_cast<float>(code - zp) * scales[b];
    }
  }
}

void f32_q4_dequant_scalar(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                           const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t end = k - k0 < block_size ? k : k0 + block_size;
    const int zp = zps ? zps[b] : 8;
    for (int64_t i = k0; i < end; ++i) {
      const int code = (i & 1) ? codes[i >> 1] >> 4 : codes[i >> 1] & 0xF;
      y[i] = static_cast<float>(code - zp) * scales[b];
    }
  }
}

void f32_q8_dequant_scalar(const uint8_t* codes, int64_t k, int64_t block_size, const float* scales,
                           const uint8_t* zps, float* y) {
  for (int64_t b = 0, k0 = 0; k0 < k; ++b, k0 += block_size) {
    const int64_t end = k - k0 < block_size ? k : k0 + block_size;
    const int zp = zps ? zps[b] : 128;
    for (int64_t i = k0; i < end; ++i) y[i] = static_cast<float>(codes[i] - zp) * scales[b];
  }
}

void fill_gbq_scalar(GbqTable& t) {
  t.f32_q2_dequant = f32_q2_dequant_scalar;
  t.f32_q4_dequant = f32_q4_dequant_scalar;
  t.f32_q8_dequant = f32_q8_dequant_scalar;
}

}  // namespace

const GbqTable& gbq_table(Isa isa) {
  static const auto tables = build_isa_tables<GbqTable>(fill_gbq_scalar, fill_gbq_avx2, fill_gbq_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels::quant
