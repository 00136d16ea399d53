#include "runtime/optimizer.h"

#include <algorithm>
#include <string_view>

#include "base/isa.h"
#include "ir/passes.h"
#include "kernels/registry.h"

namespace ember::runtime {
namespace {

// Folding may add at most this many bytes of constants beyond those it frees:
// a small graph must not become a large file-sized constant, while a chain
// over one weight (Transpose, Cast, Reshape of it) is computed once at load
// whatever its size, its result replacing the inputs only it read.
constexpr size_t kMaxFoldedBytes = size_t{16} << 20;

bool is_foldable_constant(const ir::Value& v) { return v.constant.has_value() && !v.is_graph_input; }

bool is_nondeterministic(const ir::Node& node) {
  std::string_view op = node.op_type;
  // Dropout draws its mask when its training_mode input (opset 12) is true.
  return op.starts_with("Random") || op == "Multinomial" || op == "Bernoulli" ||
         (op == "Dropout" && node.inputs.size() > 2 && node.inputs[2] != ir::kNoValue);
}

// Bytes of the node's constant inputs that no other node or graph output reads.
double freed_by_folding(const ir::Graph& g, const ir::Node& node) {
  double bytes = 0;
  for (ir::ValueId id : node.inputs) {
    if (id == ir::kNoValue) continue;
    const ir::Value& v = g.value(id);
    const bool only_here = !v.is_graph_output && std::all_of(v.consumers.begin(), v.consumers.end(), [&](ir::NodeId c) {
      return &g.node(c) == &node;
    });
    if (only_here) bytes += static_cast<double>(v.constant->nbytes());
  }
  return bytes;
}

// Infers the outputs first so a huge constant is never allocated.
bool fits_folding_budget(const kernels::OpKernel& kernel, std::span<const Tensor* const> inputs, size_t num_outputs,
                         double freed_bytes) {
  std::vector<Tensor> outputs(num_outputs);
  std::vector<Tensor*> ptrs;
  for (Tensor& t : outputs) ptrs.push_back(&t);
  kernels::KernelContext ctx(inputs, ptrs);
  if (!kernel.infer_outputs(ctx).is_ok()) return false;
  double bytes = 0;
  for (const Tensor& t : outputs) {
    double n = 1;
    for (int64_t d : t.shape()) n *= static_cast<double>(d);
    bytes += n * static_cast<double>(dtype_size(t.dtype()));
  }
  return bytes <= static_cast<double>(kMaxFoldedBytes) + freed_bytes;
}

size_t fold_constants(ir::Graph& g) {
  size_t folded = 0;
  std::vector<DType> dtypes;
  std::vector<const Tensor*> inputs;
  for (ir::Node& node : g.nodes) {
    if (node.removed || node.inputs.empty() || is_nondeterministic(node)) continue;
    dtypes.clear();
    inputs.clear();
    bool all_constant = true;
    for (ir::ValueId id : node.inputs) {
      if (id == ir::kNoValue) {
        dtypes.push_back(DType::kUndefined);
        inputs.push_back(nullptr);
        continue;
      }
      const ir::Value& v = g.value(id);
      all_constant = all_constant && is_foldable_constant(v);
      if (!all_constant) break;
      dtypes.push_back(v.constant->dtype());
      inputs.push_back(&*v.constant);
    }
    if (!all_constant) continue;
    kernels::KernelInit init{node, dtypes, inputs, nullptr};
    auto kernel = kernels::create_kernel(init);
    // A node that cannot be built or evaluated here is left for the session to report.
    if (!kernel.is_ok() || !fits_folding_budget(**kernel, inputs, node.outputs.size(), freed_by_folding(g, node))) {
      continue;
    }
    auto outputs = kernels::evaluate(**kernel, inputs, node.outputs.size());
    if (!outputs.is_ok()) continue;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] != ir::kNoValue) g.value(node.outputs[i]).constant = std::move((*outputs)[i]);
    }
    node.removed = true;
    ++folded;
  }
  if (folded) g.compact();
  return folded;
}

}  // namespace

OptimizeStats optimize_graph(ir::Graph& g) {
  OptimizeStats stats;
  for (ir::Node& node : g.nodes) {
    for (ir::Attribute& a : node.attributes) {
      if (a.g) {
        OptimizeStats sub = optimize_graph(*a.g);
        stats.folded += sub.folded;
        stats.dead_removed += sub.dead_removed;
        stats.fused += sub.fused;
      }
      for (auto& sg : a.graphs) {
        OptimizeStats sub = optimize_graph(*sg);
        stats.folded += sub.folded;
        stats.dead_removed += sub.dead_removed;
        stats.fused += sub.fused;
      }
    }
  }
  stats.folded += fold_constants(g);
  stats.fused += gather_through_transpose(g);
  stats.dead_removed += ir::eliminate_dead_nodes(g);
  if (!reference_mode()) {
    // Before elementwise fusion, which would otherwise absorb the norms' Pow,
    // Add, Sqrt and Mul, the bias Adds and the activations.
    stats.fused += fuse_norms(g);
    stats.fused += fuse_matmul_nbits_bias(g);
    stats.fused += fuse_matmul(g);
    stats.fused += fuse_elementwise(g);
  }
  return stats;
}

}  // namespace ember::runtime
