#include "kernels/attention/attention_layout.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "base/buffer.h"
#include "kernels/common/convert.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

// Cache rows are copied in ranges of at least this many floats (grain = this /
// (rows * head_size) heads). Not yet timed: chosen as RotaryEmbedding's
// measured 16Ki-element grain (rotary.cpp), the same memory-bound row copy.
constexpr int64_t kCopyGrainFloats = 16384;

// float16 rows with a bias are summed in f32 blocks of this many on the stack.
constexpr int64_t kRowBlock = 256;

thread_local std::array<AlignedBuffer, static_cast<size_t>(ScratchSlot::kCount)> t_scratch;

void copy_rows(const float* src, int64_t src_stride, const float* bias, int64_t rows, int64_t width, float* dst) {
  for (int64_t s = 0; s < rows; ++s) {
    const float* in = src + s * src_stride;
    float* out = dst + s * width;
    if (bias) {
      for (int64_t d = 0; d < width; ++d) out[d] = in[d] + bias[d];
    } else {
      std::memcpy(out, in, static_cast<size_t>(width) * sizeof(float));
    }
  }
}

// copy_rows into a float16 cache: each row (plus bias) rounded once.
void narrow_rows(const FloatStage& stage, const float* src, int64_t src_stride, const float* bias, int64_t rows,
                 int64_t width, uint16_t* dst) {
  float sum[kRowBlock];
  for (int64_t s = 0; s < rows; ++s) {
    const float* in = src + s * src_stride;
    uint16_t* out = dst + s * width;
    if (!bias) {
      stage.narrow(in, out, width);
      continue;
    }
    for (int64_t d0 = 0; d0 < width; d0 += kRowBlock) {
      const int64_t n = std::min(kRowBlock, width - d0);
      for (int64_t d = 0; d < n; ++d) sum[d] = in[d0 + d] + bias[d0 + d];
      stage.narrow(sum, out + d0, n);
    }
  }
}

}  // namespace

Status check_input_dtype(const KernelInit& init, size_t i, const char* name, DType want) {
  const DType t = input_dtype(init, i);
  if (t == DType::kUndefined || t == want) return Status::ok();
  return invalid_argument("node '{}': input '{}' is {}, expected {}", init.node.name, name, dtype_name(t),
                          dtype_name(want));
}

Result<DType> check_float_inputs(const KernelInit& init, const char* op, size_t first, const char* first_name,
                                 std::initializer_list<std::pair<size_t, const char*>> others) {
  const DType t = input_dtype(init, first);
  if (t != DType::kF32 && t != DType::kF16) {
    return not_implemented("node '{}': input '{}' is {}; {} runs float32 and float16 (as ONNX Runtime's CPU kernel)",
                           init.node.name, first_name, dtype_name(t), op);
  }
  for (const auto& [i, name] : others) EMBER_RETURN_IF_ERROR(check_input_dtype(init, i, name, t));
  return t;
}

float* scratch_floats(ScratchSlot slot, int64_t count) {
  AlignedBuffer& b = t_scratch[static_cast<size_t>(slot)];
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float);
  b.resize(bytes);
  return static_cast<float*>(b.data());
}

FloatStage::FloatStage(DType dtype) : dtype_(dtype) {
  if (dtype == DType::kF16) {
    to_f32_ = convert_table().f16_to_f32;
    from_f32_ = convert_table().f32_to_f16;
  } else if (dtype == DType::kBF16) {
    to_f32_ = convert_table().bf16_to_f32;
    from_f32_ = convert_table().f32_to_bf16;
  }
}

const float* FloatStage::input(const Tensor& t, ScratchSlot slot) const {
  if (is_f32()) return t.data_as<float>();
  float* out = scratch_floats(slot, t.numel());
  const uint16_t* x = t.data_as<uint16_t>();
  threading::parallel_for(t.numel(), kCopyGrainFloats,
                          [&](int64_t begin, int64_t end) { to_f32_(x + begin, out + begin, end - begin); });
  return out;
}

float* FloatStage::output(Tensor& t, ScratchSlot slot) const {
  return is_f32() ? t.data_as<float>() : scratch_floats(slot, t.numel());
}

void FloatStage::finish(const float* values, Tensor& t) const {
  if (is_f32()) return;
  uint16_t* y = t.data_as<uint16_t>();
  threading::parallel_for(t.numel(), kCopyGrainFloats,
                          [&](int64_t begin, int64_t end) { from_f32_(values + begin, y + begin, end - begin); });
}

void FloatStage::narrow(const float* x, void* y, int64_t n) const {
  if (is_f32()) {
    std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
  } else {
    from_f32_(x, static_cast<uint16_t*>(y), n);
  }
}

void FloatStage::widen(const void* x, float* y, int64_t n) const {
  if (is_f32()) {
    std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
  } else {
    to_f32_(static_cast<const uint16_t*>(x), y, n);
  }
}

HeadLayout write_cache(const CacheWrite& w, const FloatStage& stage, void* dst, float* view) {
  const int64_t total = w.past_rows + w.rows;
  const int64_t head_elems = total * w.head_size;
  const size_t esize = stage.element_size();
  const int64_t grain = std::max<int64_t>(1, kCopyGrainFloats / std::max<int64_t>(1, head_elems));
  threading::parallel_for(w.batch * w.heads, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / w.heads, n = i % w.heads;
      char* out = static_cast<char*>(dst) + static_cast<size_t>(i * head_elems) * esize;
      const size_t past_bytes = static_cast<size_t>(w.past_rows * w.head_size) * esize;
      if (w.past_rows > 0) std::memcpy(out, static_cast<const char*>(w.past) + i * past_bytes, past_bytes);
      const float* bias = w.bias ? w.bias + n * w.head_size : nullptr;
      if (stage.is_f32()) {
        copy_rows(w.src.at(b, n, 0), w.src.row_stride, bias, w.rows, w.head_size,
                  reinterpret_cast<float*>(out + past_bytes));
      } else {
        narrow_rows(stage, w.src.at(b, n, 0), w.src.row_stride, bias, w.rows, w.head_size,
                    reinterpret_cast<uint16_t*>(out + past_bytes));
        stage.widen(out, view + i * head_elems, head_elems);
      }
    }
  });
  return bnsh_layout(stage.is_f32() ? static_cast<const float*>(dst) : view, w.heads, total, w.head_size);
}

