// Turns MatMul (f32, constant 2-D B) -> Add (constant row bias) [-> activation]
// into one ember.FusedMatMul node (kernels/matmul/fused_matmul.h), so the bias
// and activation run on each output block while the GEMM has it in cache.
// Every absorbed intermediate has exactly the chain's next node as reader and
// is not a graph output; the fused node takes the slot of the chain's last
// node, after which its inputs (A, B, bias: all read by the MatMul or constant)
// are all available.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/elementwise/fused_elementwise.h"
#include "kernels/elementwise/unary_spec.h"
#include "kernels/matmul/fused_matmul.h"
#include "runtime/fusion_util.h"
#include "runtime/optimizer.h"

namespace ember::runtime {
namespace {

struct Chain {
  ir::ValueId bias = ir::kNoValue;
  std::vector<ir::NodeId> absorbed;  // MatMul, Add [, activation nodes]; the last one's slot takes the fused node
  std::string activation;            // empty: none
};

bool is_constant_f32(const ir::Value& v) {
  return v.constant.has_value() && !v.is_graph_input && v.constant->dtype() == DType::kF32 &&
         v.constant->data() != nullptr;
}

// A constant f32 [1, ..., 1, n] of rank at most `out_rank`.
bool is_row_bias(const ir::Value& v, int64_t n, size_t out_rank) {
  if (!is_constant_f32(v)) return false;
  const Shape& s = v.constant->shape();
  if (s.empty() || s.size() > out_rank || s.back() != n) return false;
  return std::all_of(s.begin(), s.end() - 1, [](int64_t d) { return d == 1; });
}

// x -> Sigmoid -> s, Mul(x, s) in either order: the Mul's node id.
std::optional<ir::NodeId> silu_mul(const ir::Graph& g, ir::ValueId x) {
  const ir::Value& v = g.value(x);
  if (v.is_graph_output || v.consumers.size() != 2) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const ir::Node& sig = g.node(v.consumers[first]);
    const ir::NodeId mul_id = v.consumers[1 - first];
    const ir::Node& mul = g.node(mul_id);
    if (!is_op(sig, "Sigmoid", 1) || !is_op(mul, "Mul", 2) || mul.opset < 7) continue;
    const ir::ValueId s = sig.outputs[0];
    const bool operands = (mul.inputs[0] == x && mul.inputs[1] == s) || (mul.inputs[0] == s && mul.inputs[1] == x);
    if (operands && sole_reader(g, s) == mul_id) return mul_id;
  }
  return std::nullopt;
}

// The `activation` attribute for node `id` reading `x`, when the epilogue can
// apply that node (a FastGelu with its bias input is not a table entry).
std::optional<std::string_view> single_activation(const ir::Graph& g, ir::NodeId id, ir::ValueId x) {
  const ir::Node& n = g.node(id);
  if (n.removed || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] != x) return std::nullopt;
  if (n.op_type == "Gelu" && n.domain.empty() && n.opset < 20) return std::nullopt;
  auto spec = kernels::unary_spec(n);
  if (!spec.is_ok() || !spec->has_value() || (*spec)->kind == kernels::UnaryKind::kSilu) return std::nullopt;
  return kernels::fused_matmul_activation((*spec)->kind);
}

// The numpy-broadcasting Add that alone reads `y`, and its other operand.
struct BiasAdd {
  ir::NodeId add;
  ir::ValueId bias;
};
std::optional<BiasAdd> sole_bias_add(const ir::Graph& g, ir::ValueId y) {
  const auto add_id = sole_reader(g, y);
  if (!add_id) return std::nullopt;
  const ir::Node& add = g.node(*add_id);
  // Before opset 7 Add broadcasts along an `axis` attribute, not numpy-style.
  if (!is_op(add, "Add", 2) || add.opset < 7 || !add.attributes.empty()) return std::nullopt;
  const ir::ValueId bias = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
  if (bias == y || bias == ir::kNoValue) return std::nullopt;
  return BiasAdd{*add_id, bias};
}

