#pragma once
// One claimed group of nodes, compiled: ORT runs it as a fused node through the
// OrtNodeComputeInfo callbacks, and Ember as one EmberNode.
#include <memory>

#include "base/status.h"
#include "ort_ep/ember_node.h"
#include "ort_ep/ort_api.h"

namespace ember::ort_ep {

class CompiledPartition : public OrtNodeComputeInfo {
 public:
  // `graph`: the group's nodes (valid only during Compile); `fused`: the node
  // standing for them, whose inputs and outputs are the KernelContext's.
  static Result<std::unique_ptr<CompiledPartition>> compile(const OrtGraph* graph, const OrtNode* fused,
                                                            int num_threads);

  Status compute(OrtKernelContext* ctx) { return node_->compute(ctx); }

 private:
  CompiledPartition();

  std::unique_ptr<EmberNode> node_;
};

}  // namespace ember::ort_ep
