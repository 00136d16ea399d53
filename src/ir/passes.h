#pragma once
// Graph-level passes that need no kernels. Constant folding lives in runtime/
// because it evaluates nodes with kernels.
#include "ir/graph.h"

namespace ember::ir {

// Removes nodes none of whose outputs reach a graph output (or an enclosing
// graph, for subgraphs). Returns the number of nodes removed.
size_t eliminate_dead_nodes(Graph& g);

}  // namespace ember::ir
