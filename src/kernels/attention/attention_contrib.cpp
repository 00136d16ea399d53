// com.microsoft Attention as ONNX Runtime's CPU kernel runs it.
//
// Inputs: input [B, S, Din]; weights [Din, Dq + Dk + Dv] (qkv_hidden_sizes, or
// three equal parts) and bias [Dq + Dk + Dv] (optional) project Q, K and V in
// the op; mask_index int32 [B] (keys at or after mask[b] masked), [2B] (also
// keys before mask[B + b]), [B, T] 0/1 or [B, S, T] 0/1, masked scores gaining
// mask_filter_value; past [2, B, N, P, H]; attention_bias [B or 1, N or 1, S, T].
// Outputs: [B, S, Dv] and present [2, B, N, P + S, H]. unidirectional=1 with
// S > 1 lets query s see keys t <= P + s only.
// Rejected as ONNX Runtime's CPU kernel rejects them: a 4-D mask, past with
// attention_bias, do_rotary; also the shared past/present buffer
// (past_present_share_buffer, past_sequence_length), not implemented here.
// float32 or float16 (all float inputs alike, no bfloat16, as ONNX Runtime 1.30
// on CPU): float16 projects and attends in f32 through FloatStage
// (attention_layout.h); constant float16 weights are widened and packed once.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/attention/attention_layout.h"
#include "kernels/attention/attention_ops.h"
#include "kernels/matmul/sgemm.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t { kInput, kWeights, kBias, kMaskIndex, kPast, kAttentionBias, kPastSequenceLength };

struct Attrs {
  int64_t num_heads = 0;
  int64_t q_hidden = 0, k_hidden = 0, v_hidden = 0;  // 0: a third of the weights' columns each
  float mask_filter_value = -10000.0f;
  float scale = 0.0f;
  bool unidirectional = false;
};

struct Geometry {
  int64_t batch = 0, seq = 0, input_hidden = 0, past = 0, total = 0;
  int64_t heads = 0, q_hidden = 0, k_hidden = 0, v_hidden = 0;
  MaskForm mask = MaskForm::kNone;
  int64_t width() const { return q_hidden + k_hidden + v_hidden; }
};

Status check_projection(const KernelContext& ctx, const Attrs& at, Geometry& g) {
  const Tensor& x = ctx.input(kInput);
  const Tensor& w = ctx.input(kWeights);
  if (x.rank() != 3) return invalid_argument("input 'input' {} must be 3-D [batch, sequence, hidden]", x.describe());
  if (w.rank() != 2 || w.dim(0) != x.dim(2)) {
    return invalid_argument("input 'weights' {} must be [input_hidden={}, q_hidden + k_hidden + v_hidden]",
                            w.describe(), x.dim(2));
  }
  g.batch = x.dim(0);
  g.seq = x.dim(1);
  g.input_hidden = x.dim(2);
  g.heads = at.num_heads;
  if (at.q_hidden > 0) {
    g.q_hidden = at.q_hidden;
    g.k_hidden = at.k_hidden;
    g.v_hidden = at.v_hidden;
  } else {
    g.q_hidden = g.k_hidden = g.v_hidden = w.dim(1) / 3;
  }
  if (g.width() != w.dim(1) || g.q_hidden % g.heads != 0 || g.v_hidden % g.heads != 0) {
    return invalid_argument("input 'weights' {}: columns must be q_hidden={} + k_hidden={} + v_hidden={}, each a "
                            "multiple of num_heads={}",
                            w.describe(), g.q_hidden, g.k_hidden, g.v_hidden, g.heads);
  }
  if (ctx.has_input(kBias)) {
    const Tensor& b = ctx.input(kBias);
    if (b.rank() != 1 || b.dim(0) != g.width()) {
      return invalid_argument("input 'bias' {} must be [{}] (the weights' columns)", b.describe(), g.width());
    }
  }
  return Status::ok();
}

Status check_past(const KernelContext& ctx, Geometry& g) {
  if (!ctx.has_input(kPast)) return Status::ok();
  const Tensor& p = ctx.input(kPast);
  const int64_t h = g.k_hidden / g.heads;
  if (p.rank() != 5 || p.dim(0) != 2 || p.dim(1) != g.batch || p.dim(2) != g.heads || p.dim(4) != h) {
    return invalid_argument("input 'past' {} must be [2, batch={}, num_heads={}, past_length, head_size={}]",
                            p.describe(), g.batch, g.heads, h);
  }
  if (ctx.has_input(kAttentionBias)) return invalid_argument("Attention cannot have both 'past' and 'attention_bias'");
  g.past = p.dim(3);
  return Status::ok();
}

