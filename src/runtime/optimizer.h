#pragma once
// Session-time graph optimization: constant folding (evaluating nodes whose
// inputs are all constants with their kernels) and dead-node elimination.
#include "base/status.h"
#include "ir/graph.h"

namespace ember::runtime {

struct OptimizeStats {
  size_t folded = 0;
  size_t dead_removed = 0;
};

// Optimizes `g` and, recursively, its subgraphs.
OptimizeStats optimize_graph(ir::Graph& g);

}  // namespace ember::runtime
