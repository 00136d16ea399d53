// ONNX LinearAttention (opset 27): the recurrent linear-attention family over
// packed [B, T, H * D] inputs, run token by token in f32 as the spec states it.
// Per KV head h the state S is [d_k, d_v]:
//   linear:      S = S + k v^T
//   gated:       S = exp(g) S + k v^T
//   delta:       S = S + k (beta (v - S^T k))^T
//   gated_delta: S = exp(g) S + k (beta (v - (exp(g) S)^T k))^T
// and each query head of the group reads o = scale * q^T S after the update.
// decay is [B, T, H_kv] (per head) or [B, T, H_kv * d_k] (per key row); beta
// is [B, T, H_kv] or [B, T, 1]. chunk_size is a tuning hint for chunked
// prefill; this sequential form gives the same result.
#include <cmath>
#include <vector>

#include "kernels/attention/attention_ops.h"
#include "kernels/attention/attention_layout.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t { kQuery, kKey, kValue, kPastState, kDecay, kBeta };
enum Output : size_t { kOutput, kPresentState };

struct LinearAttrs {
  int64_t q_heads = 0, kv_heads = 0;
  float scale = 0.0f;
  bool gated = false, delta = false;
};

struct LinearGeometry {
  int64_t batch = 0, seq = 0, dk = 0, dv = 0;
  bool decay_per_row = false;  // decay [B, T, H_kv * d_k] rather than [B, T, H_kv]
  int64_t beta_heads = 0;      // beta's last dim: H_kv or 1
};

Status expect_rank3(const Tensor& t, const char* name) {
  if (t.rank() != 3) return invalid_argument("input '{}' {} must be rank 3 [batch, length, heads * dim]", name, t.describe());
  return Status::ok();
}

Result<LinearGeometry> linear_geometry(const KernelContext& ctx, const LinearAttrs& at) {
  const Tensor& q = ctx.input(kQuery);
  const Tensor& k = ctx.input(kKey);
  const Tensor& v = ctx.input(kValue);
  EMBER_RETURN_IF_ERROR(expect_rank3(q, "query"));
  EMBER_RETURN_IF_ERROR(expect_rank3(k, "key"));
  EMBER_RETURN_IF_ERROR(expect_rank3(v, "value"));
  LinearGeometry g{q.dim(0), q.dim(1), q.dim(2) / at.q_heads, v.dim(2) / at.kv_heads};
  if (q.dim(2) % at.q_heads != 0 || v.dim(2) % at.kv_heads != 0 || k.dim(2) != at.kv_heads * g.dk) {
    return invalid_argument("inputs 'query' {}, 'key' {}, 'value' {} do not split into q_num_heads={} and "
                            "kv_num_heads={} heads with one key size",
                            q.describe(), k.describe(), v.describe(), at.q_heads, at.kv_heads);
  }
  for (const Tensor* t : {&k, &v}) {
    if (t->dim(0) != g.batch || t->dim(1) != g.seq) {
      return invalid_argument("inputs 'query' {}, 'key' {} and 'value' {} must share batch and length",
                              q.describe(), k.describe(), v.describe());
    }
  }
  if (ctx.has_input(kPastState)) {
    const Tensor& s = ctx.input(kPastState);
    if (s.shape() != Shape{g.batch, at.kv_heads, g.dk, g.dv}) {
      return invalid_argument("input 'past_state' {} must be [batch={}, kv_num_heads={}, d_k={}, d_v={}]",
                              s.describe(), g.batch, at.kv_heads, g.dk, g.dv);
    }
  }
  if (at.gated != ctx.has_input(kDecay)) {
    return invalid_argument("input 'decay' must be given exactly when update_rule is 'gated' or 'gated_delta'");
  }
  if (at.delta != ctx.has_input(kBeta)) {
    return invalid_argument("input 'beta' must be given exactly when update_rule is 'delta' or 'gated_delta'");
  }
  if (at.gated) {
    const Tensor& d = ctx.input(kDecay);
    g.decay_per_row = d.rank() == 3 && d.dim(2) == at.kv_heads * g.dk && g.dk != 1;
    if (d.rank() != 3 || d.dim(0) != g.batch || d.dim(1) != g.seq ||
        (d.dim(2) != at.kv_heads && d.dim(2) != at.kv_heads * g.dk)) {
      return invalid_argument("input 'decay' {} must be [batch={}, length={}, kv_num_heads={} or kv_num_heads * d_k={}]",
                              d.describe(), g.batch, g.seq, at.kv_heads, at.kv_heads * g.dk);
    }
  }
  if (at.delta) {
    const Tensor& b = ctx.input(kBeta);
    if (b.rank() != 3 || b.dim(0) != g.batch || b.dim(1) != g.seq || (b.dim(2) != at.kv_heads && b.dim(2) != 1)) {
      return invalid_argument("input 'beta' {} must be [batch={}, length={}, kv_num_heads={} or 1]", b.describe(),
                              g.batch, g.seq, at.kv_heads);
    }
    g.beta_heads = b.dim(2);
  }
  return g;
}

