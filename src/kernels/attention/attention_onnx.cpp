// ONNX Attention (opsets 23-25) as ONNX Runtime's CPU kernel runs it, with the
// spec's additions ONNX Runtime 1.30 lacks.
//
// Q [B, qN, S, H] or [B, S, qN * H] (q_num_heads), K [B, kvN, L, H] or
// [B, L, kvN * H], V [B, kvN, L, Hv] or [B, L, kvN * Hv] (kv_num_heads); query
// head n reads key/value head n / (qN / kvN). attn_mask bool (false: -inf) or
// float (added), right-aligned to [B, qN, S, T] with size-1 dims broadcast
// (rank 1 to 4); a last dim shorter than T reads as masked for the missing keys.
// past_key/past_value [B, kvN, P, H] with the present outputs [B, kvN, P + L, H]
// (ONNX Runtime refuses a past without them).
// is_causal lets query s see keys t <= P + s (aligned to the bottom right, as
// ONNX Runtime does). nonpad_kv_seqlen (int64 [B], Attention-24, not with a
// past) masks keys t >= nonpad[b] of batch row b, and the causal frontier of
// that row becomes t <= s + nonpad[b] - S. left_window_size /
// right_window_size (Attention-25, -1 = unbounded) let query s see keys t with
// o + s - left <= t <= o + s + right, o being that same offset (P or
// nonpad[b] - S). With any of these, or a short attn_mask, every mask is
// summed into one [B, qN or 1, S, T] additive bias (the common shapes keep the
// core's causal range and the mask's broadcast strides). softcap is applied to
// the scaled scores before the mask is added (the spec's and ONNX Runtime's
// order). A row whose scores are all -inf outputs zeros. softmax_precision is accepted and
// ignored: the softmax always runs in f32. qk_matmul_output_mode 0-3 writes the
// scores after scaling, softcap, mask (masked keys as -inf, as the spec
// writes them), or softmax (ONNX Runtime's stages).
// float32, float16 or bfloat16 (Q, K, V, past and a float attn_mask alike;
// ONNX Runtime 1.30's CPU kernel has no bfloat16): the 16-bit types run the
// f32 core through FloatStage (attention_layout.h), output 3 included, and
// round once. The spec's reference instead rounds every step to bfloat16 and
// sums the softmax denominator left to right in bfloat16 (numpy's reduction
// of ml_dtypes.bfloat16), which stops growing at 256 when many keys weigh
// about 1; its test outputs are one bfloat16 ulp (0.8%) off ours in places
// (tests/conformance/known_failures.txt).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention/attention_layout.h"
#include "kernels/attention/attention_ops.h"
#include "kernels/matmul/sgemm.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t { kQ, kK, kV, kMask, kPastKey, kPastValue, kNonpadKvSeqlen };
enum Output : size_t { kY, kPresentKey, kPresentValue, kQk };

struct Attrs {
  bool is_causal = false;
  int64_t q_heads = 0, kv_heads = 0;
  int64_t qk_mode = 0;
  float scale = 0.0f;
  float softcap = 0.0f;
  int64_t left_window = -1, right_window = -1;
  bool windowed() const { return left_window >= 0 || right_window >= 0; }
};

struct Geometry {
  bool bnsh = false;  // 4-D inputs
  int64_t batch = 0, seq = 0, kv_seq = 0, past = 0, total = 0;
  int64_t q_heads = 0, kv_heads = 0, head_size = 0, v_head_size = 0;
  int64_t mask_dims[4] = {1, 1, 1, 1};  // attn_mask right-aligned to [B, qN, S, T]
  bool nonpad = false;                   // nonpad_kv_seqlen is given
  // The masks must be summed into one full-size bias (see the file comment).
  bool combined_bias(const Attrs& at) const { return nonpad || at.windowed() || mask_dims[3] < total; }
};

Status split_heads(const Tensor& t, const char* name, int64_t heads, const char* attr, int64_t& head_size) {
  if (heads <= 0) return invalid_argument("input '{}' {} is 3-D: attribute {} is required", name, t.describe(), attr);
  if (t.dim(2) % heads != 0) {
    return invalid_argument("input '{}' {}: hidden size {} is not a multiple of {}={}", name, t.describe(), t.dim(2),
                            attr, heads);
  }
  head_size = t.dim(2) / heads;
  return Status::ok();
}

