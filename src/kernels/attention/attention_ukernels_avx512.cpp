#include <immintrin.h>

#include <cstdint>

#include "kernels/attention/attention_ukernels.h"

namespace ember::kernels::attention {
namespace {

__mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// q . k over head_size with 16-lane partial sums left in the vector.
__m512 dot_partials(const float* q, const float* k, int64_t head_size) {
  __m512 acc = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 16 <= head_size; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(k + d), acc);
  if (d < head_size) {
    const __mmask16 m = tail_mask(head_size - d);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, k + d), acc);
  }
  return acc;
}

// Per 128-bit lane: the lane sums of a, b, c, d in elements 0..3.
__m512 lane_sums4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  return _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
}

// Element j = the full sum of v[j]: a transpose-and-add tree, about 3 shuffles per key
// instead of a horizontal reduction each.
__m512 reduce16(const __m512* v) {
  const __m512 a = lane_sums4(v[0], v[1], v[2], v[3]);
  const __m512 b = lane_sums4(v[4], v[5], v[6], v[7]);
  const __m512 c = lane_sums4(v[8], v[9], v[10], v[11]);
  const __m512 d = lane_sums4(v[12], v[13], v[14], v[15]);
  const __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
  const __m512 y = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x88), _mm512_shuffle_f32x4(c, d, 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xDD));
}

// Prefetches floats [from, from + count) of row `at` of run `run`, if it has
// one. A paged cache's blocks are separate streams that the hardware prefetcher
// finds only after their first misses, so the kernels fetch the same row of a
// block some rows ahead while computing this one. Measured on Qwen2-0.5B shapes
// (7 heads per KV head, head size 64) at 4096 L3-resident keys, 1 thread,
// paged over contiguous: 16-row blocks 1.06-1.075 without prefetch, 1.00-1.02
// with; 64-row blocks 1.04-1.05 prefetching two blocks ahead, 1.005-1.02 one.
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

