#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "base/cpu_features.h"
#include "base/cpu_topology.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

TEST(CpuFeatures, ImpliedFeaturesAreConsistent) {
  const CpuFeatures& f = cpu_features();
  EXPECT_FALSE(f.vendor.empty());
  if (f.avx2 || f.fma || f.f16c) EXPECT_TRUE(f.avx);
  if (f.avx512bw || f.avx512vl || f.avx512dq || f.avx512vnni || f.avx512bf16) EXPECT_TRUE(f.avx512f);
  if (f.avx512f) EXPECT_TRUE(f.avx);
  EXPECT_EQ(&f, &cpu_features());  // detected once
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(CpuTopology, OneCpuPerCoreBeforeSmtSiblings) {
  // 4 logical CPUs on 2 cores, siblings numbered next to each other (cpu0/cpu1
  // share core 0): the pool must take cpu0 and cpu2 before any sibling.
  fs::path root = fs::temp_directory_path() / ("ember_topology_" + std::to_string(::getpid()));
  fs::remove_all(root);
  write(root / "devices/system/cpu/online", "0-3\n");
  int core_of[] = {0, 0, 1, 1};
  for (int cpu = 0; cpu < 4; ++cpu) {
    fs::path dir = root / ("devices/system/cpu/cpu" + std::to_string(cpu));
    write(dir / "topology/physical_package_id", "0\n");
    write(dir / "topology/core_id", std::to_string(core_of[cpu]) + "\n");
    fs::create_directories(dir / "node0");
  }
  CpuTopology t = read_cpu_topology(root.string());
  fs::remove_all(root);
  ASSERT_EQ(t.cpus.size(), 4u);
  EXPECT_EQ(t.physical_cores, 2);
  EXPECT_EQ(t.numa_nodes, 1);
  EXPECT_EQ(t.cpu_order(), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(t.cpus[1].core, t.cpus[0].core);
}

TEST(CpuTopology, ThisMachineHasAtLeastOneCore) {
  const CpuTopology& t = cpu_topology();
  EXPECT_GE(t.physical_cores, 1);
  EXPECT_GE(t.cpus.size(), static_cast<size_t>(t.physical_cores));
}

}  // namespace
}  // namespace ember
