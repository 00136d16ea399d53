#pragma once
// The Ember side of one ORT node that Ember runs: a fused partition
// (compiled_partition.h) or a single claimed node (node_kernel.h). An Ember
// Session over the node's ONNX nodes (constant initializers copied in and
// prepacked once), run with ORT's tensors as Ember views and straight into
// ORT's outputs.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "ort_ep/ort_api.h"
#include "runtime/session.h"

namespace ember::ort_ep {

// ONNX nodes run by Ember since the last reset.
uint64_t executed_node_count();
void reset_executed_node_count();

class EmberNode {
 public:
  // `graph`'s inputs are the KernelContext's inputs `context_inputs` (same
  // order), its outputs the context's outputs `context_outputs`; a run counts
  // `node_count` ONNX nodes.
  static Result<std::unique_ptr<EmberNode>> create(std::shared_ptr<ir::Graph> graph, std::vector<size_t> context_inputs,
                                                   std::vector<size_t> context_outputs, uint64_t node_count,
                                                   int num_threads);

  Status compute(OrtKernelContext* ctx);

 private:
  // What one Compute at a time needs: views of ORT's tensors and the prepared
  // run for the inputs' current dtypes and shapes. Computes use the first
  // runner; a Run of the same session that overlaps one takes a spare.
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

  EmberNode() = default;
  std::unique_ptr<Runner> make_runner() const;
  Status compute_with(Runner& r, OrtKernelContext* ctx);
  Status compute_with_spare(OrtKernelContext* ctx);
  Result<bool> bind_inputs(Runner& r, OrtKernelContext* ctx);
  Status prepare(Runner& r);
  Status run_and_copy(Runner& r, OrtKernelContext* ctx);

  std::unique_ptr<runtime::Session> session_;  // declared first: outlives the runners' prepared runs
  std::vector<size_t> context_inputs_, context_outputs_;
  uint64_t node_count_ = 0;
  std::mutex first_mutex_;
  std::unique_ptr<Runner> first_;
  std::mutex spares_mutex_;
  std::vector<std::unique_ptr<Runner>> spares_;
};

}  // namespace ember::ort_ep
