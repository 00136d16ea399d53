#include "ir/passes.h"

namespace ember::ir {

size_t eliminate_dead_nodes(Graph& g) {
  std::vector<bool> live_value(g.values.size(), false);
  for (ValueId id : g.outputs) live_value[static_cast<size_t>(id)] = true;
  size_t removed = 0;
  // Nodes are in topological order, so one reverse sweep sees every reader first.
  for (size_t n = g.nodes.size(); n-- > 0;) {
    Node& node = g.nodes[n];
    if (node.removed) continue;
    bool live = false;
    for (ValueId out : node.outputs) live = live || (out != kNoValue && live_value[static_cast<size_t>(out)]);
    if (!live) {
      node.removed = true;
      ++removed;
      continue;
    }
    for (ValueId in : node.inputs) {
      if (in != kNoValue) live_value[static_cast<size_t>(in)] = true;
    }
  }
  if (removed) g.compact();
  return removed;
}

}  // namespace ember::ir