class LinearAttentionKernel final : public OpKernel {
 public:
  LinearAttentionKernel(LinearAttrs at, DType dtype, DType state_dtype)
      : at_(at), stage_(dtype), state_stage_(state_dtype) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const LinearGeometry g, linear_geometry(ctx, at_));
    ctx.set_output(kOutput, stage_.dtype(), {g.batch, g.seq, at_.q_heads * g.dv});
    ctx.set_output(kPresentState, state_stage_.dtype(), {g.batch, at_.kv_heads, g.dk, g.dv});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const LinearGeometry g, linear_geometry(ctx, at_));
    const float* q = stage_.input(ctx.input(kQuery), ScratchSlot::kInQuery);
    const float* k = stage_.input(ctx.input(kKey), ScratchSlot::kInKey);
    const float* v = stage_.input(ctx.input(kValue), ScratchSlot::kInValue);
    const float* decay = at_.gated ? stage_.input(ctx.input(kDecay), ScratchSlot::kInBias) : nullptr;
    const float* beta = at_.delta ? stage_.input(ctx.input(kBeta), ScratchSlot::kInScores) : nullptr;
    const int64_t state_elems = g.batch * at_.kv_heads * g.dk * g.dv;
    std::vector<float> state(static_cast<size_t>(state_elems), 0.0f);
    if (ctx.has_input(kPastState)) state_stage_.widen(ctx.input(kPastState).data(), state.data(), state_elems);
    Tensor& out_t = ctx.output(kOutput);
    float* out = stage_.output(out_t, ScratchSlot::kOutput);
    const float scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(g.dk));
    threading::parallel_for(g.batch * at_.kv_heads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) recur(g, i / at_.kv_heads, i % at_.kv_heads, q, k, v, decay, beta, scale,
                                                  state.data() + i * g.dk * g.dv, out);
    });
    stage_.finish(out, out_t);
    if (ctx.has_output(kPresentState)) {
      state_stage_.narrow(state.data(), ctx.output(kPresentState).data(), state_elems);
    }
    return Status::ok();
  }

 private:
  // All tokens of batch row b through KV head h's state s [d_k, d_v].
  void recur(const LinearGeometry& g, int64_t b, int64_t h, const float* q, const float* k, const float* v,
             const float* decay, const float* beta, float scale, float* s, float* out) const {
    const int64_t group = at_.q_heads / at_.kv_heads;
    std::vector<float> u(static_cast<size_t>(g.dv));
    for (int64_t t = 0; t < g.seq; ++t) {
      const int64_t token = b * g.seq + t;
      const float* kt = k + (token * at_.kv_heads + h) * g.dk;
      const float* vt = v + (token * at_.kv_heads + h) * g.dv;
      if (decay) {
        const float* dt = decay + token * (g.decay_per_row ? at_.kv_heads * g.dk : at_.kv_heads);
        for (int64_t r = 0; r < g.dk; ++r) {
          const float f = std::exp(g.decay_per_row ? dt[h * g.dk + r] : dt[h]);
          for (int64_t c = 0; c < g.dv; ++c) s[r * g.dv + c] *= f;
        }
      }
      for (int64_t c = 0; c < g.dv; ++c) u[static_cast<size_t>(c)] = vt[c];
      if (beta) {
        const float bt = beta[token * g.beta_heads + (g.beta_heads == 1 ? 0 : h)];
        for (int64_t c = 0; c < g.dv; ++c) {
          float retrieved = 0.0f;
          for (int64_t r = 0; r < g.dk; ++r) retrieved += s[r * g.dv + c] * kt[r];
          u[static_cast<size_t>(c)] = bt * (vt[c] - retrieved);
        }
      }
      for (int64_t r = 0; r < g.dk; ++r) {
        for (int64_t c = 0; c < g.dv; ++c) s[r * g.dv + c] += kt[r] * u[static_cast<size_t>(c)];
      }
      for (int64_t n = h * group; n < (h + 1) * group; ++n) {
        const float* qt = q + (token * at_.q_heads + n) * g.dk;
        float* o = out + (token * at_.q_heads + n) * g.dv;
        for (int64_t c = 0; c < g.dv; ++c) {
          float acc = 0.0f;
          for (int64_t r = 0; r < g.dk; ++r) acc += qt[r] * s[r * g.dv + c];
          o[c] = scale * acc;
        }
      }
    }
  }

  LinearAttrs at_;
  FloatStage stage_, state_stage_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_linear_attention(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  ir::AttrReader r(init.node);
  LinearAttrs at;
  r.require("q_num_heads");
  r.require("kv_num_heads");
  at.q_heads = r.get_int("q_num_heads", 0);
  at.kv_heads = r.get_int("kv_num_heads", 0);
  at.scale = r.get_float("scale", 0.0f);
  const std::string rule = r.get_string("update_rule", "gated_delta");
  r.get_int("chunk_size", 64);
  EMBER_RETURN_IF_ERROR(r.status());
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return invalid_argument("node '{}': update_rule='{}' must be 'linear', 'gated', 'delta' or 'gated_delta'",
                            init.node.name, rule);
  }
  if (at.q_heads <= 0 || at.kv_heads <= 0 || at.q_heads % at.kv_heads != 0) {
    return invalid_argument("node '{}': q_num_heads={} must be a positive multiple of kv_num_heads={}",
                            init.node.name, at.q_heads, at.kv_heads);
  }
  at.gated = rule == "gated" || rule == "gated_delta";
  at.delta = rule == "delta" || rule == "gated_delta";
  const DType t = input_dtype(init, kQuery);
  if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16) {
    return invalid_argument("node '{}': input 'query' is {}; LinearAttention takes float32, float16 or bfloat16",
                            init.node.name, dtype_name(t));
  }
  for (auto [i, name] : {std::pair<size_t, const char*>{kKey, "key"}, {kValue, "value"}, {kDecay, "decay"}, {kBeta, "beta"}}) {
    EMBER_RETURN_IF_ERROR(check_input_dtype(init, i, name, t));
  }
  const DType s = input_dtype(init, kPastState);
  if (s != DType::kUndefined && s != DType::kF32 && s != DType::kF16 && s != DType::kBF16) {
    return invalid_argument("node '{}': input 'past_state' is {}; it must be float32, float16 or bfloat16",
                            init.node.name, dtype_name(s));
  }
  return std::unique_ptr<OpKernel>(
      std::make_unique<LinearAttentionKernel>(at, t, s == DType::kUndefined ? t : s));
}

}  // namespace ember::kernels::attention