Status check_mask(const KernelContext& ctx, Geometry& g) {
  if (!ctx.has_input(kMaskIndex)) return Status::ok();
  const Tensor& m = ctx.input(kMaskIndex);
  if (m.rank() == 4) return not_implemented("4-D 'mask_index' {} is not supported by the CPU kernel", m.describe());
  if (m.rank() == 1 && m.dim(0) == g.batch) {
    g.mask = MaskForm::kEnd;
  } else if (m.rank() == 1 && m.dim(0) == 2 * g.batch) {
    g.mask = MaskForm::kEndStart;
  } else if (m.rank() == 2 && m.dim(0) == g.batch && m.dim(1) == g.total) {
    g.mask = MaskForm::kKeyPadding;
  } else if (m.rank() == 3 && m.dim(0) == g.batch && m.dim(1) == g.seq && m.dim(2) == g.total) {
    g.mask = MaskForm::kPerQuery;
  } else {
    return invalid_argument("input 'mask_index' {} must be [batch={}], [2 * batch], [batch, total_length={}] or "
                            "[batch, sequence={}, total_length]",
                            m.describe(), g.batch, g.total, g.seq);
  }
  return Status::ok();
}

Result<Geometry> geometry(const KernelContext& ctx, const Attrs& at) {
  Geometry g;
  EMBER_RETURN_IF_ERROR(check_projection(ctx, at, g));
  EMBER_RETURN_IF_ERROR(check_past(ctx, g));
  g.total = g.past + g.seq;
  if ((g.past > 0 || ctx.has_output(1)) && g.k_hidden != g.v_hidden) {
    return invalid_argument("past/present need k_hidden == v_hidden (got {} and {})", g.k_hidden, g.v_hidden);
  }
  EMBER_RETURN_IF_ERROR(check_mask(ctx, g));
  if (ctx.has_input(kAttentionBias)) {
    const Tensor& b = ctx.input(kAttentionBias);
    if (b.rank() != 4 || (b.dim(0) != 1 && b.dim(0) != g.batch) || (b.dim(1) != 1 && b.dim(1) != g.heads) ||
        b.dim(2) != g.seq || b.dim(3) != g.total) {
      return invalid_argument("input 'attention_bias' {} must be [batch={} or 1, num_heads={} or 1, sequence={}, "
                              "total_length={}]",
                              b.describe(), g.batch, g.heads, g.seq, g.total);
    }
  }
  if (ctx.has_input(kPastSequenceLength)) {
    return not_implemented("input 'past_sequence_length' (a shared past/present buffer) is not implemented");
  }
  return g;
}

class AttentionContribKernel final : public OpKernel {
 public:
  AttentionContribKernel(Attrs attrs, DType dtype, sgemm::PackedWeight weights)
      : at_(attrs), stage_(dtype), gemm_(&sgemm::sgemm_table()), weights_(std::move(weights)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry(ctx, at_));
    ctx.set_output(0, stage_.dtype(), {g.batch, g.seq, g.v_hidden});
    ctx.set_output(1, stage_.dtype(), {2, g.batch, g.heads, g.total, g.k_hidden / g.heads});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry(ctx, at_));
    const float* qkv = project(ctx, g);
    const int64_t h = g.q_hidden / g.heads, hv = g.v_hidden / g.heads;
    AttentionProblem p;
    p.spec.head_size = h;
    p.spec.v_head_size = hv;
    p.spec.scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(h));
    p.batch = g.batch;
    p.q_heads = p.kv_heads = g.heads;
    p.seq = g.seq;
    p.total = g.total;
    p.q = bsd_layout(qkv, g.seq, h, g.width());
    p.k = bsd_layout(qkv + g.q_hidden, g.seq, h, g.width());
    p.v = bsd_layout(qkv + g.q_hidden + g.k_hidden, g.seq, hv, g.width());
    if (g.past > 0 || ctx.has_output(1)) {
      // present [2, B, N, T, H]: keys, then values, in the op's dtype.
      const int64_t cache = g.batch * g.heads * g.total * h;
      const size_t esize = stage_.element_size();
      char* present = static_cast<char*>(ctx.has_output(1) ? ctx.output(1).data()
                                                           : scratch_floats(ScratchSlot::kKey, 2 * cache));
      const char* past = g.past > 0 ? static_cast<const char*>(ctx.input(kPast).data()) : nullptr;
      const size_t past_half = static_cast<size_t>(g.batch * g.heads * g.past * h) * esize;
      float* view = stage_.is_f32() ? nullptr : scratch_floats(ScratchSlot::kKeyView, 2 * cache);
      p.k = write_cache({g.batch, g.heads, h, g.past, g.seq, past, p.k, nullptr}, stage_, present, view);
      p.v = write_cache({g.batch, g.heads, h, g.past, g.seq, past ? past + past_half : nullptr, p.v, nullptr},
                        stage_, present + static_cast<size_t>(cache) * esize, view ? view + cache : nullptr);
    }
    p.out = stage_.output(ctx.output(0), ScratchSlot::kOutput);
    p.out_head_stride = hv;
    p.out_row_stride = g.v_hidden;
    p.out_batch_stride = g.seq * g.v_hidden;
    if (at_.unidirectional && g.seq > 1) p.causal_end = g.past;
    p.bias = padding_and_bias_scores(g.mask, ctx.has_input(kMaskIndex) ? &ctx.input(kMaskIndex) : nullptr,
                                     ctx.has_input(kAttentionBias) ? &ctx.input(kAttentionBias) : nullptr, stage_,
                                     g.batch, g.seq, g.total, at_.mask_filter_value);
    run_problem(p);
    stage_.finish(p.out, ctx.output(0));
    return Status::ok();
  }

  bool prepacked_input(size_t i) const override { return i == kWeights && !weights_.empty(); }
  int64_t packed_bytes() const override { return weights_.bytes(); }

 private:
  // [B * S, width] = input x weights + bias (bias rows first, accumulated into
  // by the GEMM, as ONNX Runtime does).
  const float* project(const KernelContext& ctx, const Geometry& g) const {
    const int64_t rows = g.batch * g.seq, width = g.width();
    float* out = scratch_floats(ScratchSlot::kProjection, rows * width);
    const bool has_bias = ctx.has_input(kBias);
    if (has_bias) {
      const float* bias = stage_.input(ctx.input(kBias), ScratchSlot::kInBias);
      for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + width, out + r * width);
    }
    GemmParams gp;
    gp.m = rows;
    gp.n = width;
    gp.k = g.input_hidden;
    gp.lda = g.input_hidden;
    gp.ldb = width;
    gp.ldc = width;
    gp.beta = has_bias ? 1.0f : 0.0f;
    const float* x = stage_.input(ctx.input(kInput), ScratchSlot::kInQuery);
    if (!weights_.empty()) {
      weights_.gemm(*gemm_, gp, x, out);
    } else {
      sgemm::gemm(*gemm_, gp, x, stage_.input(ctx.input(kWeights), ScratchSlot::kInKey), out);
    }
    return out;
  }

  Attrs at_;
  FloatStage stage_;
  const sgemm::SgemmTable* gemm_;
  sgemm::PackedWeight weights_;
};

