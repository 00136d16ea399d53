#pragma once
// The scaled-dot-product attention every attention op shares (GroupQueryAttention,
// MultiHeadAttention, Attention): the op lays out its tensors, writes its KV
// cache, and describes the work as slices; this core computes
//
//   score[t] = scale * q . k[t], softcapped and biased in the op's order,
//   p = softmax over the keys the row may see, out = sum_t p[t] v[t]
//
// in f32. A slice is one batch row and a group of query heads that read the
// same key/value head (GQA's head grouping; plain attention has groups of 1).
#include <cstdint>

#include "threading/function_ref.h"

namespace ember::kernels::attention {

// What every row of every slice of one op call shares.
struct AttentionSpec {
  int64_t head_size = 0;    // q and k row length
  int64_t v_head_size = 0;  // v and output row length
  float scale = 1.0f;
  // > 0: score = softcap * tanh(score / softcap), before the bias is added
  // (ONNX Runtime's GroupQueryAttention) or after (softcap_after_bias: ONNX Attention-23).
  float softcap = 0.0f;
  bool softcap_after_bias = false;
  // The softmax denominator gains exp(sink - max) with sink the head's entry of
  // AttentionSlice::sinks, or 0 without sinks (ORT's smooth_softmax / head_sink).
  bool smooth_softmax = false;
  // Every row runs the decode algorithm (its visible keys cut into fixed chunks
  // from its first visible key, merged in chunk order), whatever its slice's
  // row count: a row's bits then depend only on its q row, the keys it sees and
  // this spec, never on how many rows or slices share the call (batch
  // invariance, which PagedAttention needs). Otherwise slices of more than a
  // few rows run as GEMMs, whose sums depend on the block shapes.
  bool row_invariant = false;
};

// One batch row x `heads` query heads over `keys` key/value rows. Strides are in
// elements. Row r of every head sees keys [first(r), end(r)):
//   end(r)   = keys, or min(keys, causal_end + r + 1) when causal_end >= 0;
//   first(r) = max(0, end(r) - window) when window > 0, else 0.
// A row that sees no key, or whose visible scores are all -inf, outputs zeros.
//
// Keys and values are rows of k and v (key t at k + t * k_row_stride), or, when
// `blocks` is set, a paged cache (vLLM's block table): key t is row
// t % block_rows of block blocks[t / block_rows], at
// k + blocks[t / block_rows] * k_block_stride + (t % block_rows) * k_row_stride
// (values alike). Paged slices always run row-invariant (AttentionSpec).
struct AttentionSlice {
  int64_t heads = 1;
  int64_t rows = 0;
  int64_t keys = 0;
  const float* q = nullptr;
  int64_t q_head_stride = 0, q_row_stride = 0;
  const float* k = nullptr;
  int64_t k_row_stride = 0;
  const float* v = nullptr;
  int64_t v_row_stride = 0;
  float* out = nullptr;
  int64_t out_head_stride = 0, out_row_stride = 0;
  int64_t causal_end = -1;
  int64_t window = 0;
  // Additive scores: bias[h * bias_head_stride + r * bias_row_stride + t] for key t
  // (strides may be 0 to broadcast), or nullptr.
  const float* bias = nullptr;
  int64_t bias_head_stride = 0, bias_row_stride = 0;
  const float* sinks = nullptr;  // one per head of the slice, read when spec.smooth_softmax
  const int32_t* blocks = nullptr;
  int64_t block_rows = 0, k_block_stride = 0, v_block_stride = 0;
};

inline const float* slice_key(const AttentionSlice& s, int64_t t) {
  if (!s.blocks) return s.k + t * s.k_row_stride;
  return s.k + s.blocks[t / s.block_rows] * s.k_block_stride + t % s.block_rows * s.k_row_stride;
}
inline const float* slice_value(const AttentionSlice& s, int64_t t) {
  if (!s.blocks) return s.v + t * s.v_row_stride;
  return s.v + s.blocks[t / s.block_rows] * s.v_block_stride + t % s.block_rows * s.v_row_stride;
}

// Visible key range of row r.
inline int64_t slice_key_end(const AttentionSlice& s, int64_t r) {
  if (s.causal_end < 0) return s.keys;
  const int64_t end = s.causal_end + r + 1;
  return end < s.keys ? end : s.keys;
}
inline int64_t slice_key_first(const AttentionSlice& s, int64_t r) {
  const int64_t end = slice_key_end(s, r);
  return s.window > 0 && end > s.window ? end - s.window : 0;
}

// The oracle: plain loops, scores and sums in double, softmax with the exact max.
void attend_reference(const AttentionSpec& spec, const AttentionSlice& slice);

// Runs slices [0, count) on the pool (slice(i) describes slice i and is called
// from any thread). Decode-shaped slices (few rows), and every slice of a
// row-invariant spec or a paged call, split their keys into fixed chunks merged
// by online softmax; other prompt-shaped slices run blocks of rows as GEMMs
// over the visible keys only. Results do not depend on the thread count.
// Under EMBER_REFERENCE=1 every slice runs attend_reference.
void attend(const AttentionSpec& spec, int64_t count, threading::FunctionRef<AttentionSlice(int64_t)> slice);

}  // namespace ember::kernels::attention
