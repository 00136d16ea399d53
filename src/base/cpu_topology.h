#pragma once
// Logical CPUs grouped by physical core and NUMA node, from Linux sysfs.
#include <string>
#include <vector>

namespace ember {

struct LogicalCpu {
  int id = 0;
  int core = 0;     // physical core: (package, core_id) numbered densely
  int package = 0;
  int numa_node = 0;
};

struct CpuTopology {
  std::vector<LogicalCpu> cpus;  // online CPUs this process may run on
  int physical_cores = 0;
  int numa_nodes = 0;

  // One logical CPU per physical core first, then SMT siblings: the order in
  // which a thread pool takes CPUs.
  std::vector<int> cpu_order() const;
  std::string describe() const;
};

// Read once. `sysfs_root` lets tests point at a fake tree.
const CpuTopology& cpu_topology();
CpuTopology read_cpu_topology(const std::string& sysfs_root);

}  // namespace ember