// Fills rows[0, 16) with the next keys of k from the cursor (run, at), and
// prefetches the same rows of a run kKeyRowsAhead rows ahead; returns how many.
int64_t next_rows16(const KeyRows* k, int64_t* run, int64_t* at, const float** rows, int64_t head_size) {
  int64_t n = 0;
  while (n < 16 && *run < k->runs) {
    const int64_t len = k->lengths[*run];
    const int64_t take = len - *at < 16 - n ? len - *at : 16 - n;
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

void f32_qk_runs_avx512_u16(const float* q, int64_t q_head_stride, int64_t heads, const KeyRows* k,
                            int64_t head_size, float scale, float* scores, int64_t ld) {
  const __m512 vscale = _mm512_set1_ps(scale);
  int64_t run = 0, at = 0;
  const float* rows[16];
  for (int64_t t0 = 0;; t0 += 16) {
    const int64_t n = next_rows16(k, &run, &at, rows, head_size);
    if (n == 0) break;
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = q + h * q_head_stride;
      __m512 part[16];
      for (int64_t j = 0; j < 16; ++j) part[j] = j < n ? dot_partials(qh, rows[j], head_size) : _mm512_setzero_ps();
      const __m512 s = _mm512_mul_ps(reduce16(part), vscale);
      _mm512_mask_storeu_ps(scores + h * ld + t0, tail_mask(n), s);
    }
  }
}

// G heads x C 16-float column blocks of accumulators stay in registers while
// each value row (C blocks) is loaded once: rows stream in order, one pass over
// the chunk per group of heads. Measured on the Llama-3.2-1B decode case at
// past 8192 (4 heads per KV head), 1 thread: one 16-column block per pass over
// the rows 3.38 ms, all four blocks per pass 2.25 ms (ember_ab p50, ORT 4.1-4.2 ms).
// One value row into the accumulators: a[g] += p[g * ld] * row, for G heads.
template <int G, int C>
[[gnu::always_inline]] inline void pv_row(const float* p, int64_t ld, const float* row, __mmask16 last,
                                          __m512 (&a)[G][C]) {
  __m512 vt[C];
  for (int c = 0; c < C; ++c) vt[c] = _mm512_maskz_loadu_ps(c == C - 1 ? last : 0xFFFF, row + 16 * c);
  for (int g = 0; g < G; ++g) {
    const __m512 w = _mm512_set1_ps(p[g * ld]);
    for (int c = 0; c < C; ++c) a[g][c] = _mm512_fmadd_ps(w, vt[c], a[g][c]);
  }
}

template <int G, int C>
void pv_block(const float* p, int64_t ld, const KeyRows* v, int64_t d, float* acc, int64_t acc_stride,
              __mmask16 last) {
  __m512 a[G][C];
  for (int g = 0; g < G; ++g) {
    for (int c = 0; c < C; ++c) a[g][c] = _mm512_maskz_loadu_ps(c == C - 1 ? last : 0xFFFF, acc + g * acc_stride + 16 * c);
  }
  int64_t t = 0;
  for (int64_t r = 0; r < v->runs; ++r) {
    const float* vr = v->rows[r] + d;
    const int64_t n = v->lengths[r];
    // Rows with a row to prefetch in a run about kValueRowsAhead rows ahead (none for one run).
    const int64_t ra = r + runs_ahead(n, kValueRowsAhead);
    const int64_t ahead = ra < v->runs ? (v->lengths[ra] < n ? v->lengths[ra] : n) : 0;
    int64_t i = 0;
    for (; i < ahead; ++i, ++t) {
      prefetch_row(v, ra, i, d, 16 * C);
      pv_row<G, C>(p + t, ld, vr + i * v->row_stride, last, a);
    }
    for (; i < n; ++i, ++t) pv_row<G, C>(p + t, ld, vr + i * v->row_stride, last, a);
  }
  for (int g = 0; g < G; ++g) {
    for (int c = 0; c < C; ++c) _mm512_mask_storeu_ps(acc + g * acc_stride + 16 * c, c == C - 1 ? last : 0xFFFF, a[g][c]);
  }
}

template <int G>
void pv_heads(const float* p, int64_t ld, const KeyRows* v, int64_t v_head_size, float* acc, int64_t acc_stride) {
  for (int64_t d = 0; d < v_head_size; d += 64) {
    const int64_t rem = v_head_size - d < 64 ? v_head_size - d : 64;
    const int64_t blocks = (rem + 15) / 16;
    const __mmask16 last = tail_mask(rem - 16 * (blocks - 1));
    float* ad = acc + d;
    switch (blocks) {
      case 1: pv_block<G, 1>(p, ld, v, d, ad, acc_stride, last); break;
      case 2: pv_block<G, 2>(p, ld, v, d, ad, acc_stride, last); break;
      case 3: pv_block<G, 3>(p, ld, v, d, ad, acc_stride, last); break;
      default: pv_block<G, 4>(p, ld, v, d, ad, acc_stride, last); break;
    }
  }
}

void f32_pv_runs_avx512_g4c4(const float* p, int64_t ld, int64_t heads, const KeyRows* v, int64_t v_head_size,
                             float* acc, int64_t acc_stride) {
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

void f32_qk_avx512_u16(const float* q, int64_t q_head_stride, int64_t heads, const float* k, int64_t k_row_stride,
                       int64_t keys, int64_t head_size, float scale, float* scores, int64_t ld) {
  const KeyRows one{&k, &keys, 1, k_row_stride};
  f32_qk_runs_avx512_u16(q, q_head_stride, heads, &one, head_size, scale, scores, ld);
}

void f32_pv_avx512_g4c4(const float* p, int64_t ld, int64_t heads, const float* v, int64_t v_row_stride, int64_t keys,
                        int64_t v_head_size, float* acc, int64_t acc_stride) {
  const KeyRows one{&v, &keys, 1, v_row_stride};
  f32_pv_runs_avx512_g4c4(p, ld, heads, &one, v_head_size, acc, acc_stride);
}

}  // namespace

void fill_attention_avx512(AttentionTable& t) {
  t.f32_qk = f32_qk_avx512_u16;
  t.f32_pv = f32_pv_avx512_g4c4;
  t.f32_qk_runs = f32_qk_runs_avx512_u16;
  t.f32_pv_runs = f32_pv_runs_avx512_g4c4;
}

}  // namespace ember::kernels::attention
