#pragma once
// One claimed group of nodes, compiled: an Ember Session over the group's nodes
// (constant initializers copied in and prepacked once), run by ONNX Runtime
// through the OrtNodeComputeInfo callbacks with ORT's tensors as Ember views.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "ort_ep/ort_api.h"
#include "runtime/session.h"

namespace ember::ort_ep {

// ONNX nodes of claimed partitions run by Ember since the last reset.
uint64_t executed_node_count();
void reset_executed_node_count();

class CompiledPartition : public OrtNodeComputeInfo {
 public:
  // `graph`: the group's nodes (valid only during Compile); `fused`: the node
  // standing for them, whose inputs and outputs are the KernelContext's.
  static Result<std::unique_ptr<CompiledPartition>> compile(const OrtGraph* graph, const OrtNode* fused,
                                                            int num_threads);

  Status compute(OrtKernelContext* ctx);

 private:
  CompiledPartition();
  Status compute_locked(OrtKernelContext* ctx);
  Result<bool> bind_inputs(OrtKernelContext* ctx);
  Status plan_outputs();
  Status run_and_copy(OrtKernelContext* ctx);

  std::unique_ptr<runtime::Session> session_;
  uint64_t node_count_ = 0;
  // Compute() may be called from concurrent Run()s of one session; the views
  // below are reused by every run, so runs of one partition take turns.
  std::mutex mutex_;
  std::vector<Tensor> inputs_;
  std::vector<const Tensor*> input_ptrs_;
  std::vector<runtime::PlannedOutput> planned_;
  std::vector<Tensor> outputs_;
  std::vector<Tensor*> output_ptrs_;
  std::vector<Tensor> owned_outputs_;  // outputs whose shape is known only after running
  // planned_ and outputs_' dtypes and shapes hold for the inputs' current shapes.
  bool planned_valid_ = false;
  bool dynamic_ = false;  // some output's shape is known only after running
};

}  // namespace ember::ort_ep
