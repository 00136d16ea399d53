// Groups elementwise nodes into FusedElementwise nodes (kernels/elementwise/
// fused_elementwise.h). A node joins the group of its consumers when every
// consumer of its output is in that one group, its output is not a graph
// output, and it has the group's shape; the group's root is the node whose
// output leaves it. Groups so formed cannot close a cycle: every member
// reaches the root through members only.
#include <algorithm>
#include <map>

#include "kernels/elementwise/fused_elementwise.h"
#include "runtime/optimizer.h"

namespace ember::runtime {
namespace {

// Enough for the longest activation bodies exporters inline (tanh-form GELU in
// f16 is about ten nodes) while bounding the kernel's temporaries.
constexpr size_t kMaxGroupNodes = 24;

bool same_dim(const ir::Dim& a, const ir::Dim& b) {
  if (a.known() || b.known()) return a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

bool fully_described(const ir::Value& v) {
  if (!v.has_shape) return false;
  return std::all_of(v.shape.begin(), v.shape.end(), [](const ir::Dim& d) { return d.known() || !d.symbol.empty(); });
}

bool same_shape(const ir::Value& a, const ir::Value& b) {
  return a.has_shape && b.has_shape && a.shape.size() == b.shape.size() &&
         std::equal(a.shape.begin(), a.shape.end(), b.shape.begin(), same_dim);
}

bool is_scalar(const ir::Value& v) {
  return v.has_shape && std::all_of(v.shape.begin(), v.shape.end(), [](const ir::Dim& d) { return d.value == 1; });
}

// `in` (leading ones dropped) equals the trailing dims of `out`: a row broadcast.
bool is_suffix(const ir::Value& in, const ir::Value& out) {
  if (!in.has_shape || !out.has_shape) return false;
  size_t lead = 0;
  while (lead < in.shape.size() && in.shape[lead].value == 1) ++lead;
  const size_t rest = in.shape.size() - lead;
  if (rest > out.shape.size()) return false;
  return std::equal(in.shape.begin() + static_cast<std::ptrdiff_t>(lead), in.shape.end(),
                    out.shape.end() - static_cast<std::ptrdiff_t>(rest), same_dim);
}

// The node computes elementwise over its output's shape, with every input
// full-shaped, a scalar (binary ops) or a row (binary ops).
bool can_fuse(const ir::Graph& g, const ir::Node& node) {
  if (!kernels::is_fusible_elementwise(node)) return false;
  const ir::Value& out = g.value(node.outputs[0]);
  if (!kernels::is_fusible_dtype(out.dtype) || !fully_described(out)) return false;
  const bool binary = node.inputs.size() == 2;
  for (ir::ValueId id : node.inputs) {
    if (id == ir::kNoValue) return false;
    const ir::Value& in = g.value(id);
    if (!kernels::is_fusible_dtype(in.dtype) || !fully_described(in)) return false;
    if (same_shape(in, out)) continue;
    if (!binary || !(is_scalar(in) || is_suffix(in, out))) return false;
  }
  return true;
}

// Replaces the members (ascending node ids, the last one the root) by one
// fused node in the root's slot; false when the kernel cannot take the group.
bool fuse_group(ir::Graph& g, const std::vector<ir::NodeId>& members) {
  const ir::NodeId root = members.back();
  auto body = std::make_shared<ir::Graph>();
  body->name = "fused " + g.node(root).name;
  body->opsets = g.opsets;
  std::map<ir::ValueId, ir::ValueId> body_value;
  auto copy_value = [&](ir::ValueId id) {
    auto [it, added] = body_value.emplace(id, ir::kNoValue);
    if (added) {
      const ir::Value& v = g.value(id);
      it->second = body->add_value(v.name);
      ir::Value& b = body->value(it->second);
      b.dtype = v.dtype;
      b.has_shape = v.has_shape;
      b.shape = v.shape;
    }
    return it->second;
  };
  std::vector<ir::ValueId> produced;
  for (ir::NodeId m : members) produced.push_back(g.node(m).outputs[0]);
  auto is_produced = [&](ir::ValueId id) { return std::find(produced.begin(), produced.end(), id) != produced.end(); };

  std::vector<ir::ValueId> external;
  for (ir::NodeId m : members) {
    const ir::Node& node = g.node(m);
    ir::Node copy;
    copy.name = node.name;
    copy.op_type = node.op_type;
    copy.domain = node.domain;
    copy.opset = node.opset;
    copy.attributes = node.attributes;
    for (ir::ValueId id : node.inputs) {
      if (!is_produced(id) && std::find(external.begin(), external.end(), id) == external.end()) {
        external.push_back(id);
        body->inputs.push_back(copy_value(id));
        body->value(body->inputs.back()).is_graph_input = true;
      }
      copy.inputs.push_back(copy_value(id));
    }
    copy.outputs.push_back(copy_value(node.outputs[0]));
    body->nodes.push_back(std::move(copy));
  }
  body->outputs.push_back(body_value.at(g.node(root).outputs[0]));
  body->value(body->outputs[0]).is_graph_output = true;
  if (!body->rebuild_links().is_ok()) return false;

  ir::Node fused;
  fused.name = g.node(root).name.empty() ? "fused" : g.node(root).name + "/fused";
  fused.op_type = std::string(kernels::kFusedElementwiseOp);
  fused.domain = std::string(kernels::kEmberDomain);
  fused.opset = 1;
  fused.inputs = external;
  fused.outputs = g.node(root).outputs;
  ir::Attribute attr;
  attr.name = "body";
  attr.type = ir::AttrType::kGraph;
  attr.g = body;
  fused.attributes.push_back(std::move(attr));

  std::vector<DType> dtypes;
  std::vector<const Tensor*> constants;
  for (ir::ValueId id : external) {
    dtypes.push_back(g.value(id).dtype);
    constants.push_back(nullptr);
  }
  kernels::KernelInit init{fused, dtypes, constants, nullptr, &g};
  if (!kernels::create_kernel(init).is_ok()) return false;  // e.g. too many inputs or temporaries

  for (ir::NodeId m : members) g.node(m).removed = true;
  g.node(root) = std::move(fused);
  return true;
}

}  // namespace

size_t fuse_elementwise(ir::Graph& g) {
  const size_t n = g.nodes.size();
  std::vector<int> group(n, -1);
  std::vector<std::vector<ir::NodeId>> groups;  // members, root first
  for (size_t k = n; k-- > 0;) {
    const ir::Node& node = g.nodes[k];
    if (node.removed || !can_fuse(g, node)) continue;
    const ir::Value& out = g.value(node.outputs[0]);
    int joined = -1;
    if (!out.is_graph_output && !out.consumers.empty()) {
      const int candidate = group[static_cast<size_t>(out.consumers[0])];
      bool all_inside = candidate >= 0;
      for (ir::NodeId c : out.consumers) all_inside = all_inside && group[static_cast<size_t>(c)] == candidate;
      if (all_inside && groups[static_cast<size_t>(candidate)].size() < kMaxGroupNodes &&
          same_shape(out, g.value(g.node(groups[static_cast<size_t>(candidate)][0]).outputs[0]))) {
        joined = candidate;
      }
    }
    if (joined < 0) {
      joined = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    group[k] = joined;
    groups[static_cast<size_t>(joined)].push_back(static_cast<ir::NodeId>(k));
  }
  size_t fused = 0;
  for (std::vector<ir::NodeId>& members : groups) {
    if (members.size() < 2) continue;
    std::reverse(members.begin(), members.end());
    if (fuse_group(g, members)) fused += members.size();
  }
  if (fused) {
    g.compact();
  }
  return fused;
}

}  // namespace ember::runtime
