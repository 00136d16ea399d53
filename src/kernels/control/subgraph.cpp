// What If, Loop, Scan and SequenceMap share: binding a subgraph attribute to the
// node's outer values, and slicing / stacking along an axis.
#include <cstring>

#include "kernels/control/control_ops.h"

namespace ember::kernels::control_ops {

Status BoundSubgraph::run(const KernelContext& ctx, std::vector<const Tensor*>& inputs,
                          std::vector<Tensor>& outputs) const {
  const size_t own = inputs.size();
  for (size_t i : outer_input) inputs.push_back(&ctx.input(i));
  Status st = compiled->run(inputs, outputs);
  inputs.resize(own);
  if (st.is_ok() && outputs.size() != graph->outputs.size()) {
    return invalid_model("the subgraph produced {} outputs, it declares {}", outputs.size(), graph->outputs.size());
  }
  return st;
}

Result<BoundSubgraph> bind_subgraph(const KernelInit& init, std::string_view attr, int num_inputs) {
  ir::AttrReader attrs(init.node);
  std::shared_ptr<ir::Graph> g = attrs.get_graph(attr);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (!g) return invalid_model("attribute '{}' (a graph) is required", attr);
  if (!init.subgraphs || !init.graph) return not_implemented("{} needs a runtime that compiles subgraphs", init.node.op_type);
  if (num_inputs >= 0 && g->inputs.size() != static_cast<size_t>(num_inputs)) {
    return invalid_model("{} must take {} inputs, it declares {}", attr, num_inputs, g->inputs.size());
  }
  BoundSubgraph b;
  const ir::Node& node = init.node;
  for (ir::ValueId ref : g->outer_refs) {
    const std::string& name = g->value(ref).name;
    size_t i = node.num_explicit_inputs;
    while (i < node.inputs.size() && init.graph->value(node.inputs[i]).name != name) ++i;
    if (i == node.inputs.size()) return invalid_model("{} reads '{}', which the enclosing graph does not define", attr, name);
    b.outer_input.push_back(i);
  }
  b.graph = g;
  auto compiled = init.subgraphs->compile(g);
  if (!compiled.is_ok()) return compiled.status().with_context(std::string(attr) + ": ");
  b.compiled = std::move(compiled).value();
  return b;
}

Tensor slice_along(const Tensor& t, size_t axis, int64_t index) {
  Shape shape;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < static_cast<size_t>(t.rank()); ++d) {
    if (d < axis) outer *= t.dim(static_cast<int64_t>(d));
    if (d > axis) inner *= t.dim(static_cast<int64_t>(d));
    if (d != axis) shape.push_back(t.dim(static_cast<int64_t>(d)));
  }
  Tensor out = Tensor::allocate_uninitialized(t.dtype(), shape);
  const size_t row = static_cast<size_t>(inner) * dtype_size(t.dtype());
  const int64_t n = t.dim(static_cast<int64_t>(axis));
  const auto* src = static_cast<const char*>(t.data());
  auto* dst = static_cast<char*>(out.data());
  for (int64_t o = 0; o < outer && row > 0; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * row, src + (static_cast<size_t>(o * n + index)) * row, row);
  }
  return out;
}

Tensor stack_along(const std::vector<Tensor>& parts, size_t axis, DType dtype, const Shape& part_shape) {
  Shape shape;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < part_shape.size(); ++d) {
    if (d == axis) shape.push_back(static_cast<int64_t>(parts.size()));
    shape.push_back(part_shape[d]);
    (d < axis ? outer : inner) *= part_shape[d];
  }
  if (axis == part_shape.size()) shape.push_back(static_cast<int64_t>(parts.size()));
  Tensor out = Tensor::allocate_uninitialized(dtype, shape);
  const size_t row = static_cast<size_t>(inner) * dtype_size(dtype);
  const size_t n = parts.size();
  auto* dst = static_cast<char*>(out.data());
  for (size_t p = 0; p < n && row > 0; ++p) {
    const auto* src = static_cast<const char*>(parts[p].data());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + (static_cast<size_t>(o) * n + p) * row, src + static_cast<size_t>(o) * row, row);
    }
  }
  return out;
}

}  // namespace ember::kernels::control_ops