Status read_qkv(const KernelContext& ctx, const Attrs& at, Geometry& g) {
  const Tensor& q = ctx.input(kQ);
  const Tensor& k = ctx.input(kK);
  const Tensor& v = ctx.input(kV);
  if ((q.rank() != 3 && q.rank() != 4) || k.rank() != q.rank() || v.rank() != q.rank()) {
    return invalid_argument("inputs 'Q' {}, 'K' {} and 'V' {} must all be 3-D or all 4-D", q.describe(),
                            k.describe(), v.describe());
  }
  g.bnsh = q.rank() == 4;
  g.batch = q.dim(0);
  int64_t k_head_size = 0;
  if (g.bnsh) {
    g.q_heads = q.dim(1);
    g.seq = q.dim(2);
    g.head_size = q.dim(3);
    g.kv_heads = k.dim(1);
    g.kv_seq = k.dim(2);
    k_head_size = k.dim(3);
    g.v_head_size = v.dim(3);
    if (v.dim(1) != g.kv_heads || v.dim(2) != g.kv_seq) {
      return invalid_argument("input 'V' {} must be [batch, kv_num_heads={}, kv_length={}, v_head_size]",
                              v.describe(), g.kv_heads, g.kv_seq);
    }
  } else {
    g.seq = q.dim(1);
    g.q_heads = at.q_heads;
    g.kv_heads = at.kv_heads;
    g.kv_seq = k.dim(1);
    EMBER_RETURN_IF_ERROR(split_heads(q, "Q", at.q_heads, "q_num_heads", g.head_size));
    EMBER_RETURN_IF_ERROR(split_heads(k, "K", at.kv_heads, "kv_num_heads", k_head_size));
    EMBER_RETURN_IF_ERROR(split_heads(v, "V", at.kv_heads, "kv_num_heads", g.v_head_size));
    if (v.dim(1) != g.kv_seq) {
      return invalid_argument("inputs 'K' {} and 'V' {} must have the same kv_length", k.describe(), v.describe());
    }
  }
  if (k.dim(0) != g.batch || v.dim(0) != g.batch || k_head_size != g.head_size) {
    return invalid_argument("inputs 'Q' {}, 'K' {}, 'V' {}: batch sizes and Q/K head sizes must match", q.describe(),
                            k.describe(), v.describe());
  }
  if (g.kv_heads <= 0 || g.q_heads % g.kv_heads != 0) {
    return invalid_argument("q_num_heads={} must be a multiple of kv_num_heads={}", g.q_heads, g.kv_heads);
  }
  return Status::ok();
}

Status read_past(const KernelContext& ctx, Geometry& g) {
  const bool has_k = ctx.has_input(kPastKey), has_v = ctx.has_input(kPastValue);
  if (has_k != has_v) return invalid_argument("inputs 'past_key' and 'past_value' must be both present or both absent");
  if (!has_k) return Status::ok();
  const Tensor& pk = ctx.input(kPastKey);
  const Tensor& pv = ctx.input(kPastValue);
  if (pk.rank() != 4 || pk.dim(0) != g.batch || pk.dim(1) != g.kv_heads || pk.dim(3) != g.head_size ||
      pv.rank() != 4 || pv.dim(0) != g.batch || pv.dim(1) != g.kv_heads || pv.dim(2) != pk.dim(2) ||
      pv.dim(3) != g.v_head_size) {
    return invalid_argument("inputs 'past_key' {} and 'past_value' {} must be [batch={}, kv_num_heads={}, "
                            "past_length, head_size={} / v_head_size={}]",
                            pk.describe(), pv.describe(), g.batch, g.kv_heads, g.head_size, g.v_head_size);
  }
  if (!ctx.has_output(kPresentKey) || !ctx.has_output(kPresentValue)) {
    return not_implemented("past_key/past_value without the present_key/present_value outputs are not supported "
                           "(as in ONNX Runtime's CPU kernel)");
  }
  g.past = pk.dim(2);
  return Status::ok();
}

Status read_mask(const KernelContext& ctx, Geometry& g) {
  if (!ctx.has_input(kMask)) return Status::ok();
  const Tensor& m = ctx.input(kMask);
  const int64_t full[4] = {g.batch, g.q_heads, g.seq, g.total};
  // Leading dims broadcast; the key dim may be short (the missing keys are masked).
  bool ok = m.rank() >= 1 && m.rank() <= 4;
  for (int64_t i = 0; ok && i < m.rank(); ++i) {
    const int64_t d = m.dim(m.rank() - 1 - i), axis = 3 - i;
    ok = axis == 3 ? d <= full[axis] : d == full[axis] || d == 1;
    g.mask_dims[axis] = d;
  }
  if (!ok) {
    return invalid_argument("input 'attn_mask' {} must broadcast to [batch={}, q_num_heads={}, q_length={}, "
                            "total_length <= {}]",
                            m.describe(), g.batch, g.q_heads, g.seq, g.total);
  }
  return Status::ok();
}

