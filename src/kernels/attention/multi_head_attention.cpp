// com.microsoft MultiHeadAttention as ONNX Runtime's CPU kernel runs it.
//
// Inputs: query [B, S, D]; key [B, L, D] and value [B, L, Dv], or key and
// value both [B, N, L, H] (cross-attention on precomputed K/V: no bias, no
// past); bias [D + D + Dv] added to Q, K and V; key_padding_mask int32 [B] or
// [3B + 2] (valid lengths: keys at or after mask[b] are masked), [B, T] 0/1, or
// [B, S, T] 0/1, masked scores gaining mask_filter_value (default -10000);
// attention_bias [B or 1, N or 1, S, T]; past_key/past_value [B, N, P, H].
// Outputs: [B, S, Dv] and present_key/present_value [B, N, P + L, H].
// unidirectional=1 with S > 1 lets query s see keys t <= P + s only (ONNX
// Runtime excludes the others outright, unlike the padding mask's finite fill).
// One deliberate difference: with past_key/past_value but no present outputs,
// ONNX Runtime 1.30 silently drops the past (it takes the past length from the
// present outputs); Ember attends over past + new keys as the spec says.
// Rejected as ONNX Runtime's CPU kernel rejects them: packed QKV (query
// [B, S, N, 3, H] or no key) and packed KV (key [B, L, N, 2, H]); also the
// decoder-masked extras (past_sequence_length, cache_indirection, the QK output).
// float32 or float16 (all float inputs alike; ONNX Runtime 1.30 has no bfloat16
// CPU kernel): float16 runs the f32 core through FloatStage (attention_layout.h).
#include <cmath>
#include <cstring>

#include "kernels/attention/attention_layout.h"
#include "kernels/attention/attention_ops.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t {
  kQuery,
  kKey,
  kValue,
  kBias,
  kKeyPaddingMask,
  kAttentionBias,
  kPastKey,
  kPastValue,
  kPastSequenceLength,
  kCacheIndirection
};

struct MhaAttrs {
  int64_t num_heads = 0;
  float mask_filter_value = -10000.0f;
  float scale = 0.0f;  // 0: 1 / sqrt(head_size)
  bool unidirectional = false;
};

struct Geometry {
  int64_t batch = 0, seq = 0, kv_seq = 0, past = 0, total = 0;
  int64_t heads = 0, head_size = 0, v_head_size = 0;
  bool kv_bnsh = false;  // key/value given as [B, N, L, H]
  MaskForm mask = MaskForm::kNone;
};

Status check_past(const KernelContext& ctx, const Geometry& g) {
  const bool has_k = ctx.has_input(kPastKey), has_v = ctx.has_input(kPastValue);
  if (has_k != has_v) return invalid_argument("inputs 'past_key' and 'past_value' must be both present or both absent");
  if (!has_k) return Status::ok();
  if (g.kv_bnsh) return invalid_argument("inputs 'past_key' and 'past_value' must be absent when 'key' is 4-D");
  const Tensor& pk = ctx.input(kPastKey);
  const Tensor& pv = ctx.input(kPastValue);
  const int64_t want_k[] = {g.batch, g.heads, -1, g.head_size};
  const int64_t want_v[] = {g.batch, g.heads, -1, g.v_head_size};
  for (const auto& [t, want, name] : {std::tuple{&pk, want_k, "past_key"}, std::tuple{&pv, want_v, "past_value"}}) {
    if (t->rank() != 4 || t->dim(0) != want[0] || t->dim(1) != want[1] || t->dim(3) != want[3] ||
        t->dim(2) != pk.dim(2)) {
      return invalid_argument("input '{}' {} must be [batch={}, num_heads={}, past_length, {}] with past_key's "
                              "past_length",
                              name, t->describe(), want[0], want[1], want[3]);
    }
  }
  return Status::ok();
}

