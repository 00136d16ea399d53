// ai.onnx.preview FlexAttention (version 1): attention over rank-4 Q [B, Hq, L, E],
// K [B, Hkv, S, E], V [B, Hkv, S, Ev] with two optional subgraph hooks:
//
//   scores = (Q * sqrt(scale)) @ (K * sqrt(scale))^T     in the input dtype T
//   scores = score_mod(scores)                           in the softmax dtype C
//   probs  = softmax(scores)                             in C
//   probs  = prob_mod(probs)                             in C
//   Y      = probs @ V                                   in C, rounded to T
//
// as the spec's reference orders the roundings (sqrt(scale) is computed in f32
// and rounded to T; Q and K are each scaled and rounded to T; the Q.K sums are
// rounded to T). C is float64 for float64 inputs, else float32, or the dtype
// softmax_precision names (float32 or float64 here). Query head h reads K/V
// head h / (Hq / Hkv). The hooks run the node's compiled subgraphs on the whole
// [B, Hq, L, S] tensor, as a reference-quality op: no fusion, no chunking.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/attention/attention_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t { kQ, kK, kV };

struct Hook {
  std::shared_ptr<const ir::Graph> graph;
  std::unique_ptr<CompiledSubgraph> compiled;
  std::vector<size_t> outer_input;  // for each outer_ref of the graph: its index in the node's inputs
};

struct FlexGeometry {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_size = 0, v_head_size = 0;
};

Result<FlexGeometry> flex_geometry(const KernelContext& ctx) {
  const Tensor& q = ctx.input(kQ);
  const Tensor& k = ctx.input(kK);
  const Tensor& v = ctx.input(kV);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
    return invalid_argument("inputs 'Q' {}, 'K' {} and 'V' {} must be rank 4", q.describe(), k.describe(),
                            v.describe());
  }
  FlexGeometry g{q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
  if (k.dim(0) != g.batch || v.dim(0) != g.batch || v.dim(1) != g.kv_heads || v.dim(2) != g.kv_len ||
      k.dim(3) != g.head_size) {
    return invalid_argument("inputs 'Q' {}, 'K' {}, 'V' {}: batch, K/V heads and lengths, and Q/K head sizes must "
                            "match",
                            q.describe(), k.describe(), v.describe());
  }
  if (g.kv_heads <= 0 || g.q_heads % g.kv_heads != 0) {
    return invalid_argument("Q's {} heads must be a multiple of K/V's {} heads", g.q_heads, g.kv_heads);
  }
  return g;
}

template <typename T> using Wide = std::conditional_t<std::is_same_v<T, double>, double, float>;

// scores[b, h, l, s] = T(sum_e T(q * r) T(k * r)) as C, with r = T(sqrt(scale)).
template <typename T, typename C>
void flex_scores(const FlexGeometry& g, const T* q, const T* k, float scale, C* scores) {
  using W = Wide<T>;
  const W root = static_cast<W>(T(std::sqrt(scale)));
  const int64_t group = g.q_heads / g.kv_heads;
  threading::parallel_for(g.batch * g.q_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<W> qs(static_cast<size_t>(g.head_size)), ks(static_cast<size_t>(g.kv_len * g.head_size));
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / g.q_heads, h = i % g.q_heads;
      const T* kh = k + (b * g.kv_heads + h / group) * g.kv_len * g.head_size;
      for (int64_t j = 0; j < g.kv_len * g.head_size; ++j) ks[static_cast<size_t>(j)] = static_cast<W>(T(static_cast<W>(kh[j]) * root));
      for (int64_t l = 0; l < g.q_len; ++l) {
        const T* qr = q + (i * g.q_len + l) * g.head_size;
        for (int64_t e = 0; e < g.head_size; ++e) qs[static_cast<size_t>(e)] = static_cast<W>(T(static_cast<W>(qr[e]) * root));
        C* row = scores + (i * g.q_len + l) * g.kv_len;
        for (int64_t s = 0; s < g.kv_len; ++s) {
          W acc = 0;
          for (int64_t e = 0; e < g.head_size; ++e) acc += qs[static_cast<size_t>(e)] * ks[static_cast<size_t>(s * g.head_size + e)];
          row[s] = static_cast<C>(static_cast<W>(T(acc)));
        }
      }
    }
  });
}

