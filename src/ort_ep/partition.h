#pragma once
// Groups supported nodes into partitions that ONNX Runtime can fuse: each group
// is convex (no path leaves it and comes back into it, through any node outside
// it, other groups included) and the groups contracted to single nodes still
// form a DAG (two convex groups may still feed each other: a -> b and b' -> a'
// with {a, a'} and {b, b'} as groups). ORT drops every claim for a graph when one
// group is not convex, and fails the session on a cycle between fused nodes.
#include <vector>

namespace ember::ort_ep {

// Nodes 0..n-1 in topological order; preds[i]: the nodes producing node i's
// inputs. Returns the groups, each in ascending (topological) order.
//
// Kahn's topological sort run in waves, as ORT forms its own partitions: a wave
// takes every ready supported node into its group, and every ready unsupported
// node that reads none of the group's outputs; unsupported readers of the group
// wait for the next wave. So each group lies in one wave, a wave is a run of
// one topological order (edges between groups go from earlier to later waves),
// and a path out of a group into an unsupported node cannot come back within
// the wave.
std::vector<std::vector<int>> convex_groups(const std::vector<std::vector<int>>& preds,
                                            const std::vector<bool>& supported);

}  // namespace ember::ort_ep
