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

// Prefetches floats [from, from + count) of row `at` of run `run`, if it has
// one: a later block of a paged cache is fetched while this one is computed
// (see the AVX-512 file).
void prefetch_row(const KeyRows* k, int64_t run, int64_t at, int64_t from, int64_t count) {
  if (run >= k->runs || at >= k->lengths[run]) return;
  const char* row = reinterpret_cast<const char*>(k->rows[run] + at * k->row_stride + from);
  for (int64_t b = 0; b < count * 4; b += 64) _mm_prefetch(row + b, _MM_HINT_T0);
}

// Rows ahead to prefetch: about 16 rows of scores or 32 rows of values cover
// the latency of a block's first miss (fewer rows ahead left misses exposed,
// more evicted rows still in use from L1), rounded up to whole runs of length n.
constexpr int64_t kKeyRowsAhead = 16, kValueRowsAhead = 32;
int64_t runs_ahead(int64_t n, int64_t rows) { return n <= 0 || n >= rows ? 1 : (rows + n - 1) / n; }

// Fills rows[0, 8) with the next keys of k from the cursor (run, at), and
// prefetches the same rows of a run kKeyRowsAhead rows ahead; returns how many.
int64_t next_rows8(const KeyRows* k, int64_t* run, int64_t* at, const float** rows, int64_t head_size) {
  int64_t n = 0;
  while (n < 8 && *run < k->runs) {
    const int64_t len = k->lengths[*run];
    const int64_t take = len - *at < 8 - n ? len - *at : 8 - n;
    const int64_t ra = *run + runs_ahead(len, kKeyRowsAhead);
    const int64_t ahead = ra < k->runs ? (k->lengths[ra] < *at + take ? k->lengths[ra] : *at + take) : 0;
    for (int64_t i = *at; i < ahead; ++i) prefetch_row(k, ra, i, 0, head_size);
    const float* base = k->rows[*run] + *at * k->row_stride;
    for (int64_t j = 0; j < take; ++j) rows[n + j] = base + j * k->row_stride;
    n += take;
    *at += take;
    if (*at == len) {
      ++*run;
      *at = 0;
    }
  }
  return n;
}

void f32_qk_runs_avx2_u8(const float* q, int64_t q_head_stride, int64_t heads, const KeyRows* k, int64_t head_size,
                         float scale, float* scores, int64_t ld) {
  const __m256 vscale = _mm256_set1_ps(scale);
  int64_t run = 0, at = 0;
  const float* rows[8];
  for (int64_t t0 = 0;; t0 += 8) {
    const int64_t n = next_rows8(k, &run, &at, rows, head_size);
    if (n == 0) break;
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = q + h * q_head_stride;
      __m256 part[8];
      for (int64_t j = 0; j < 8; ++j) part[j] = j < n ? dot_partials(qh, rows[j], head_size) : _mm256_setzero_ps();
      _mm256_maskstore_ps(scores + h * ld + t0, tail_mask(n), _mm256_mul_ps(reduce8(part), vscale));
    }
  }
}

// One value row into the accumulators: a[g] += p[g * ld] * row, for G heads.
template <int G>
[[gnu::always_inline]] inline void pv_row(const float* p, int64_t ld, const float* row, __m256i m, __m256 (&a)[G]) {
  const __m256 vt = _mm256_maskload_ps(row, m);
  for (int g = 0; g < G; ++g) a[g] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + g * ld), vt, a[g]);
}

template <int G>
void pv_heads(const float* p, int64_t ld, const KeyRows* v, int64_t v_head_size, float* acc, int64_t acc_stride) {
  for (int64_t d = 0; d < v_head_size; d += 8) {
    const __m256i m = tail_mask(v_head_size - d < 8 ? v_head_size - d : 8);
    __m256 a[G];
    for (int g = 0; g < G; ++g) a[g] = _mm256_maskload_ps(acc + g * acc_stride + d, m);
    int64_t t = 0;
    for (int64_t r = 0; r < v->runs; ++r) {
      const float* vr = v->rows[r] + d;
      const int64_t n = v->lengths[r];
      // Rows with a row to prefetch in a run about kValueRowsAhead rows ahead (none for one run).
      const int64_t ra = r + runs_ahead(n, kValueRowsAhead);
      const int64_t ahead = ra < v->runs ? (v->lengths[ra] < n ? v->lengths[ra] : n) : 0;
      int64_t i = 0;
      for (; i < ahead; ++i, ++t) {
        prefetch_row(v, ra, i, d, 8);
        pv_row<G>(p + t, ld, vr + i * v->row_stride, m, a);
      }
      for (; i < n; ++i, ++t) pv_row<G>(p + t, ld, vr + i * v->row_stride, m, a);
    }
    for (int g = 0; g < G; ++g) _mm256_maskstore_ps(acc + g * acc_stride + d, m, a[g]);
  }
}

void f32_pv_runs_avx2_g4(const float* p, int64_t ld, int64_t heads, const KeyRows* v, int64_t v_head_size, float* acc,
                         int64_t acc_stride) {
  int64_t h = 0;
  for (; h + 4 <= heads; h += 4) pv_heads<4>(p + h * ld, ld, v, v_head_size, acc + h * acc_stride, acc_stride);
  const float* ph = p + h * ld;
  float* ah = acc + h * acc_stride;
  switch (heads - h) {
    case 3: pv_heads<3>(ph, ld, v, v_head_size, ah, acc_stride); break;
    case 2: pv_heads<2>(ph, ld, v, v_head_size, ah, acc_stride); break;
    case 1: pv_heads<1>(ph, ld, v, v_head_size, ah, acc_stride); break;
    default: break;
  }
}

void f32_qk_avx2_u8(const float* q, int64_t q_head_stride, int64_t heads, const float* k, int64_t k_row_stride,
                    int64_t keys, int64_t head_size, float scale, float* scores, int64_t ld) {
  const KeyRows one{&k, &keys, 1, k_row_stride};
  f32_qk_runs_avx2_u8(q, q_head_stride, heads, &one, head_size, scale, scores, ld);
}

void f32_pv_avx2_g4(const float* p, int64_t ld, int64_t heads, const float* v, int64_t v_row_stride, int64_t keys,
                    int64_t v_head_size, float* acc, int64_t acc_stride) {
  const KeyRows one{&v, &keys, 1, v_row_stride};
  f32_pv_runs_avx2_g4(p, ld, heads, &one, v_head_size, acc, acc_stride);
}

}  // namespace

void fill_attention_avx2(AttentionTable& t) {
  t.f32_qk = f32_qk_avx2_u8;
  t.f32_pv = f32_pv_avx2_g4;
  t.f32_qk_runs = f32_qk_runs_avx2_u8;
  t.f32_pv_runs = f32_pv_runs_avx2_g4;
}

}  // namespace ember::kernels::attention
