// RMS normalization spelled in primitive ops (Hugging Face optimum exports of
// Llama-family models: x * rsqrt(mean(x^2) + eps) * weight, exported as
// Pow -> ReduceMean -> Add -> Sqrt -> Reciprocal|Div(1, .) -> Mul -> Mul, or
// Pow -> ... -> Sqrt -> Div(x, .) -> Mul) becomes one SimplifiedLayerNormalization;
// then a residual Add feeding a SimplifiedLayerNormalization becomes one
// com.microsoft SkipSimplifiedLayerNormalization that also writes the sum, as
// ONNX Runtime's SkipLayerNorm fusion does. Both kernels compute in f32 with
// the same formula, and the fused node rounds as SimplifiedLayerNormalization
// does in ORT (kFusedFromSimplifiedAttr), so the outputs keep ORT's bits; only
// f32 graphs are rewritten, so no rounding step of an f16 graph disappears.
#include <optional>
#include <vector>

#include "kernels/norm/norm_ops.h"
#include "runtime/fusion_util.h"
#include "runtime/optimizer.h"

namespace ember::runtime {
namespace {

struct RmsMatch {
  ir::ValueId x = ir::kNoValue, gamma = ir::kNoValue;
  float epsilon = 0;
  std::vector<ir::NodeId> absorbed;  // the last one's slot takes the fused node
};

// ReduceMean over the last axis only, keeping it.
bool reduces_last_axis(const ir::Graph& g, const ir::Node& n, size_t rank) {
  if (n.removed || !n.domain.empty() || n.op_type != "ReduceMean" || n.outputs.size() != 1) return false;
  const ir::Attribute* keepdims = n.find_attr("keepdims");
  if (keepdims && keepdims->i != 1) return false;
  std::vector<int64_t> axes;
  if (n.opset < 18) {
    const ir::Attribute* a = n.find_attr("axes");
    if (n.inputs.size() != 1 || !a) return false;
    axes = a->ints;
  } else {
    if (n.inputs.size() != 2 || n.inputs[1] == ir::kNoValue || n.find_attr("axes")) return false;
    const ir::Value& v = g.value(n.inputs[1]);
    if (!v.constant || !v.constant->data() || v.is_graph_input || v.constant->dtype() != DType::kI64) return false;
    axes.assign(v.constant->data_as<int64_t>(), v.constant->data_as<int64_t>() + v.constant->numel());
  }
  const auto last = static_cast<int64_t>(rank) - 1;
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == last);
}

// x -> Pow(x, 2) | Mul(x, x): x, else kNoValue.
ir::ValueId squared_input(const ir::Graph& g, const ir::Node& n) {
  if (is_op(n, "Pow", 2) && n.inputs[0] != ir::kNoValue && constant_scalar(g, n.inputs[1]) == 2.0) return n.inputs[0];
  if (is_op(n, "Mul", 2) && n.opset >= 7 && n.inputs[0] == n.inputs[1] && n.inputs[0] != ir::kNoValue) return n.inputs[0];
  return ir::kNoValue;
}

// The node reading `id` alone, when it is a numpy-broadcasting binary `op` (opset 7+).
std::optional<ir::NodeId> sole_binary(const ir::Graph& g, ir::ValueId id, std::string_view op) {
  auto r = sole_reader(g, id);
  if (!r || !is_op(g.node(*r), op, 2) || g.node(*r).opset < 7 || !g.node(*r).attributes.empty()) return std::nullopt;
  return r;
}

// Sqrt(v) -> Div(x, .), or -> Reciprocal | Div(1, .) -> Mul(x, .): the output
// of x / sqrt(v), appending the nodes read to `m.absorbed`.
std::optional<ir::ValueId> divide_by_root(const ir::Graph& g, ir::ValueId root, RmsMatch& m) {
  auto next = sole_reader(g, root);
  if (!next) return std::nullopt;
  const ir::Node& n = g.node(*next);
  ir::ValueId inverse = ir::kNoValue;
  if (is_op(n, "Div", 2) && n.opset >= 7 && n.inputs[1] == root) {
    if (n.inputs[0] == m.x) {
      m.absorbed.push_back(*next);
      return n.outputs[0];
    }
    if (constant_scalar(g, n.inputs[0]) == 1.0) inverse = n.outputs[0];
  } else if (is_op(n, "Reciprocal", 1)) {
    inverse = n.outputs[0];
  }
  if (inverse == ir::kNoValue) return std::nullopt;
  m.absorbed.push_back(*next);
  auto mul = sole_binary(g, inverse, "Mul");
  if (!mul) return std::nullopt;
  const ir::Node& mn = g.node(*mul);
  if (!((mn.inputs[0] == m.x && mn.inputs[1] == inverse) || (mn.inputs[1] == m.x && mn.inputs[0] == inverse))) {
    return std::nullopt;
  }
  m.absorbed.push_back(*mul);
  return mn.outputs[0];
}

std::optional<RmsMatch> match_rms(const ir::Graph& g, ir::NodeId id) {
  RmsMatch m;
  m.x = squared_input(g, g.node(id));
  if (m.x == ir::kNoValue) return std::nullopt;
  const ir::Value& x = g.value(m.x);
  if (x.dtype != DType::kF32 || !x.has_shape || x.shape.empty() || !x.shape.back().known()) return std::nullopt;
  const int64_t hidden = x.shape.back().value;
  m.absorbed.push_back(id);
  auto mean = sole_reader(g, g.node(id).outputs[0]);
  if (!mean || !reduces_last_axis(g, g.node(*mean), x.shape.size())) return std::nullopt;
  m.absorbed.push_back(*mean);
  auto add = sole_binary(g, g.node(*mean).outputs[0], "Add");
  if (!add) return std::nullopt;
  const ir::Node& an = g.node(*add);
  const ir::ValueId eps = an.inputs[0] == g.node(*mean).outputs[0] ? an.inputs[1] : an.inputs[0];
  auto epsilon = constant_scalar(g, eps);
  if (!epsilon || !(*epsilon >= 0)) return std::nullopt;
  m.epsilon = static_cast<float>(*epsilon);
  m.absorbed.push_back(*add);
  auto sqrt = sole_reader(g, an.outputs[0]);
  if (!sqrt || !is_op(g.node(*sqrt), "Sqrt", 1)) return std::nullopt;
  m.absorbed.push_back(*sqrt);
  auto normed = divide_by_root(g, g.node(*sqrt).outputs[0], m);
  if (!normed) return std::nullopt;
  auto scale = sole_binary(g, *normed, "Mul");
  if (!scale) return std::nullopt;
  const ir::Node& sn = g.node(*scale);
  m.gamma = sn.inputs[0] == *normed ? sn.inputs[1] : sn.inputs[0];
  const ir::Value& gv = g.value(m.gamma);
  if (!is_constant(gv, DType::kF32) || gv.constant->rank() != 1 || gv.constant->dim(0) != hidden) return std::nullopt;
  m.absorbed.push_back(*scale);
  return m;
}

void replace_rms(ir::Graph& g, const RmsMatch& m) {
  const ir::NodeId last = m.absorbed.back();
  ir::Node fused;
  fused.name = fused_name(g.node(m.absorbed.front()));
  fused.op_type = "SimplifiedLayerNormalization";
  fused.opset = g.node(last).opset;
  fused.inputs = {m.x, m.gamma};
  fused.num_explicit_inputs = 2;
  fused.outputs = g.node(last).outputs;
  fused.attributes = {int_attribute("axis", -1), float_attribute("epsilon", m.epsilon)};
  for (ir::NodeId id : m.absorbed) g.node(id).removed = true;
  g.node(last) = std::move(fused);
}

size_t fuse_rms_norm(ir::Graph& g) {
  size_t fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].removed) continue;
    if (auto m = match_rms(g, static_cast<ir::NodeId>(k))) {
      fused += m->absorbed.size();
      replace_rms(g, *m);
    }
  }
  if (fused) g.compact();
  return fused;
}

