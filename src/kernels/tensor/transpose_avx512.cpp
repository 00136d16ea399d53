// 16x16 register tiles for 4-byte elements inside 64x64 blocks; the other element
// sizes keep the AVX2 tiles (their tiles already fill a cache line per row).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/tensor/transpose_ukernels.h"

namespace ember::kernels::tensor_ops {
namespace {

constexpr int64_t kBlock = 64;
constexpr int64_t kTile = 16;

int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

void x32_edge(const uint32_t* src, int64_t ss, uint32_t* dst, int64_t ds, int64_t i0, int64_t i1, int64_t j0,
              int64_t j1) {
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) dst[j * ds + i] = src[i * ss + j];
  }
}

// Three shuffle stages: pairs of rows (unpack), quads (shuffle_ps), then 128-bit
// lanes twice (shuffle_f32x4). The unpacks are the zero-masked forms with a full
// mask (same instruction): GCC 12's plain forms trip -Wuninitialized on
// _mm512_undefined_ps.
void x32_tile16x16_avx512(const uint32_t* src, int64_t ss, uint32_t* dst, int64_t ds) {
  __m512 r[16];
  for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(src + k * ss);
  __m512 t[16];
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm512_maskz_unpacklo_ps(0xFFFF, r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_maskz_unpackhi_ps(0xFFFF, r[2 * k], r[2 * k + 1]);
  }
  for (int q = 0; q < 4; ++q) {
    r[4 * q + 0] = _mm512_shuffle_ps(t[4 * q + 0], t[4 * q + 2], 0x44);
    r[4 * q + 1] = _mm512_shuffle_ps(t[4 * q + 0], t[4 * q + 2], 0xEE);
    r[4 * q + 2] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
    r[4 * q + 3] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
  }
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      t[8 * h + k] = _mm512_shuffle_f32x4(r[8 * h + k], r[8 * h + k + 4], 0x88);
      t[8 * h + k + 4] = _mm512_shuffle_f32x4(r[8 * h + k], r[8 * h + k + 4], 0xDD);
    }
  }
  for (int k = 0; k < 8; ++k) {
    _mm512_storeu_ps(dst + k * ds, _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88));
    _mm512_storeu_ps(dst + (k + 8) * ds, _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD));
  }
}

void x32_transpose_avx512_16x16(const void* src_v, int64_t ss, void* dst_v, int64_t ds, int64_t rows,
                                int64_t cols) {
  const auto* src = static_cast<const uint32_t*>(src_v);
  auto* dst = static_cast<uint32_t*>(dst_v);
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    const int64_t i1 = min_i64(rows, i0 + kBlock);
    for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
      const int64_t j1 = min_i64(cols, j0 + kBlock);
      int64_t i = i0;
      for (; i + kTile <= i1; i += kTile) {
        int64_t j = j0;
        for (; j + kTile <= j1; j += kTile) x32_tile16x16_avx512(src + i * ss + j, ss, dst + j * ds + i, ds);
        x32_edge(src, ss, dst, ds, i, i + kTile, j, j1);
      }
      x32_edge(src, ss, dst, ds, i, i1, j0, j1);
    }
  }
}

}  // namespace

void fill_transpose_avx512(TransposeTable& t) { t.x32 = x32_transpose_avx512_16x16; }

}  // namespace ember::kernels::tensor_ops