Status read_nonpad(const KernelContext& ctx, Geometry& g) {
  g.nonpad = ctx.has_input(kNonpadKvSeqlen);
  if (!g.nonpad) return Status::ok();
  const Tensor& n = ctx.input(kNonpadKvSeqlen);
  if (n.rank() != 1 || n.dim(0) != g.batch) {
    return invalid_argument("input 'nonpad_kv_seqlen' {} must be [batch={}]", n.describe(), g.batch);
  }
  if (ctx.has_input(kPastKey)) {
    return invalid_argument("input 'nonpad_kv_seqlen' cannot be combined with past_key/past_value");
  }
  return Status::ok();
}

Result<Geometry> geometry(const KernelContext& ctx, const Attrs& at) {
  Geometry g;
  EMBER_RETURN_IF_ERROR(read_qkv(ctx, at, g));
  EMBER_RETURN_IF_ERROR(read_past(ctx, g));
  EMBER_RETURN_IF_ERROR(read_nonpad(ctx, g));
  g.total = g.past + g.kv_seq;
  EMBER_RETURN_IF_ERROR(read_mask(ctx, g));
  return g;
}

HeadLayout input_layout(const float* data, const Geometry& g, int64_t heads, int64_t rows, int64_t head_size) {
  return g.bnsh ? bnsh_layout(data, heads, rows, head_size) : bsd_layout(data, rows, head_size, heads * head_size);
}

// attn_mask as additive scores (bool: false -> -inf), strides 0 on broadcast dims.
ScoreBias mask_bias(const Tensor& m, const Geometry& g, const FloatStage& stage) {
  const int64_t* d = g.mask_dims;
  const float* data = nullptr;
  if (m.dtype() == DType::kBool) {
    float* f = scratch_floats(ScratchSlot::kMask, m.numel());
    const bool* b = m.data_as<bool>();
    for (int64_t i = 0; i < m.numel(); ++i) f[i] = b[i] ? 0.0f : -std::numeric_limits<float>::infinity();
    data = f;
  } else {
    data = stage.input(m, ScratchSlot::kInScores);
  }
  return {data, d[0] == 1 ? 0 : d[1] * d[2] * d[3], d[1] == 1 ? 0 : d[2] * d[3], d[2] == 1 ? 0 : d[3]};
}

// Every mask of the call as one additive bias [B, Hm, S, T] (Hm: attn_mask's
// head dim, 1 or qN): attn_mask (missing keys masked), causal and window
// frontiers at each batch row's offset, and nonpad_kv_seqlen's padding.
ScoreBias combined_bias(const KernelContext& ctx, const Geometry& g, const Attrs& at, const FloatStage& stage) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  const int64_t heads = g.mask_dims[1], rows = g.seq, keys = g.total, mask_keys = g.mask_dims[3];
  const ScoreBias mask = ctx.has_input(kMask) ? mask_bias(ctx.input(kMask), g, stage) : ScoreBias{};
  const int64_t* nonpad = g.nonpad ? ctx.input(kNonpadKvSeqlen).data_as<int64_t>() : nullptr;
  float* out = scratch_floats(ScratchSlot::kBias, g.batch * heads * rows * keys);
  for (int64_t b = 0; b < g.batch; ++b) {
    const int64_t offset = nonpad ? nonpad[b] - g.seq : g.past;
    const int64_t valid_keys = nonpad ? nonpad[b] : keys;
    for (int64_t n = 0; n < heads; ++n) {
      for (int64_t s = 0; s < rows; ++s) {
        float* row = out + ((b * heads + n) * rows + s) * keys;
        const float* m = mask.data ? mask.data + b * mask.batch_stride + n * mask.head_stride + s * mask.row_stride
                                   : nullptr;
        for (int64_t t = 0; t < keys; ++t) {
          const int64_t diff = s + offset - t;  // how far key t lies before query s's position
          const bool hidden = (m && t >= mask_keys) || (at.is_causal && diff < 0) ||
                              (at.left_window >= 0 && diff > at.left_window) ||
                              (at.right_window >= 0 && -diff > at.right_window) || t >= valid_keys;
          row[t] = hidden ? kMasked : m ? m[t] : 0.0f;
        }
      }
    }
  }
  return {out, heads * rows * keys, heads == 1 ? 0 : rows * keys, keys};
}