bool same_declared_shape(const ir::Value& a, const ir::Value& b) {
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return false;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const ir::Dim& x = a.shape[d];
    const ir::Dim& y = b.shape[d];
    const bool same = x.known() || y.known() ? x.value == y.value : !x.symbol.empty() && x.symbol == y.symbol;
    if (!same) return false;
  }
  return true;
}

// Add(a, b) -> SimplifiedLayerNormalization(sum, gamma) over the last axis,
// a and b of one shape and dtype: the Add's node id.
std::optional<ir::NodeId> match_skip(const ir::Graph& g, const ir::Node& norm) {
  if (norm.removed || !norm.domain.empty() || norm.op_type != "SimplifiedLayerNormalization" ||
      norm.inputs.size() != 2 || norm.outputs.empty() || norm.outputs[0] == ir::kNoValue) {
    return std::nullopt;
  }
  for (size_t i = 1; i < norm.outputs.size(); ++i) {
    if (norm.outputs[i] == ir::kNoValue) continue;
    const ir::Value& extra = g.value(norm.outputs[i]);
    if (extra.is_graph_output || !extra.consumers.empty()) return std::nullopt;
  }
  const ir::Value& sum = g.value(norm.inputs[0]);
  const ir::Value& gamma = g.value(norm.inputs[1]);
  if (sum.producer < 0 || !sum.has_shape || sum.shape.empty() || !sum.shape.back().known()) return std::nullopt;
  if (sum.dtype != DType::kF32) return std::nullopt;
  if (!is_constant(gamma, sum.dtype) || gamma.constant->rank() != 1 || gamma.constant->dim(0) != sum.shape.back().value) {
    return std::nullopt;
  }
  const ir::Attribute* axis = norm.find_attr("axis");
  const ir::Attribute* stash = norm.find_attr("stash_type");
  if ((axis && axis->i != -1 && axis->i != static_cast<int64_t>(sum.shape.size()) - 1) || (stash && stash->i != 1)) {
    return std::nullopt;
  }
  const ir::Node& add = g.node(sum.producer);
  if (!is_op(add, "Add", 2) || add.opset < 7 || !add.attributes.empty()) return std::nullopt;
  for (ir::ValueId in : add.inputs) {
    if (in == ir::kNoValue || g.value(in).dtype != sum.dtype || !same_declared_shape(g.value(in), sum)) return std::nullopt;
  }
  return sum.producer;
}

