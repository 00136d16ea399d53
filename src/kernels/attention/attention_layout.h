#pragma once
// What MultiHeadAttention, com.microsoft Attention and ONNX Attention-23 share
// around the attention core: where each head's rows lie in the op's tensors,
// gathering rows into a BNSH key/value cache (past rows, then new rows plus an
// optional bias), int32 mask_index forms turned into additive scores, and one
// call that describes the whole problem to attend() as slices.
#include <cstdint>

#include "base/status.h"
#include "base/tensor.h"
#include "kernels/attention/attention_core.h"
#include "kernels/kernel.h"

namespace ember::kernels::attention {

// Row s of head n of batch row b starts at data + b * batch + n * head + s * row.
struct HeadLayout {
  const float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
  const float* at(int64_t b, int64_t n, int64_t s) const {
    return data + b * batch_stride + n * head_stride + s * row_stride;
  }
};

// [B, S, heads * head_size] rows of width `row_width` (>= heads * head_size: a
// column block of a wider packed row, as the contrib Attention's QKV projection).
inline HeadLayout bsd_layout(const float* data, int64_t seq, int64_t head_size, int64_t row_width) {
  return {data, seq * row_width, head_size, row_width};
}
// Dense [B, heads, S, head_size].
inline HeadLayout bnsh_layout(const float* data, int64_t heads, int64_t seq, int64_t head_size) {
  return {data, heads * seq * head_size, seq * head_size, head_size};
}

// OK when input i is omitted or of dtype `want`; the error names the input.
Status check_input_dtype(const KernelInit& init, size_t i, const char* name, DType want);

// Per-thread buffers reused between runs (they only grow), one per role.
enum class ScratchSlot { kQuery, kKey, kValue, kMask, kBias, kProjection, kCount };
float* scratch_floats(ScratchSlot slot, int64_t count);

// Dense [B, heads, total_rows, head_size] from `past` (dense [B, heads,
// past_rows, head_size], or nullptr when past_rows is 0) followed by the
// `rows` rows of `src`, each plus bias[n * head_size + d] when bias is set.
struct CacheWrite {
  int64_t batch = 0, heads = 0, head_size = 0;
  int64_t past_rows = 0, rows = 0;
  const float* past = nullptr;
  HeadLayout src;
  const float* bias = nullptr;
};
void write_cache(const CacheWrite& w, float* dst);

// How an int32 mask_index reads (ONNX Runtime's AttentionMaskType), with 1 =
// attend and 0 = masked; masked keys add mask_filter_value to the score.
enum class MaskForm {
  kNone,
  kEnd,         // [B]: keys at or after mask[b] are masked (right padding)
  kEndStart,    // [2B]: also keys before mask[B + b] (left padding)
  kKeyPadding,  // [B, T] 0/1
  kPerQuery,    // [B, S, T] 0/1
};

// The additive scores of a mask: bias for (b, s) at data + b * batch_stride + s * row_stride.
struct ScoreBias {
  const float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
};

// Writes the mask's scores into scratch: [B, T] for the per-batch forms
// (row_stride 0), [B, S, T] for kPerQuery. kEnd reads mask[0, B) only, which is
// how ONNX Runtime's CPU kernel reads MultiHeadAttention's [3B + 2] form too.
ScoreBias mask_scores(MaskForm form, const int32_t* mask, int64_t batch, int64_t seq, int64_t total,
                      float filter_value);

// attention_bias [B or 1, N or 1, S, T] as scores.
ScoreBias attention_bias_scores(const Tensor& bias);

// One buffer [B, N_bias, S, T] = bias + mask, in that order (as ONNX Runtime
// sums them before adding the scaled Q.K), when an op has both.
ScoreBias combine_scores(const ScoreBias& bias, int64_t bias_heads, const ScoreBias& mask, int64_t batch,
                         int64_t seq, int64_t total);

// The whole call: B x kv_heads slices of q_heads / kv_heads query heads each.
struct AttentionProblem {
  AttentionSpec spec;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, seq = 0, total = 0;
  HeadLayout q, k, v;
  float* out = nullptr;
  int64_t out_batch_stride = 0, out_head_stride = 0, out_row_stride = 0;
  int64_t causal_end = -1;  // AttentionSlice::causal_end
  ScoreBias bias;
};
void run_problem(const AttentionProblem& p);

}  // namespace ember::kernels::attention
