#include "kernels/attention/attention_ukernels.h"

#include "kernels/common/isa_tables.h"

namespace ember::kernels::attention {
namespace {

void f32_qk_runs_scalar(const float* q, int64_t q_head_stride, int64_t heads, const KeyRows* k, int64_t head_size,
                        float scale, float* scores, int64_t ld) {
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * q_head_stride;
    int64_t t = 0;
    for (int64_t r = 0; r < k->runs; ++r) {
      for (int64_t i = 0; i < k->lengths[r]; ++i, ++t) {
        const float* kt = k->rows[r] + i * k->row_stride;
        float dot = 0.0f;
        for (int64_t d = 0; d < head_size; ++d) dot += qh[d] * kt[d];
        scores[h * ld + t] = scale * dot;
      }
    }
  }
}

void f32_pv_runs_scalar(const float* p, int64_t ld, int64_t heads, const KeyRows* v, int64_t v_head_size, float* acc,
                        int64_t acc_stride) {
  for (int64_t h = 0; h < heads; ++h) {
    float* a = acc + h * acc_stride;
    int64_t t = 0;
    for (int64_t r = 0; r < v->runs; ++r) {
      for (int64_t i = 0; i < v->lengths[r]; ++i, ++t) {
        const float w = p[h * ld + t];
        const float* vt = v->rows[r] + i * v->row_stride;
        for (int64_t d = 0; d < v_head_size; ++d) a[d] += w * vt[d];
      }
    }
  }
}

void f32_qk_scalar(const float* q, int64_t q_head_stride, int64_t heads, const float* k, int64_t k_row_stride,
                   int64_t keys, int64_t head_size, float scale, float* scores, int64_t ld) {
  const KeyRows one{&k, &keys, 1, k_row_stride};
  f32_qk_runs_scalar(q, q_head_stride, heads, &one, head_size, scale, scores, ld);
}

void f32_pv_scalar(const float* p, int64_t ld, int64_t heads, const float* v, int64_t v_row_stride, int64_t keys,
                   int64_t v_head_size, float* acc, int64_t acc_stride) {
  const KeyRows one{&v, &keys, 1, v_row_stride};
  f32_pv_runs_scalar(p, ld, heads, &one, v_head_size, acc, acc_stride);
}

void fill_attention_scalar(AttentionTable& t) {
  t.f32_qk = f32_qk_scalar;
  t.f32_pv = f32_pv_scalar;
  t.f32_qk_runs = f32_qk_runs_scalar;
  t.f32_pv_runs = f32_pv_runs_scalar;
}

}  // namespace

const AttentionTable& attention_table(Isa isa) {
  static const auto tables =
      build_isa_tables<AttentionTable>(fill_attention_scalar, fill_attention_avx2, fill_attention_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels::attention
