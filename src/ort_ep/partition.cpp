#include "ort_ep/partition.h"

#include <algorithm>
#include <deque>

namespace ember::ort_ep {

std::vector<std::vector<int>> convex_groups(const std::vector<std::vector<int>>& preds,
                                            const std::vector<bool>& supported) {
  const size_t n = preds.size();
  std::vector<std::vector<int>> succs(n);
  std::vector<size_t> waiting(n);  // producers of node i not yet taken
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = preds[i].size();
    for (int p : preds[i]) succs[static_cast<size_t>(p)].push_back(static_cast<int>(i));
  }
  std::deque<int> ready, next_wave;
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push_back(static_cast<int>(i));
  }
  // border[i] == wave: node i reads an output of this wave's group.
  std::vector<int> border(n, -1);
  int wave = 0;
  std::vector<std::vector<int>> groups;
  std::vector<int> group;
  auto close_wave = [&] {
    if (!group.empty()) {
      std::sort(group.begin(), group.end());
      groups.push_back(std::move(group));
      group.clear();
    }
    ++wave;
  };
  while (!ready.empty() || !next_wave.empty()) {
    if (ready.empty()) {
      close_wave();
      ready.swap(next_wave);
      continue;
    }
    const int i = ready.front();
    ready.pop_front();
    const bool take = supported[static_cast<size_t>(i)];
    if (!take && border[static_cast<size_t>(i)] == wave) {
      next_wave.push_back(i);
      continue;
    }
    if (take) group.push_back(i);
    for (int s : succs[static_cast<size_t>(i)]) {
      if (take) border[static_cast<size_t>(s)] = wave;
      if (--waiting[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  close_wave();
  return groups;
}

}  // namespace ember::ort_ep
