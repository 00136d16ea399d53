#include "base/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

namespace ember {
namespace {

int read_int_file(const std::filesystem::path& p, int fallback) {
  std::ifstream f(p);
  int v;
  return (f >> v) ? v : fallback;
}

// Parses a sysfs CPU list such as "0-3,8,10-11".
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        if (!part.empty() && part != "\n") out.push_back(std::stoi(part));
      } else {
        int lo = std::stoi(part.substr(0, dash)), hi = std::stoi(part.substr(dash + 1));
        for (int c = lo; c <= hi; ++c) out.push_back(c);
      }
    } catch (const std::exception&) {
      return {};
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace

CpuTopology read_cpu_topology(const std::string& sysfs_root) {
  namespace fs = std::filesystem;
  fs::path root(sysfs_root);
  CpuTopology topo;
  std::string online;
  std::getline(std::ifstream(root / "devices/system/cpu/online"), online);
  std::vector<int> ids = parse_cpu_list(online);
  cpu_set_t allowed;
  bool have_affinity = sysfs_root == "/sys" && sched_getaffinity(0, sizeof(allowed), &allowed) == 0;
  std::map<std::pair<int, int>, int> core_index;
  std::set<int> nodes;
  for (int id : ids) {
    if (have_affinity && !CPU_ISSET(id, &allowed)) continue;
    fs::path cpu = root / fmt::format("devices/system/cpu/cpu{}", id);
    LogicalCpu c;
    c.id = id;
    c.package = read_int_file(cpu / "topology/physical_package_id", 0);
    int core_id = read_int_file(cpu / "topology/core_id", id);
    auto [it, _] = core_index.emplace(std::pair{c.package, core_id}, static_cast<int>(core_index.size()));
    c.core = it->second;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(cpu, ec)) {
      std::string name = entry.path().filename().string();
      if (name.starts_with("node")) c.numa_node = std::atoi(name.c_str() + 4);
    }
    nodes.insert(c.numa_node);
    topo.cpus.push_back(c);
  }
  if (topo.cpus.empty()) {  // no sysfs: one core per hardware thread
    int n = std::max(1, have_affinity ? CPU_COUNT(&allowed) : static_cast<int>(std::thread::hardware_concurrency()));
    for (int i = 0; i < n; ++i) topo.cpus.push_back({i, i, 0, 0});
    core_index.clear();
    for (int i = 0; i < n; ++i) core_index[{0, i}] = i;
    nodes = {0};
  }
  topo.physical_cores = static_cast<int>(core_index.size());
  topo.numa_nodes = static_cast<int>(nodes.size());
  return topo;
}

std::vector<int> CpuTopology::cpu_order() const {
  std::vector<int> order;
  std::set<int> seen_cores;
  for (const LogicalCpu& c : cpus) {
    if (seen_cores.insert(c.core).second) order.push_back(c.id);
  }
  for (const LogicalCpu& c : cpus) {
    if (std::find(order.begin(), order.end(), c.id) == order.end()) order.push_back(c.id);
  }
  return order;
}

std::string CpuTopology::describe() const {
  return fmt::format("{} logical CPUs, {} physical cores, {} NUMA nodes", cpus.size(), physical_cores, numa_nodes);
}

const CpuTopology& cpu_topology() {
  static const CpuTopology topo = read_cpu_topology("/sys");
  return topo;
}

}  // namespace ember
