#pragma once
// Single claimed nodes as ORT kernels (OrtEp::GetKernelRegistry, ORT >= 1.24).
// ORT runs a kernel like one of its own, without the fused-node machinery a
// compiled partition goes through, which costs it ~120 ns more per node and
// Run (docs/benchmarks/2026-12-01-ort-ep.md); a group of two or more nodes
// still becomes one CompiledPartition, where that cost is paid once.
//
// GetCapability keeps each single claimed node as an imported one-node graph
// (ClaimedNodes); ORT then creates the node's kernel from the registry, and the
// kernel finds its graph by op and output names (unique in an ONNX model),
// copies the constant inputs ORT reports, and runs it as an EmberNode.
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "ort_ep/ort_api.h"

namespace ember::ort_ep {

class ClaimedNodes {
 public:
  // Keeps a one-node graph (a node GetCapability claims alone); claiming the
  // same node again (ORT may ask about a graph more than once) replaces it.
  void add(std::shared_ptr<const ir::Graph> graph);
  // A copy of the kept graph whose node has this domain, op and output names, or null.
  std::shared_ptr<ir::Graph> find(std::string_view domain, std::string_view op,
                                  const std::vector<std::string>& outputs) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const ir::Graph>> graphs_;
};

// What the registry's kernel factory reads; owned by the EP, which outlives its kernels.
struct KernelSource {
  ClaimedNodes claimed;
  int num_threads = 0;
};

// A kernel registry (released with OrtEpApi::ReleaseKernelRegistry) with one
// kernel definition per domain and op of Ember's op registry, for every
// since-version and type: GetCapability has already decided with the op
// registry which nodes Ember runs.
Result<OrtKernelRegistry*> create_kernel_registry(KernelSource* source);

}  // namespace ember::ort_ep