size_t fuse_skip_norm(ir::Graph& g) {
  size_t fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& norm = g.nodes[k];
    auto add_id = match_skip(g, norm);
    if (!add_id) continue;
    const ir::Node& add = g.node(*add_id);
    const ir::ValueId sum = add.outputs[0];
    const ir::Value& sv = g.value(sum);
    const bool sum_needed = sv.is_graph_output || sv.consumers.size() > 1;
    const ir::Attribute* eps = norm.find_attr("epsilon");
    ir::Node skip;
    skip.name = fused_name(add);
    skip.op_type = "SkipSimplifiedLayerNormalization";
    skip.domain = "com.microsoft";
    skip.opset = 1;
    skip.inputs = {add.inputs[0], add.inputs[1], norm.inputs[1]};
    skip.num_explicit_inputs = 3;
    skip.outputs = {norm.outputs[0], ir::kNoValue, ir::kNoValue, sum_needed ? sum : ir::kNoValue};
    // SimplifiedLayerNormalization's default epsilon; the Skip op's is 1e-12.
    skip.attributes = {float_attribute("epsilon", eps ? eps->f : 1e-5f),
                       int_attribute(std::string(kernels::kFusedFromSimplifiedAttr), 1)};
    // The Add's slot: both addends are available there, and every reader of
    // the sum or the normalized output comes after it.
    g.nodes[k].removed = true;
    g.node(*add_id) = std::move(skip);
    fused += 2;
  }
  if (fused) g.compact();
  return fused;
}

}  // namespace

size_t fuse_norms(ir::Graph& g) { return fuse_rms_norm(g) + fuse_skip_norm(g); }

}  // namespace ember::runtime
