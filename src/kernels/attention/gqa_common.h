#pragma once
// What com.microsoft GroupQueryAttention and its paged form, ember
// PagedAttention, share: their common attributes, the checks of the inputs
// both have (query, key/value, cos/sin caches, head_sink), rotary embedding of
// new rows, and float16 computed in f32 (inputs converted once per run, cache
// rows stored rounded, the output rounded once). Each op keeps its own cache
// layout and lengths.
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "base/buffer.h"
#include "base/status.h"
#include "base/tensor.h"
#include "kernels/attention/attention_core.h"
#include "kernels/attention/rotary_ukernels.h"
#include "kernels/common/convert.h"
#include "kernels/kernel.h"

namespace ember::kernels::attention {

// Elements per parallel_for range when rotating, storing and converting rows:
// a decode step (one row per head) stays inline. GroupQueryAttention's measured grain.
constexpr int64_t kGqaCopyGrainElements = 16384;

struct GqaAttrs {
  int64_t num_heads = 0, kv_num_heads = 0;
  float scale = 0.0f, softcap = 0.0f;
  int64_t local_window = -1;
  bool do_rotary = false, interleaved = false, smooth_softmax = false;
  int64_t window() const { return local_window > 0 ? local_window : 0; }
};

// num_heads, kv_num_heads, scale, softcap, local_window_size, do_rotary,
// rotary_interleaved, smooth_softmax and qk_output (must be 0), validated; the
// reader's status covers whatever else the caller read from `r` before.
Result<GqaAttrs> read_gqa_attrs(ir::AttrReader& r);

// The op's dtype: input `query` float32 or float16, each of `others` omitted or the same.
Result<DType> gqa_float_dtype(const KernelInit& init, const char* op, size_t query,
                              std::initializer_list<size_t> others);
// Input i (named `name`) must be int32.
Status check_int32_input(const KernelInit& init, size_t i, const char* name);

// Grows b to n floats (at least one).
float* grow_floats(AlignedBuffer& b, int64_t n);

// The cos and sin rows of one position as f32.
struct TrigRows {
  const float *cos = nullptr, *sin = nullptr;
};

// Where each token's query, key and value heads start: packed [q | k | v] rows
// when key and value are omitted.
struct QkvRows {
  const float *query = nullptr, *key = nullptr, *value = nullptr;  // f32 (staged for f16)
  int64_t row_floats = 0, kv_row_floats = 0;
};

// The op object both derive from: attributes, dtype and the helpers above the core.
class GqaKernel : public OpKernel {
 protected:
  GqaKernel(GqaAttrs at, DType dtype);

  // query's head size: query's last dimension over num_heads (or the packed
  // head count when key is omitted); key and value both given or both omitted.
  Result<int64_t> head_size(const KernelContext& ctx, const Tensor& q, bool packed, size_t value) const;
  // rotary_dim from cos_cache/sin_cache (0 without do_rotary).
  Result<int64_t> rotary_dim(const KernelContext& ctx, size_t cos, size_t sin, int64_t head_size) const;
  Status check_head_sink(const KernelContext& ctx, size_t sink) const;

  // The f32 values of float inputs, nullptr where omitted: the tensors' data
  // for float32, else converted into one per-thread buffer.
  void float_inputs(const KernelContext& ctx, std::initializer_list<std::pair<size_t, const float**>> inputs) const;
  // query/key/value (key and value as columns of query's rows when packed).
  QkvRows qkv_rows(const float* query, const float* key, const float* value, bool packed, int64_t head_size) const;

  // The cos and sin rows of `position` of caches in the op's dtype, [max_position, rot / 2]
  // (converted into buf, rot floats, for f16).
  TrigRows trig_rows(const void* cos, const void* sin, int64_t rot, int64_t position, float* buf) const;
  // y = x with its first rot elements rotated (half-split or interleaved pairs).
  void rotate(const float* x, TrigRows trig, float* y, int64_t rot, int64_t head_size) const;
  // One f32 row into a cache row in the op's dtype.
  void store_row(const float* src, char* dst, int64_t head_size) const;

  AttentionSpec attention_spec(int64_t head_size, bool sinks) const;
  // Where output 0's n values are computed, and their rounding into it (f16).
  float* output_floats(KernelContext& ctx, int64_t n) const;
  void finish_output(KernelContext& ctx, const float* out, int64_t n) const;

  GqaAttrs at_;
  DType dtype_;  // f32, or f16 computed in f32
  const RotaryTable* rotary_;
  const ConvertTable* convert_;
};

}  // namespace ember::kernels::attention
