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
  // What one Compute at a time needs: views of ORT's tensors and the prepared
  // run for the inputs' current dtypes and shapes. A partition's Computes use
  // its first runner; a Run of the same session that overlaps it takes a spare.
  struct Runner {
    std::vector<Tensor> inputs;
    std::vector<const Tensor*> input_ptrs;
    std::vector<runtime::PlannedOutput> planned;
    std::vector<Tensor> outputs;
    std::vector<Tensor*> output_ptrs;
    std::vector<Tensor> owned_outputs;  // outputs whose shape is known only after running
    // Made for the inputs' current dtypes and shapes; null after an input changed.
    std::unique_ptr<runtime::PreparedRun> prepared;
    bool dynamic = false;  // some output's shape is known only after running
  };

  CompiledPartition();
  std::unique_ptr<Runner> make_runner() const;
  Status compute_with(Runner& r, OrtKernelContext* ctx);
  Status compute_with_spare(OrtKernelContext* ctx);
  Result<bool> bind_inputs(Runner& r, OrtKernelContext* ctx);
  Status prepare(Runner& r);
  Status run_and_copy(Runner& r, OrtKernelContext* ctx);

  std::unique_ptr<runtime::Session> session_;  // declared first: outlives the runners' prepared runs
  uint64_t node_count_ = 0;
  std::mutex first_mutex_;
  std::unique_ptr<Runner> first_;
  std::mutex spares_mutex_;
  std::vector<std::unique_ptr<Runner>> spares_;
};

}  // namespace ember::ort_ep