class AttentionOnnxKernel final : public OpKernel {
 public:
  AttentionOnnxKernel(Attrs attrs, DType dtype) : at_(attrs), stage_(dtype), gemm_(&sgemm::sgemm_table()) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry(ctx, at_));
    if (g.bnsh) {
      ctx.set_output(kY, stage_.dtype(), {g.batch, g.q_heads, g.seq, g.v_head_size});
    } else {
      ctx.set_output(kY, stage_.dtype(), {g.batch, g.seq, g.q_heads * g.v_head_size});
    }
    ctx.set_output(kPresentKey, stage_.dtype(), {g.batch, g.kv_heads, g.total, g.head_size});
    ctx.set_output(kPresentValue, stage_.dtype(), {g.batch, g.kv_heads, g.total, g.v_head_size});
    ctx.set_output(kQk, stage_.dtype(), {g.batch, g.q_heads, g.seq, g.total});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry(ctx, at_));
    AttentionProblem p;
    p.spec.head_size = g.head_size;
    p.spec.v_head_size = g.v_head_size;
    p.spec.scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(g.head_size));
    p.spec.softcap = at_.softcap;
    p.batch = g.batch;
    p.q_heads = g.q_heads;
    p.kv_heads = g.kv_heads;
    p.seq = g.seq;
    p.total = g.total;
    p.q = input_layout(stage_.input(ctx.input(kQ), ScratchSlot::kInQuery), g, g.q_heads, g.seq, g.head_size);
    p.k = key_value_rows(ctx, g, kK, ScratchSlot::kInKey,
                         {kPastKey, kPresentKey, ScratchSlot::kKey, ScratchSlot::kKeyView}, g.head_size);
    p.v = key_value_rows(ctx, g, kV, ScratchSlot::kInValue,
                         {kPastValue, kPresentValue, ScratchSlot::kValue, ScratchSlot::kValueView}, g.v_head_size);
    p.out = stage_.output(ctx.output(kY), ScratchSlot::kOutput);
    p.out_head_stride = g.bnsh ? g.seq * g.v_head_size : g.v_head_size;
    p.out_row_stride = g.bnsh ? g.v_head_size : g.q_heads * g.v_head_size;
    p.out_batch_stride = g.q_heads * g.seq * g.v_head_size;
    if (g.combined_bias(at_)) {
      p.bias = combined_bias(ctx, g, at_, stage_);
    } else {
      if (at_.is_causal) p.causal_end = g.past;
      if (ctx.has_input(kMask)) p.bias = mask_bias(ctx.input(kMask), g, stage_);
    }
    run_problem(p);
    stage_.finish(p.out, ctx.output(kY));
    if (ctx.has_output(kQk)) {
      Tensor& qk = ctx.output(kQk);
      float* scores = stage_.output(qk, ScratchSlot::kScoresOutput);
      write_scores(p, scores);
      stage_.finish(scores, qk);
    }
    return Status::ok();
  }

 private:
  // K or V rows as the core reads them (f32): the input itself, or the BNSH
  // cache (past rows, then the new rows).
  HeadLayout key_value_rows(KernelContext& ctx, const Geometry& g, size_t input, ScratchSlot staged,
                            const CacheSlots& cache, int64_t head_size) const {
    const HeadLayout src = input_layout(stage_.input(ctx.input(input), staged), g, g.kv_heads, g.kv_seq, head_size);
    return key_value_cache(ctx, stage_, cache,
                           {g.batch, g.kv_heads, head_size, g.past, g.kv_seq, nullptr, src, nullptr});
  }

  // The optional 4th output [B, qN, S, T] at stage qk_matmul_output_mode.
  void write_scores(const AttentionProblem& p, float* out) const {
    const int64_t group = p.q_heads / p.kv_heads;
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t n = 0; n < p.q_heads; ++n) {
        float* c = out + (b * p.q_heads + n) * p.seq * p.total;
        GemmParams gp;
        gp.trans_b = true;
        gp.m = p.seq;
        gp.n = p.total;
        gp.k = p.spec.head_size;
        gp.lda = p.q.row_stride;
        gp.ldb = p.k.row_stride;
        gp.ldc = p.total;
        gp.alpha = p.spec.scale;
        sgemm::gemm(*gemm_, gp, p.q.at(b, n, 0), p.k.at(b, n / group, 0), c);
        if (at_.qk_mode >= 1) apply_stages(p, b, n, c);
      }
    }
  }

  void apply_stages(const AttentionProblem& p, int64_t b, int64_t n, float* c) const {
    // The spec's masked scores are -inf (ONNX Runtime writes the lowest float);
    // the softmax of mode 3 is the same either way.
    constexpr float kMasked = -std::numeric_limits<float>::infinity();
    for (int64_t s = 0; s < p.seq; ++s) {
      float* row = c + s * p.total;
      const float* bias = p.bias.data ? p.bias.data + b * p.bias.batch_stride + n * p.bias.head_stride +
                                            s * p.bias.row_stride
                                      : nullptr;
      for (int64_t t = 0; t < p.total; ++t) {
        float x = row[t];
        if (at_.softcap > 0) x = at_.softcap * std::tanh(x / at_.softcap);
        if (at_.qk_mode >= 2) {
          if (bias) x += bias[t];
          if (p.causal_end >= 0 && t > p.causal_end + s) x = kMasked;
        }
        row[t] = x;
      }
      if (at_.qk_mode == 3) softmax_row(row, p.total);
    }
  }

  static void softmax_row(float* row, int64_t n) {
    const float max = n > 0 ? *std::max_element(row, row + n) : 0.0f;
    if (!std::isfinite(max)) {
      std::fill(row, row + n, 0.0f);
      return;
    }
    double sum = 0;
    for (int64_t t = 0; t < n; ++t) sum += row[t] = std::exp(row[t] - max);
    for (int64_t t = 0; t < n; ++t) row[t] = static_cast<float>(row[t] / sum);
  }

  Attrs at_;
  FloatStage stage_;
  const sgemm::SgemmTable* gemm_;
};

