#pragma once
// Decode-attention microkernels, f32: the scores of a group of query heads
// against a block of keys (each key row read once for the whole group), and the
// probability-weighted sum of value rows into the group's accumulators.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::attention {

// Key (or value) rows in runs, in key order: run i is lengths[i] rows from
// rows[i], row_stride floats apart. A contiguous range of keys is one run; a
// paged cache gives one run per block.
struct KeyRows {
  const float* const* rows;
  const int64_t* lengths;
  int64_t runs;
  int64_t row_stride;
};

struct AttentionTable {
  // scores[h * ld + t] = scale * sum_d q[h * q_head_stride + d] * k[t * k_row_stride + d]
  // for h < heads, t < keys, d < head_size.
  void (*f32_qk)(const float* q, int64_t q_head_stride, int64_t heads, const float* k, int64_t k_row_stride,
                 int64_t keys, int64_t head_size, float scale, float* scores, int64_t ld);
  // acc[h * acc_stride + d] += sum_t p[h * ld + t] * v[t * v_row_stride + d]
  // for h < heads, d < v_head_size, t < keys (t in increasing order).
  void (*f32_pv)(const float* p, int64_t ld, int64_t heads, const float* v, int64_t v_row_stride, int64_t keys,
                 int64_t v_head_size, float* acc, int64_t acc_stride);
  // f32_qk and f32_pv over keys in runs (keys = the runs' total length), with
  // the bits of one f32_qk / f32_pv call over the same rows laid out in a row:
  // f32_qk and f32_pv are these with one run.
  void (*f32_qk_runs)(const float* q, int64_t q_head_stride, int64_t heads, const KeyRows* k, int64_t head_size,
                      float scale, float* scores, int64_t ld);
  void (*f32_pv_runs)(const float* p, int64_t ld, int64_t heads, const KeyRows* v, int64_t v_head_size, float* acc,
                      int64_t acc_stride);
};

const AttentionTable& attention_table(Isa isa);
inline const AttentionTable& attention_table() { return attention_table(active_isa()); }

void fill_attention_avx2(AttentionTable& t);
void fill_attention_avx512(AttentionTable& t);

}  // namespace ember::kernels::attention