HeadLayout key_value_cache(KernelContext& ctx, const FloatStage& stage, const CacheSlots& at, CacheWrite w) {
  if (!ctx.has_output(at.present) && w.past_rows == 0 && w.bias == nullptr) return w.src;
  const int64_t count = w.batch * w.heads * (w.past_rows + w.rows) * w.head_size;
  void* dst = ctx.has_output(at.present) ? ctx.output(at.present).data() : scratch_floats(at.cache, count);
  float* view = stage.is_f32() ? nullptr : scratch_floats(at.view, count);
  w.past = w.past_rows > 0 ? ctx.input(at.past).data() : nullptr;
  return write_cache(w, stage, dst, view);
}

ScoreBias mask_scores(MaskForm form, const int32_t* mask, int64_t batch, int64_t seq, int64_t total,
                      float filter_value) {
  const int64_t rows = form == MaskForm::kPerQuery ? seq : 1;
  float* out = scratch_floats(ScratchSlot::kMask, batch * rows * total);
  for (int64_t b = 0; b < batch; ++b) {
    float* row = out + b * rows * total;
    if (form == MaskForm::kEnd || form == MaskForm::kEndStart) {
      const int64_t end = std::clamp<int64_t>(mask[b], 0, total);
      const int64_t start = form == MaskForm::kEndStart ? std::clamp<int64_t>(mask[batch + b], 0, total) : 0;
      for (int64_t t = 0; t < total; ++t) row[t] = t < start || t >= end ? filter_value : 0.0f;
      continue;
    }
    const int32_t* m = mask + b * rows * total;
    for (int64_t j = 0; j < rows * total; ++j) row[j] = m[j] > 0 ? 0.0f : filter_value;
  }
  return {out, rows * total, 0, form == MaskForm::kPerQuery ? total : 0};
}

ScoreBias attention_bias_scores(const Tensor& bias) {
  const int64_t plane = bias.dim(2) * bias.dim(3);
  return {bias.data_as<float>(), bias.dim(0) == 1 ? 0 : bias.dim(1) * plane, bias.dim(1) == 1 ? 0 : plane,
          bias.dim(3)};
}

ScoreBias combine_scores(const ScoreBias& bias, int64_t bias_heads, const ScoreBias& mask, int64_t batch,
                         int64_t seq, int64_t total) {
  float* out = scratch_floats(ScratchSlot::kBias, batch * bias_heads * seq * total);
  threading::parallel_for(batch * bias_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / bias_heads, n = i % bias_heads;
      for (int64_t s = 0; s < seq; ++s) {
        const float* x = bias.data + b * bias.batch_stride + n * bias.head_stride + s * bias.row_stride;
        const float* m = mask.data + b * mask.batch_stride + s * mask.row_stride;
        float* y = out + (i * seq + s) * total;
        for (int64_t t = 0; t < total; ++t) y[t] = x[t] + m[t];
      }
    }
  });
  return {out, bias_heads * seq * total, bias_heads == 1 ? 0 : seq * total, total};
}

ScoreBias padding_and_bias_scores(MaskForm form, const Tensor* mask, const Tensor* attention_bias,
                                  const FloatStage& stage, int64_t batch, int64_t seq, int64_t total,
                                  float filter_value) {
  ScoreBias padding;
  if (form != MaskForm::kNone) padding = mask_scores(form, mask->data_as<int32_t>(), batch, seq, total, filter_value);
  if (!attention_bias) return padding;
  ScoreBias bias = attention_bias_scores(*attention_bias);
  bias.data = stage.input(*attention_bias, ScratchSlot::kInScores);
  return padding.data ? combine_scores(bias, attention_bias->dim(1), padding, batch, seq, total) : bias;
}

void run_problem(const AttentionProblem& p) {
  const int64_t group = p.q_heads / p.kv_heads;
  attend(p.spec, p.batch * p.kv_heads, [&](int64_t i) {
    const int64_t b = i / p.kv_heads, g = i % p.kv_heads, n0 = g * group;
    AttentionSlice s;
    s.heads = group;
    s.rows = p.seq;
    s.keys = p.total;
    s.q = p.q.at(b, n0, 0);
    s.q_head_stride = p.q.head_stride;
    s.q_row_stride = p.q.row_stride;
    s.k = p.k.at(b, g, 0);
    s.k_row_stride = p.k.row_stride;
    s.v = p.v.at(b, g, 0);
    s.v_row_stride = p.v.row_stride;
    s.out = p.out + b * p.out_batch_stride + n0 * p.out_head_stride;
    s.out_head_stride = p.out_head_stride;
    s.out_row_stride = p.out_row_stride;
    s.causal_end = p.causal_end;
    if (p.bias.data) {
      s.bias = p.bias.data + b * p.bias.batch_stride + n0 * p.bias.head_stride;
      s.bias_head_stride = p.bias.head_stride;
      s.bias_row_stride = p.bias.row_stride;
    }
    return s;
  });
}

}  // namespace ember::kernels::attention
