// Gather(Transpose(C, perm), indices, axis=a) with C a constant becomes
// Transpose(Gather(C, indices, axis=perm[a]), perm'): the rows picked are read
// from C in its own layout, and only they are transposed. The model
// builder's fp32 exports with tied embeddings embed tokens this way
// (Gather(Transpose(lm_head.MatMul.weight), input_ids)): folding that Transpose
// would add a second copy of the largest weight (Qwen2.5-0.5B: 545 MB), and
// not folding it transposes the whole matrix on every step.
#include <numeric>

#include "runtime/fusion_util.h"
#include "runtime/optimizer.h"

namespace ember::runtime {
namespace {

// The Transpose's permutation over `rank` axes (default: reversed), or empty when malformed.
std::vector<int64_t> permutation(const ir::Node& transpose, size_t rank) {
  const ir::Attribute* a = transpose.find_attr("perm");
  std::vector<int64_t> perm(rank);
  if (a == nullptr) {
    std::iota(perm.rbegin(), perm.rend(), int64_t{0});
    return perm;
  }
  if (a->ints.size() != rank) return {};
  std::vector<bool> seen(rank, false);
  for (int64_t p : a->ints) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) return {};
    seen[static_cast<size_t>(p)] = true;
  }
  return a->ints;
}

// The axes of Gather(C, indices, axis=source_axis) that make up
// Gather(Transpose(C, perm), indices, axis): C has rank r, indices rank q.
std::vector<int64_t> output_permutation(const std::vector<int64_t>& perm, int64_t axis, int64_t q) {
  const auto r = static_cast<int64_t>(perm.size());
  const int64_t source_axis = perm[static_cast<size_t>(axis)];
  // Where C's axis c sits in Gather(C, ...): before the indices' axes, or after them.
  auto position_of = [&](int64_t c) { return c < source_axis ? c : c - 1 + q; };
  std::vector<int64_t> out;
  for (int64_t i = 0; i < axis; ++i) out.push_back(position_of(perm[static_cast<size_t>(i)]));
  for (int64_t k = 0; k < q; ++k) out.push_back(source_axis + k);
  for (int64_t i = axis + 1; i < r; ++i) out.push_back(position_of(perm[static_cast<size_t>(i)]));
  return out;
}

// Rewrites node `at` in place and returns the Transpose to insert after it, or nothing.
std::optional<ir::Node> rewrite(ir::Graph& g, ir::NodeId at) {
  ir::Node& gather = g.node(at);
  if (!is_op(gather, "Gather", 2) || gather.inputs[0] == ir::kNoValue) return std::nullopt;
  const ir::Value& data = g.value(gather.inputs[0]);
  const ir::Value& indices = g.value(gather.inputs[1]);
  if (data.producer < 0 || !indices.has_shape) return std::nullopt;
  const ir::Node& transpose = g.node(data.producer);
  if (!is_op(transpose, "Transpose", 1)) return std::nullopt;
  const ir::ValueId source = transpose.inputs[0];
  const ir::Value& c = g.value(source);
  if (!c.constant.has_value() || c.is_graph_input || c.constant->rank() == 0) return std::nullopt;
  const std::vector<int64_t> perm = permutation(transpose, static_cast<size_t>(c.constant->rank()));
  if (perm.empty()) return std::nullopt;
  const auto rank = static_cast<int64_t>(perm.size());
  const ir::Attribute* axis_attr = gather.find_attr("axis");
  int64_t axis = axis_attr ? axis_attr->i : 0;
  if (axis < -rank || axis >= rank) return std::nullopt;  // the session reports it
  if (axis < 0) axis += rank;

  const auto q = static_cast<int64_t>(indices.shape.size());
  const ir::ValueId picked = g.add_value(gather.name + "/gather_through_transpose");
  // add_value may reallocate `values`: `data`, `indices` and `c` are not used after this.
  g.value(picked).dtype = g.value(source).dtype;
  ir::Node after;
  after.name = gather.name + "/transpose_rows";
  after.op_type = "Transpose";
  after.opset = transpose.opset;
  after.inputs = {picked};
  after.num_explicit_inputs = 1;
  after.outputs = gather.outputs;
  after.attributes = {ints_attribute("perm", output_permutation(perm, axis, q))};
  gather.inputs[0] = source;
  gather.outputs = {picked};
  gather.attributes = {int_attribute("axis", perm[static_cast<size_t>(axis)])};
  return after;
}

}  // namespace

size_t gather_through_transpose(ir::Graph& g) {
  // Matched on the current links; the Transposes go in afterwards, last
  // first, so the node ids the matching read stay valid throughout.
  std::vector<std::pair<size_t, ir::Node>> inserts;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (std::optional<ir::Node> after = rewrite(g, static_cast<ir::NodeId>(i))) inserts.emplace_back(i + 1, std::move(*after));
  }
  for (auto it = inserts.rbegin(); it != inserts.rend(); ++it) {
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(it->first), std::move(it->second));
  }
  // Each Transpose follows its Gather, so the order stays topological; the
  // links only need recomputing, which cannot fail on what was linked before.
  if (!inserts.empty()) (void)g.rebuild_links();
  return inserts.size();
}

}  // namespace ember::runtime
