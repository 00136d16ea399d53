#pragma once
// Session-time graph optimization: constant folding (evaluating nodes whose
// inputs are all constants with their kernels), dead-node elimination,
// MatMul + bias + activation fusion and elementwise fusion.
#include "base/status.h"
#include "ir/graph.h"

namespace ember::runtime {

struct OptimizeStats {
  size_t folded = 0;
  size_t dead_removed = 0;
  size_t fused = 0;  // nodes replaced by FusedMatMul and FusedElementwise nodes
};

// Replaces MatMul -> Add [-> activation] chains by FusedMatMul nodes; returns
// the number of nodes fused. `g` must be topologically sorted with current links.
size_t fuse_matmul(ir::Graph& g);

// Replaces groups of elementwise nodes by FusedElementwise nodes; returns the
// number of nodes fused. `g` must be topologically sorted with current links.
size_t fuse_elementwise(ir::Graph& g);

// Optimizes `g` and, recursively, its subgraphs.
OptimizeStats optimize_graph(ir::Graph& g);

}  // namespace ember::runtime