template <typename C> void softmax_rows(C* x, int64_t rows, int64_t n) {
  threading::parallel_for(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      C* row = x + r * n;
      C max = -std::numeric_limits<C>::infinity();
      for (int64_t t = 0; t < n; ++t) max = std::max(max, row[t]);
      C sum = 0;
      for (int64_t t = 0; t < n; ++t) sum += row[t] = std::exp(row[t] - max);
      for (int64_t t = 0; t < n; ++t) row[t] /= sum;
    }
  });
}

// Y[b, h, l] = T(sum_s probs[b, h, l, s] * V[b, h / group, s]) in C.
template <typename T, typename C> void flex_values(const FlexGeometry& g, const C* probs, const T* v, T* y) {
  const int64_t group = g.q_heads / g.kv_heads;
  threading::parallel_for(g.batch * g.q_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> acc(static_cast<size_t>(g.v_head_size));
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / g.q_heads, h = i % g.q_heads;
      const T* vh = v + (b * g.kv_heads + h / group) * g.kv_len * g.v_head_size;
      for (int64_t l = 0; l < g.q_len; ++l) {
        const C* p = probs + (i * g.q_len + l) * g.kv_len;
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t s = 0; s < g.kv_len; ++s) {
          for (int64_t e = 0; e < g.v_head_size; ++e) acc[static_cast<size_t>(e)] += p[s] * static_cast<C>(vh[s * g.v_head_size + e]);
        }
        T* out = y + (i * g.q_len + l) * g.v_head_size;
        for (int64_t e = 0; e < g.v_head_size; ++e) out[e] = T(acc[static_cast<size_t>(e)]);
      }
    }
  });
}