Result<Attrs> read_attrs(const ir::Node& node) {
  ir::AttrReader r(node);
  Attrs at;
  at.num_heads = r.get_int("num_heads", 0);
  const std::vector<int64_t> sizes = r.get_ints("qkv_hidden_sizes");
  at.mask_filter_value = r.get_float("mask_filter_value", -10000.0f);
  at.scale = r.get_float("scale", 0.0f);
  const int64_t unidirectional = r.get_int("unidirectional", 0);
  const int64_t do_rotary = r.get_int("do_rotary", 0);
  const int64_t share = r.get_int("past_present_share_buffer", 0);
  EMBER_RETURN_IF_ERROR(r.status());
  if (at.num_heads <= 0) return invalid_argument("node '{}': num_heads={} must be positive", node.name, at.num_heads);
  if (!sizes.empty()) {
    if (sizes.size() != 3 || sizes[0] <= 0 || sizes[0] != sizes[1] || sizes[2] <= 0) {
      return invalid_argument("node '{}': qkv_hidden_sizes must be 3 positive values with q == k", node.name);
    }
    at.q_hidden = sizes[0];
    at.k_hidden = sizes[1];
    at.v_hidden = sizes[2];
  }
  if (do_rotary != 0) {
    return not_implemented("node '{}': do_rotary is not supported by ONNX Runtime's CPU Attention kernel (use "
                           "MultiHeadAttention + RotaryEmbedding)",
                           node.name);
  }
  if (share != 0) return not_implemented("node '{}': past_present_share_buffer=1 is not implemented", node.name);
  at.unidirectional = unidirectional != 0;
  return at;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_attention_contrib(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  EMBER_ASSIGN_OR_RETURN(Attrs at, read_attrs(init.node));
  EMBER_ASSIGN_OR_RETURN(const DType dtype,
                         check_float_inputs(init, "Attention", kInput, "input",
                                            {{kWeights, "weights"},
                                             {kBias, "bias"},
                                             {kPast, "past"},
                                             {kAttentionBias, "attention_bias"}}));
  EMBER_RETURN_IF_ERROR(check_input_dtype(init, kMaskIndex, "mask_index", DType::kI32));
  sgemm::PackedWeight weights;
  const Tensor* w = init.constant_inputs.size() > kWeights ? init.constant_inputs[kWeights] : nullptr;
  if (w && w->rank() == 2) {
    // float16 weights are packed from f32 once: the projection runs the f32 GEMM.
    std::vector<float> wide;
    const float* values = w->data_as<float>();
    if (dtype == DType::kF16) {
      wide.resize(static_cast<size_t>(w->numel()));
      FloatStage(dtype).widen(w->data(), wide.data(), w->numel());
      values = wide.data();
    }
    weights = sgemm::PackedWeight(sgemm::sgemm_table(), values, w->dim(1), false, w->dim(0), w->dim(1));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<AttentionContribKernel>(at, dtype, std::move(weights)));
}

}  // namespace ember::kernels::attention
