#pragma once
// Session-time graph optimization: constant folding (evaluating nodes whose
// inputs are all constants with their kernels), dead-node elimination,
// norm fusions, MatMul(NBits) + bias [+ activation] fusion and elementwise fusion.
#include "base/status.h"
#include "ir/graph.h"

namespace ember::runtime {

struct OptimizeStats {
  size_t folded = 0;
  size_t dead_removed = 0;
  size_t fused = 0;  // nodes replaced by fused nodes
};

// Replaces MatMul -> Add [-> activation] chains by FusedMatMul nodes; returns
// the number of nodes fused. `g` must be topologically sorted with current links.
size_t fuse_matmul(ir::Graph& g);

// Folds a constant bias Add after MatMulNBits into its bias input; returns
// the number of nodes fused. `g` must be topologically sorted with current links.
size_t fuse_matmul_nbits_bias(ir::Graph& g);

// Replaces RMS normalization written in primitive ops by
// SimplifiedLayerNormalization, then Add -> SimplifiedLayerNormalization by
// SkipSimplifiedLayerNormalization; returns the number of nodes fused. `g`
// must be topologically sorted with current links.
size_t fuse_norms(ir::Graph& g);

// Gather(Transpose(constant), indices) -> Transpose(Gather(constant, indices)):
// reads the picked rows from the constant in its own layout; returns the
// number of Gathers rewritten. `g` must be topologically sorted with current links.
size_t gather_through_transpose(ir::Graph& g);

// Replaces groups of elementwise nodes by FusedElementwise nodes; returns the
// number of nodes fused. `g` must be topologically sorted with current links.
size_t fuse_elementwise(ir::Graph& g);

// Optimizes `g` and, recursively, its subgraphs.
OptimizeStats optimize_graph(ir::Graph& g);

}  // namespace ember::runtime
