#pragma once
// Groups supported nodes into convex partitions: no path leaves a group and
// comes back into it (through any node outside the group, other groups
// included). ONNX Runtime drops every claim for a graph when one group is not
// convex, so the groups are built convex rather than checked afterwards.
#include <vector>

namespace ember::ort_ep {

// Nodes 0..n-1 in topological order; preds[i]: the nodes producing node i's
// inputs. Returns the groups, each in topological order. A node joins the group
// of one of its supported producers when that keeps the group convex, else
// starts a group.
std::vector<std::vector<int>> convex_groups(const std::vector<std::vector<int>>& preds,
                                            const std::vector<bool>& supported);

}  // namespace ember::ort_ep