Result<Attrs> read_attrs(const ir::Node& node) {
  ir::AttrReader r(node);
  Attrs at;
  const int64_t causal = r.get_int("is_causal", 0);
  at.q_heads = r.get_int("q_num_heads", 0);
  at.kv_heads = r.get_int("kv_num_heads", 0);
  at.qk_mode = r.get_int("qk_matmul_output_mode", 0);
  at.scale = r.get_float("scale", 0.0f);
  at.softcap = r.get_float("softcap", 0.0f);
  at.left_window = r.get_int("left_window_size", -1);
  at.right_window = r.get_int("right_window_size", -1);
  EMBER_RETURN_IF_ERROR(r.status());
  if (at.left_window < -1 || at.right_window < -1) {
    return invalid_argument("node '{}': left_window_size={} and right_window_size={} must be -1 or non-negative",
                            node.name, at.left_window, at.right_window);
  }
  if (causal != 0 && causal != 1) return invalid_argument("node '{}': is_causal={} must be 0 or 1", node.name, causal);
  if (at.qk_mode < 0 || at.qk_mode > 3) {
    return invalid_argument("node '{}': qk_matmul_output_mode={} must be 0, 1, 2 or 3", node.name, at.qk_mode);
  }
  if (at.softcap < 0) return invalid_argument("node '{}': softcap={} must not be negative", node.name, at.softcap);
  at.is_causal = causal == 1;
  return at;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_attention_onnx(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  EMBER_ASSIGN_OR_RETURN(Attrs at, read_attrs(init.node));
  const DType dtype = input_dtype(init, kQ);
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    return not_implemented("node '{}': input 'Q' is {}; Attention runs float32, float16 and bfloat16", init.node.name,
                           dtype_name(dtype));
  }
  for (const auto& [i, name] : {std::pair<size_t, const char*>{kK, "K"}, {kV, "V"}, {kPastKey, "past_key"},
                                {kPastValue, "past_value"}}) {
    EMBER_RETURN_IF_ERROR(check_input_dtype(init, i, name, dtype));
  }
  EMBER_RETURN_IF_ERROR(check_input_dtype(init, kNonpadKvSeqlen, "nonpad_kv_seqlen", DType::kI64));
  const DType m = input_dtype(init, kMask);
  if (m != DType::kUndefined && m != dtype && m != DType::kBool) {
    return invalid_argument("node '{}': input 'attn_mask' is {}; it must be bool or the dtype of Q ({})",
                            init.node.name, dtype_name(m), dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<AttentionOnnxKernel>(at, dtype));
}

}  // namespace ember::kernels::attention