class FlexAttentionKernel final : public OpKernel {
 public:
  FlexAttentionKernel(DType dtype, DType softmax_dtype, float scale)
      : dtype_(dtype), softmax_dtype_(softmax_dtype), scale_(scale) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const FlexGeometry g, flex_geometry(ctx));
    ctx.set_output(0, dtype_, {g.batch, g.q_heads, g.q_len, g.v_head_size});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const FlexGeometry g, flex_geometry(ctx));
    if (softmax_dtype_ == DType::kF64) return run_as<double>(ctx, g);
    return run_as<float>(ctx, g);
  }

  Status bind(const KernelInit& init, std::string_view attr, Hook& hook) {
    ir::AttrReader r(init.node);
    std::shared_ptr<ir::Graph> graph = r.get_graph(attr);
    EMBER_RETURN_IF_ERROR(r.status());
    if (!graph) return Status::ok();
    if (graph->inputs.size() != 1 || graph->outputs.size() != 1) {
      return invalid_model("node '{}': {} must take one input and produce one output, it has {} and {}",
                           init.node.name, attr, graph->inputs.size(), graph->outputs.size());
    }
    if (!init.subgraphs || !init.graph) return not_implemented("FlexAttention's {} needs a runtime that compiles subgraphs", attr);
    for (ir::ValueId ref : graph->outer_refs) {
      const std::string& name = graph->value(ref).name;
      size_t i = init.node.num_explicit_inputs;
      while (i < init.node.inputs.size() && init.graph->value(init.node.inputs[i]).name != name) ++i;
      if (i == init.node.inputs.size()) {
        return invalid_model("node '{}': {} reads '{}', which the enclosing graph does not define", init.node.name,
                             attr, name);
      }
      hook.outer_input.push_back(i);
    }
    hook.graph = graph;
    EMBER_ASSIGN_OR_RETURN(hook.compiled, init.subgraphs->compile(graph));
    return Status::ok();
  }

  Hook score_mod_, prob_mod_;

 private:
  template <typename C> Status run_as(KernelContext& ctx, const FlexGeometry& g) const {
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(g.head_size));
    Tensor scores = Tensor::allocate(softmax_dtype_, {g.batch, g.q_heads, g.q_len, g.kv_len});
    const Tensor& q = ctx.input(kQ);
    const Tensor& k = ctx.input(kK);
    EMBER_SWITCH_FLOAT(dtype_, T, (flex_scores<T, C>(g, q.data_as<T>(), k.data_as<T>(), scale, scores.data_as<C>())),
                       return not_implemented("FlexAttention on {}", q.describe()));
    EMBER_RETURN_IF_ERROR(apply_hook(ctx, score_mod_, "score_mod", scores));
    softmax_rows(scores.data_as<C>(), g.batch * g.q_heads * g.q_len, g.kv_len);
    EMBER_RETURN_IF_ERROR(apply_hook(ctx, prob_mod_, "prob_mod", scores));
    EMBER_SWITCH_FLOAT(dtype_, T,
                       (flex_values<T, C>(g, scores.data_as<C>(), ctx.input(kV).data_as<T>(), ctx.output(0).data_as<T>())),
                       return not_implemented("FlexAttention on {}", q.describe()));
    return Status::ok();
  }

  // Replaces x by hook(x); the hook must keep x's dtype and shape.
  static Status apply_hook(const KernelContext& ctx, const Hook& hook, const char* attr, Tensor& x) {
    if (!hook.compiled) return Status::ok();
    std::vector<const Tensor*> feeds{&x};
    for (size_t i : hook.outer_input) feeds.push_back(&ctx.input(i));
    std::vector<Tensor> outputs;
    EMBER_RETURN_IF_ERROR(hook.compiled->run(feeds, outputs));
    if (outputs.size() != 1 || outputs[0].dtype() != x.dtype() || outputs[0].shape() != x.shape()) {
      return invalid_argument("{} returned {} for input {}; it must keep the dtype and shape", attr,
                              outputs.empty() ? std::string("nothing") : outputs[0].describe(), x.describe());
    }
    x = std::move(outputs[0]);
    return Status::ok();
  }

  DType dtype_, softmax_dtype_;
  float scale_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_flex_attention(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  ir::AttrReader r(init.node);
  const float scale = r.get_float("scale", 0.0f);
  const int64_t precision = r.get_int("softmax_precision", 0);
  EMBER_RETURN_IF_ERROR(r.status());
  const DType t = input_dtype(init, kQ);
  if (!dtype_is_float(t)) {
    return invalid_argument("node '{}': input 'Q' is {}; FlexAttention takes float32, float64, float16 or bfloat16",
                            init.node.name, dtype_name(t));
  }
  for (size_t i : {kK, kV}) {
    if (input_dtype(init, i) != t) {
      return invalid_argument("node '{}': inputs 'K' and 'V' must be {} like 'Q'", init.node.name, dtype_name(t));
    }
  }
  DType softmax = t == DType::kF64 ? DType::kF64 : DType::kF32;
  if (precision != 0) {
    softmax = static_cast<DType>(precision);
    if (softmax != DType::kF32 && softmax != DType::kF64) {
      return not_implemented("node '{}': softmax_precision={} ({}) is not implemented; float32 and float64 are",
                             init.node.name, precision, dtype_name(softmax));
    }
  }
  auto kernel = std::make_unique<FlexAttentionKernel>(t, softmax, scale);
  EMBER_RETURN_IF_ERROR(kernel->bind(init, "score_mod", kernel->score_mod_));
  EMBER_RETURN_IF_ERROR(kernel->bind(init, "prob_mod", kernel->prob_mod_));
  return std::unique_ptr<OpKernel>(std::move(kernel));
}

}  // namespace ember::kernels::attention