Status check_key_value(const KernelContext& ctx, Geometry& g) {
  const Tensor& q = ctx.input(kQuery);
  const Tensor& k = ctx.input(kKey);
  const Tensor& v = ctx.input(kValue);
  if (k.rank() == 3 && v.rank() == 3) {
    if (k.dim(0) != g.batch || k.dim(2) != q.dim(2) || v.dim(0) != g.batch || v.dim(1) != k.dim(1)) {
      return invalid_argument("inputs 'key' {} and 'value' {} must be [batch={}, kv_length, {}] and [batch, "
                              "kv_length, v_hidden]",
                              k.describe(), v.describe(), g.batch, q.dim(2));
    }
    if (v.dim(2) % g.heads != 0) {
      return invalid_argument("input 'value' {}: hidden size {} is not a multiple of num_heads={}", v.describe(),
                              v.dim(2), g.heads);
    }
    g.kv_seq = k.dim(1);
    g.v_head_size = v.dim(2) / g.heads;
    return Status::ok();
  }
  if (k.rank() == 4 && v.rank() == 4) {
    if (k.dim(0) != g.batch || k.dim(1) != g.heads || k.dim(3) != g.head_size || k.shape() != v.shape()) {
      return invalid_argument("inputs 'key' {} and 'value' {} must both be [batch={}, num_heads={}, kv_length, "
                              "head_size={}]",
                              k.describe(), v.describe(), g.batch, g.heads, g.head_size);
    }
    if (ctx.has_input(kBias)) return invalid_argument("input 'bias' must be absent when 'key' is 4-D");
    g.kv_bnsh = true;
    g.kv_seq = k.dim(2);
    g.v_head_size = v.dim(3);
    return Status::ok();
  }
  return invalid_argument("inputs 'key' {} and 'value' {} must both be 3-D [batch, kv_length, hidden] or both 4-D "
                          "[batch, num_heads, kv_length, head_size]",
                          k.describe(), v.describe());
}

Status check_mask(const KernelContext& ctx, Geometry& g) {
  if (!ctx.has_input(kKeyPaddingMask)) return Status::ok();
  const Tensor& m = ctx.input(kKeyPaddingMask);
  if (m.rank() == 1 && (m.dim(0) == g.batch || m.dim(0) == 3 * g.batch + 2)) {
    g.mask = MaskForm::kEnd;
  } else if (m.rank() == 2 && m.dim(0) == g.batch && m.dim(1) == g.total) {
    g.mask = MaskForm::kKeyPadding;
  } else if (m.rank() == 3 && m.dim(0) == g.batch && m.dim(1) == g.seq && m.dim(2) == g.total) {
    g.mask = MaskForm::kPerQuery;
  } else {
    return invalid_argument("input 'key_padding_mask' {} must be [batch={}], [3 * batch + 2], [batch, "
                            "total_length={}] or [batch, sequence={}, total_length]",
                            m.describe(), g.batch, g.total, g.seq);
  }
  return Status::ok();
}

Status check_attention_bias(const KernelContext& ctx, const Geometry& g) {
  if (!ctx.has_input(kAttentionBias)) return Status::ok();
  const Tensor& b = ctx.input(kAttentionBias);
  if (b.rank() != 4 || (b.dim(0) != 1 && b.dim(0) != g.batch) || (b.dim(1) != 1 && b.dim(1) != g.heads) ||
      b.dim(2) != g.seq || b.dim(3) != g.total) {
    return invalid_argument("input 'attention_bias' {} must be [batch={} or 1, num_heads={} or 1, sequence={}, "
                            "total_length={}]",
                            b.describe(), g.batch, g.heads, g.seq, g.total);
  }
  return Status::ok();
}

