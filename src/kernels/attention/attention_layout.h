#pragma once
// What MultiHeadAttention, com.microsoft Attention and ONNX Attention-23 share
// around the attention core: where each head's rows lie in the op's tensors,
// gathering rows into a BNSH key/value cache (past rows, then new rows plus an
// optional bias), int32 mask_index forms turned into additive scores, float16
// staging around the f32 core, and one call that describes the whole problem
// to attend() as slices.
#include <cstdint>
#include <initializer_list>
#include <utility>

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

// The op's float dtype: input `first` (named first_name) must be float32 or
// float16 (ONNX Runtime 1.30's CPU kernels run these ops in both, none in
// bfloat16), and each of `others` omitted or of the same dtype.
Result<DType> check_float_inputs(const KernelInit& init, const char* op, size_t first, const char* first_name,
                                 std::initializer_list<std::pair<size_t, const char*>> others);

// Per-thread buffers reused between runs (they only grow), one per role. The
// kIn* slots hold float16 inputs converted to f32, kOutput/kScoresOutput f32
// results before rounding, kKeyView/kValueView float16 caches as f32.
enum class ScratchSlot {
  kQuery,
  kKey,
  kValue,
  kMask,
  kBias,
  kProjection,
  kInQuery,
  kInKey,
  kInValue,
  kInBias,
  kInScores,
  kOutput,
  kScoresOutput,
  kKeyView,
  kValueView,
  kCount
};
float* scratch_floats(ScratchSlot slot, int64_t count);

// An op's float dtype around the f32 core, as GroupQueryAttention does it:
// float32 tensors are read and written in place; float16 (or bfloat16) inputs
// are converted to f32 once per run, caches are stored in that dtype and
// attention reads them back as f32, and the output is computed in f32 and
// rounded once.
class FloatStage {
 public:
  explicit FloatStage(DType dtype);  // kF32, kF16 or kBF16
  DType dtype() const { return dtype_; }
  bool is_f32() const { return dtype_ == DType::kF32; }
  size_t element_size() const { return is_f32() ? sizeof(float) : sizeof(uint16_t); }
  // The f32 values of a float input: its own data, or converted into `slot`.
  const float* input(const Tensor& t, ScratchSlot slot) const;
  // Where the f32 values of output `t` are computed: its data, or `slot`.
  float* output(Tensor& t, ScratchSlot slot) const;
  // Rounds values computed at output(t, ...) into t (nothing for float32).
  void finish(const float* values, Tensor& t) const;
  void narrow(const float* x, void* y, int64_t n) const;
  void widen(const void* x, float* y, int64_t n) const;

 private:
  DType dtype_;
  void (*to_f32_)(const uint16_t*, float*, int64_t) = nullptr;
  void (*from_f32_)(const float*, uint16_t*, int64_t) = nullptr;
};

// Dense [B, heads, total_rows, head_size] from `past` (dense [B, heads,
// past_rows, head_size] in the cache's dtype, or nullptr when past_rows is 0)
// followed by the `rows` f32 rows of `src`, each plus bias[n * head_size + d]
// when bias is set.
struct CacheWrite {
  int64_t batch = 0, heads = 0, head_size = 0;
  int64_t past_rows = 0, rows = 0;
  const void* past = nullptr;
  HeadLayout src;
  const float* bias = nullptr;
};
// Writes the cache at dst in `stage`'s dtype and returns the f32 rows attention
// reads: dst itself for float32, else `view` holding dst's rounded values
// (each head converted right after it is written, while it is in cache).
HeadLayout write_cache(const CacheWrite& w, const FloatStage& stage, void* dst, float* view);

// Where one K or V cache goes: the op's past input and present output, and the
// scratch for the cache when the present output is omitted and for the f32
// view of a float16 cache.
struct CacheSlots {
  size_t past = 0, present = 0;
  ScratchSlot cache = ScratchSlot::kKey, view = ScratchSlot::kKeyView;
};
// K or V rows as attention reads them: w.src itself when there is no past, no
// bias and no present output, else write_cache's rows (w.past is filled here).
HeadLayout key_value_cache(KernelContext& ctx, const FloatStage& stage, const CacheSlots& at, CacheWrite w);

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

// The additive scores of MultiHeadAttention and contrib Attention: the padding
// mask `mask` (in `form`, as mask_filter_value scores), attention_bias, both
// (combined), or neither (empty).
ScoreBias padding_and_bias_scores(MaskForm form, const Tensor* mask, const Tensor* attention_bias,
                                  const FloatStage& stage, int64_t batch, int64_t seq, int64_t total,
                                  float filter_value);

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