std::optional<Chain> match_chain(const ir::Graph& g, ir::NodeId mm_id) {
  const ir::Node& mm = g.node(mm_id);
  if (!is_op(mm, "MatMul", 2) || mm.inputs[0] == ir::kNoValue || mm.inputs[1] == ir::kNoValue) return std::nullopt;
  const ir::Value& a = g.value(mm.inputs[0]);
  const ir::Value& b = g.value(mm.inputs[1]);
  const ir::Value& y = g.value(mm.outputs[0]);
  if (a.dtype != DType::kF32 || !is_constant_f32(b) || b.constant->rank() != 2 || !y.has_shape) return std::nullopt;
  const auto ba = sole_bias_add(g, mm.outputs[0]);
  if (!ba || !is_row_bias(g.value(ba->bias), b.constant->dim(1), y.shape.size())) return std::nullopt;
  Chain c{ba->bias, {mm_id, ba->add}, ""};
  const ir::ValueId sum = g.node(ba->add).outputs[0];
  if (auto mul = silu_mul(g, sum)) {
    const ir::Value& sv = g.value(sum);
    const ir::NodeId sig = sv.consumers[0] == *mul ? sv.consumers[1] : sv.consumers[0];
    c.absorbed.push_back(std::min(sig, *mul));
    c.absorbed.push_back(std::max(sig, *mul));
    c.activation = "Silu";
  } else if (auto reader = sole_reader(g, sum)) {
    if (auto act = single_activation(g, *reader, sum)) {
      c.absorbed.push_back(*reader);
      c.activation = std::string(*act);
    }
  }
  return c;
}

void replace_chain(ir::Graph& g, const Chain& c) {
  const ir::Node& mm = g.node(c.absorbed.front());
  ir::Node fused;
  fused.name = mm.name.empty() ? "fused_matmul" : mm.name + "/fused";
  fused.op_type = std::string(kernels::kFusedMatMulOp);
  fused.domain = std::string(kernels::kEmberDomain);
  fused.opset = 1;
  fused.inputs = {mm.inputs[0], mm.inputs[1], c.bias};
  fused.num_explicit_inputs = 3;
  fused.outputs = g.node(c.absorbed.back()).outputs;
  if (!c.activation.empty()) {
    ir::Attribute attr;
    attr.name = "activation";
    attr.type = ir::AttrType::kString;
    attr.s = c.activation;
    fused.attributes.push_back(std::move(attr));
  }
  for (ir::NodeId id : c.absorbed) g.node(id).removed = true;
  g.node(c.absorbed.back()) = std::move(fused);
}

// MatMulNBits (no bias yet) -> Add(constant of A's dtype, [N] or [1, ..., 1, N]):
// the bias, as a [N] value.
std::optional<ir::ValueId> nbits_bias(ir::Graph& g, const ir::Node& mm) {
  if (mm.removed || mm.domain != "com.microsoft" || mm.op_type != "MatMulNBits" || mm.outputs.size() != 1 ||
      mm.inputs.size() > 6 || mm.inputs.empty() || mm.inputs[0] == ir::kNoValue) {
    return std::nullopt;
  }
  constexpr size_t kBias = 5;
  if (mm.inputs.size() > kBias && mm.inputs[kBias] != ir::kNoValue) return std::nullopt;
  const ir::Attribute* n_attr = mm.find_attr("N");
  const DType dtype = g.value(mm.inputs[0]).dtype;
  const ir::Value& y = g.value(mm.outputs[0]);
  if (!n_attr || (dtype != DType::kF32 && dtype != DType::kF16) || !y.has_shape) return std::nullopt;
  const auto ba = sole_bias_add(g, mm.outputs[0]);
  if (!ba) return std::nullopt;
  const ir::ValueId bias = ba->bias;
  const ir::Value& b = g.value(bias);
  if (!is_constant(b, dtype)) return std::nullopt;
  const Shape& s = b.constant->shape();
  if (s.empty() || s.size() > y.shape.size() || s.back() != n_attr->i ||
      !std::all_of(s.begin(), s.end() - 1, [](int64_t d) { return d == 1; })) {
    return std::nullopt;
  }
  if (s.size() == 1) return bias;
  Tensor row = *b.constant;
  row.set_shape({n_attr->i});
  // Named by its index: two MatMulNBits may share one bias.
  const ir::ValueId id = g.add_value(b.name + "/row" + std::to_string(g.values.size()));
  g.value(id).dtype = dtype;
  g.value(id).constant = std::move(row);
  return id;
}

}  // namespace

size_t fuse_matmul_nbits_bias(ir::Graph& g) {
  size_t fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    auto bias = nbits_bias(g, g.nodes[k]);
    if (!bias) continue;
    ir::Node& mm = g.nodes[k];
    ir::Node& add = g.node(g.value(mm.outputs[0]).consumers[0]);
    mm.inputs.resize(6, ir::kNoValue);
    mm.inputs[5] = *bias;
    mm.num_explicit_inputs = mm.inputs.size();
    mm.outputs = add.outputs;
    mm.name = fused_name(mm);
    add.removed = true;
    fused += 2;
  }
  if (fused) g.compact();
  return fused;
}

size_t fuse_matmul(ir::Graph& g) {
  size_t fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (auto chain = match_chain(g, static_cast<ir::NodeId>(k))) {
      fused += chain->absorbed.size();
      replace_chain(g, *chain);
    }
  }
  if (fused) g.compact();
  return fused;
}

}  // namespace ember::runtime