Result<Geometry> geometry(const KernelContext& ctx, const MhaAttrs& at) {
  const Tensor& q = ctx.input(kQuery);
  if (q.rank() == 5 || !ctx.has_input(kKey)) {
    return not_implemented("packed QKV (query {}{}) is not implemented for CPU, as in ONNX Runtime", q.describe(),
                           ctx.has_input(kKey) ? "" : " without key");
  }
  if (q.rank() != 3) return invalid_argument("input 'query' {} must be 3-D [batch, sequence, hidden]", q.describe());
  if (ctx.input(kKey).rank() == 5) {
    return not_implemented("packed KV (key {}) is not implemented for CPU, as in ONNX Runtime",
                           ctx.input(kKey).describe());
  }
  if (!ctx.has_input(kValue)) return invalid_argument("input 'value' is required when 'key' is given");
  Geometry g;
  g.batch = q.dim(0);
  g.seq = q.dim(1);
  g.heads = at.num_heads;
  if (q.dim(2) % g.heads != 0) {
    return invalid_argument("input 'query' {}: hidden size {} is not a multiple of num_heads={}", q.describe(),
                            q.dim(2), g.heads);
  }
  g.head_size = q.dim(2) / g.heads;
  EMBER_RETURN_IF_ERROR(check_key_value(ctx, g));
  if (ctx.has_input(kBias)) {
    const Tensor& b = ctx.input(kBias);
    const int64_t want = 2 * q.dim(2) + g.heads * g.v_head_size;
    if (b.rank() != 1 || b.dim(0) != want) {
      return invalid_argument("input 'bias' {} must be [hidden + hidden + v_hidden = {}]", b.describe(), want);
    }
  }
  EMBER_RETURN_IF_ERROR(check_past(ctx, g));
  g.past = ctx.has_input(kPastKey) ? ctx.input(kPastKey).dim(2) : 0;
  g.total = g.past + g.kv_seq;
  if (at.unidirectional && g.seq > 1 && g.kv_seq != g.seq) {
    return not_implemented("unidirectional=1 with kv_length {} != sequence {}: ONNX Runtime's CPU kernel masks "
                           "every query row but the last there, which is not implemented",
                           g.kv_seq, g.seq);
  }
  EMBER_RETURN_IF_ERROR(check_mask(ctx, g));
  EMBER_RETURN_IF_ERROR(check_attention_bias(ctx, g));
  if (ctx.has_input(kPastSequenceLength) || ctx.has_input(kCacheIndirection)) {
    return not_implemented("inputs 'past_sequence_length' and 'cache_indirection' (a shared KV buffer / beam "
                           "search) are not implemented");
  }
  return g;
}

// K or V rows as the core reads them (f32): the input itself when it can be,
// else a BNSH cache (past rows, then new rows plus bias).
HeadLayout key_value_rows(KernelContext& ctx, const FloatStage& stage, const Geometry& g, size_t input,
                          ScratchSlot staged, const CacheSlots& cache, int64_t head_size, const float* bias) {
  const Tensor& x = ctx.input(input);
  const float* data = stage.input(x, staged);
  if (g.kv_bnsh) {
    if (ctx.has_output(cache.present)) std::memcpy(ctx.output(cache.present).data(), x.data(), x.nbytes());
    return bnsh_layout(data, g.heads, g.kv_seq, head_size);
  }
  const HeadLayout src = bsd_layout(data, g.kv_seq, head_size, g.heads * head_size);
  return key_value_cache(ctx, stage, cache, {g.batch, g.heads, head_size, g.past, g.kv_seq, nullptr, src, bias});
}

