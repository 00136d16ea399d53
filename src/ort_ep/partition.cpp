#include "ort_ep/partition.h"

#include <algorithm>

namespace ember::ort_ep {

std::vector<std::vector<int>> convex_groups(const std::vector<std::vector<int>>& preds,
                                            const std::vector<bool>& supported) {
  const size_t n = preds.size();
  std::vector<int> group(n, -1);
  // reach[i]: sorted ids of the groups with a member that is i or an ancestor of i.
  std::vector<std::vector<int>> reach(n);
  std::vector<std::vector<int>> groups;
  auto reaches = [&](int node, int g) { return std::binary_search(reach[node].begin(), reach[node].end(), g); };
  for (size_t i = 0; i < n; ++i) {
    std::vector<int>& r = reach[i];
    for (int p : preds[i]) r.insert(r.end(), reach[p].begin(), reach[p].end());
    if (supported[i]) {
      // Joining g is convex iff no producer outside g is reached from g: such a
      // producer would be a path g -> outside -> i. Members all precede i, so
      // nothing in g is reached from i.
      int chosen = -1;
      for (int p : preds[i]) {
        const int g = group[p];
        if (g < 0 || g == chosen) continue;
        bool convex = true;
        for (int q : preds[i]) convex = convex && (group[q] == g || !reaches(q, g));
        if (convex) {
          chosen = g;
          break;
        }
      }
      if (chosen < 0) {
        chosen = static_cast<int>(groups.size());
        groups.emplace_back();
      }
      group[i] = chosen;
      groups[static_cast<size_t>(chosen)].push_back(static_cast<int>(i));
      r.push_back(chosen);
    }
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  return groups;
}

}  // namespace ember::ort_ep
