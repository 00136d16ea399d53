// f16 via F16C (VCVTPH2PS / VCVTPS2PH round-to-nearest-even); bf16 with integer
// shifts and the same rounding as BFloat16::from_float.
#include <immintrin.h>

#include "kernels/common/convert.h"

namespace ember::kernels {
namespace {

void f16_to_f32_f16c_u16(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 8));
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(a));
    _mm256_storeu_ps(y + i + 8, _mm256_cvtph_ps(b));
  }
  for (; i < n; ++i) y[i] = _cvtsh_ss(x[i]);
}

void f32_to_f16_f16c_u16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    const __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(x + i + 8), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 8), b);
  }
  for (; i < n; ++i) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

void bf16_to_f32_avx2_u8(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_slli_epi32(w, 16));
  }
  for (; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(x[i]) << 16;
    __builtin_memcpy(y + i, &u, 4);
  }
}

// Round to nearest even: add 0x7fff plus the lowest kept bit; NaN becomes a quiet NaN.
__m256i round_to_bf16_avx2(__m256i u) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

void f32_to_bf16_avx2_u16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = round_to_bf16_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    const __m256i b = round_to_bf16_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8)));
    // packus works per 128-bit lane: fix the order with a 64-bit permute.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), packed);
  }
  for (; i < n; ++i) {
    uint32_t u;
    __builtin_memcpy(&u, x + i, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      y[i] = static_cast<uint16_t>((u >> 16) | 0x40);
    } else {
      y[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
}

}  // namespace

void fill_convert_avx2(ConvertTable& t) {
  t.f16_to_f32 = f16_to_f32_f16c_u16;
  t.f32_to_f16 = f32_to_f16_f16c_u16;
  t.bf16_to_f32 = bf16_to_f32_avx2_u8;
  t.f32_to_bf16 = f32_to_bf16_avx2_u16;
}

}  // namespace ember::kernels