class MultiHeadAttentionKernel final : public OpKernel {
 public:
  MultiHeadAttentionKernel(MhaAttrs attrs, DType dtype) : at_(attrs), stage_(dtype) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry(ctx, at_));
    ctx.set_output(0, stage_.dtype(), {g.batch, g.seq, g.heads * g.v_head_size});
    ctx.set_output(1, stage_.dtype(), {g.batch, g.heads, g.total, g.head_size});
    ctx.set_output(2, stage_.dtype(), {g.batch, g.heads, g.total, g.v_head_size});
    if (ctx.has_output(3)) return not_implemented("output 3 (the QK scores) is not implemented");
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry(ctx, at_));
    const int64_t hidden = g.heads * g.head_size;
    const float* bias = ctx.has_input(kBias) ? stage_.input(ctx.input(kBias), ScratchSlot::kInBias) : nullptr;
    AttentionProblem p;
    p.spec.head_size = g.head_size;
    p.spec.v_head_size = g.v_head_size;
    p.spec.scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(g.head_size));
    p.batch = g.batch;
    p.q_heads = p.kv_heads = g.heads;
    p.seq = g.seq;
    p.total = g.total;
    p.q = bsd_layout(stage_.input(ctx.input(kQuery), ScratchSlot::kInQuery), g.seq, g.head_size, hidden);
    if (bias) {
      float* q = scratch_floats(ScratchSlot::kQuery, g.batch * g.seq * hidden);
      p.q = write_cache({g.batch, g.heads, g.head_size, 0, g.seq, nullptr, p.q, bias}, FloatStage(DType::kF32), q,
                        nullptr);
    }
    p.k = key_value_rows(ctx, stage_, g, kKey, ScratchSlot::kInKey,
                         {kPastKey, 1, ScratchSlot::kKey, ScratchSlot::kKeyView}, g.head_size,
                         bias ? bias + hidden : nullptr);
    p.v = key_value_rows(ctx, stage_, g, kValue, ScratchSlot::kInValue,
                         {kPastValue, 2, ScratchSlot::kValue, ScratchSlot::kValueView}, g.v_head_size,
                         bias ? bias + 2 * hidden : nullptr);
    p.out = stage_.output(ctx.output(0), ScratchSlot::kOutput);
    p.out_head_stride = g.v_head_size;
    p.out_row_stride = g.heads * g.v_head_size;
    p.out_batch_stride = g.seq * p.out_row_stride;
    if (at_.unidirectional && g.seq > 1) p.causal_end = g.past;
    p.bias = padding_and_bias_scores(g.mask,
                                     ctx.has_input(kKeyPaddingMask) ? &ctx.input(kKeyPaddingMask) : nullptr,
                                     ctx.has_input(kAttentionBias) ? &ctx.input(kAttentionBias) : nullptr, stage_,
                                     g.batch, g.seq, g.total, at_.mask_filter_value);
    run_problem(p);
    stage_.finish(p.out, ctx.output(0));
    return Status::ok();
  }

 private:
  MhaAttrs at_;
  FloatStage stage_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_multi_head_attention(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  ir::AttrReader r(init.node);
  MhaAttrs at;
  at.num_heads = r.get_int("num_heads", 0);
  at.mask_filter_value = r.get_float("mask_filter_value", -10000.0f);
  at.scale = r.get_float("scale", 0.0f);
  const int64_t unidirectional = r.get_int("unidirectional", 0);
  EMBER_RETURN_IF_ERROR(r.status());
  if (at.num_heads <= 0) return invalid_argument("node '{}': num_heads={} must be positive", init.node.name, at.num_heads);
  if (unidirectional != 0 && unidirectional != 1) {
    return invalid_argument("node '{}': unidirectional={} must be 0 or 1", init.node.name, unidirectional);
  }
  at.unidirectional = unidirectional == 1;
  EMBER_ASSIGN_OR_RETURN(const DType dtype,
                         check_float_inputs(init, "MultiHeadAttention", kQuery, "query",
                                            {{kKey, "key"},
                                             {kValue, "value"},
                                             {kBias, "bias"},
                                             {kAttentionBias, "attention_bias"},
                                             {kPastKey, "past_key"},
                                             {kPastValue, "past_value"}}));
  EMBER_RETURN_IF_ERROR(check_input_dtype(init, kKeyPaddingMask, "key_padding_mask", DType::kI32));
  return std::unique_ptr<OpKernel>(std::make_unique<MultiHeadAttentionKernel>(at, dtype));
}

}  // namespace ember::kernels::attention
