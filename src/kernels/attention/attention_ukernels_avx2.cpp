#include <immintrin.h>

#include <cstdint>

#include "kernels/attention/attention_ukernels.h"

namespace ember::kernels::attention {
namespace {

__m256i tail_mask(int64_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes);
}

__m256 dot_partials(const float* q, const float* k, int64_t head_size) {
  __m256 acc = _mm256_setzero_ps();
  int64_t d = 0;
  for (; d + 8 <= head_size; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(k + d), acc);
  if (d < head_size) {
    const __m256i m = tail_mask(head_size - d);
    acc = _mm256_fmadd_ps(_mm256_maskload_ps(q + d, m), _mm256_maskload_ps(k + d, m), acc);
  }
  return acc;
}

// Element j = the full sum of v[j].
__m256 reduce8(const __m256* v) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

void f32_qk_avx2_u8(const float* q, int64_t q_head_stride, int64_t heads, const float* k, int64_t k_row_stride,
                    int64_t keys, int64_t head_size, float scale, float* scores, int64_t ld) {
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int64_t t0 = 0; t0 < keys; t0 += 8) {
    const int64_t n = keys - t0 < 8 ? keys - t0 : 8;
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = q + h * q_head_stride;
      __m256 part[8];
      for (int64_t j = 0; j < 8; ++j) {
        part[j] = j < n ? dot_partials(qh, k + (t0 + j) * k_row_stride, head_size) : _mm256_setzero_ps();
      }
      _mm256_maskstore_ps(scores + h * ld + t0, tail_mask(n), _mm256_mul_ps(reduce8(part), vscale));
    }
  }
}

template <int G>
void pv_heads(const float* p, int64_t ld, const float* v, int64_t v_row_stride, int64_t keys, int64_t v_head_size,
              float* acc, int64_t acc_stride) {
  for (int64_t d = 0; d < v_head_size; d += 8) {
    const __m256i m = tail_mask(v_head_size - d < 8 ? v_head_size - d : 8);
    __m256 a[G];
    for (int g = 0; g < G; ++g) a[g] = _mm256_maskload_ps(acc + g * acc_stride + d, m);
    for (int64_t t = 0; t < keys; ++t) {
      const __m256 vt = _mm256_maskload_ps(v + t * v_row_stride + d, m);
      for (int g = 0; g < G; ++g) a[g] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + g * ld + t), vt, a[g]);
    }
    for (int g = 0; g < G; ++g) _mm256_maskstore_ps(acc + g * acc_stride + d, m, a[g]);
  }
}

void f32_pv_avx2_g4(const float* p, int64_t ld, int64_t heads, const float* v, int64_t v_row_stride, int64_t keys,
                    int64_t v_head_size, float* acc, int64_t acc_stride) {
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) pv_heads<4>(p + h * ld, ld, v, v_row_stride, keys, v_head_size, acc + h * acc_stride, acc_stride);
  const float* ph = p + h * ld;
  float* ah = acc + h * acc_stride;
  switch (heads - h) {
    case 3: pv_heads<3>(ph, ld, v, v_row_stride, keys, v_head_size, ah, acc_stride); break;
    case 2: pv_heads<2>(ph, ld, v, v_row_stride, keys, v_head_size, ah, acc_stride); break;
    case 1: pv_heads<1>(ph, ld, v, v_row_stride, keys, v_head_size, ah, acc_stride); break;
    default: break;
  }
}

}  // namespace

void fill_attention_avx2(AttentionTable& t) {
  t.f32_qk = f32_qk_avx2_u8;
  t.f32_pv = f32_pv_avx2_g4;
}

}  // namespace ember::kernels::attention
