#pragma once
// Executor: runs one graph (the model, or a subgraph of an If) over plans cached
// per input-shape signature. Thread-safe: plans are shared read-only; each run
// takes a RunState (arena + value table) from one pool shared by all plans, so
// runs one after another use one arena whatever their shapes (a chunked
// prefill or a decode loop makes a new plan per run). A Prepared run holds a
// plan and a state for one signature, for callers that repeat it.
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "ir/graph.h"
#include "kernels/kernel.h"
#include "runtime/executor_stats.h"
#include "runtime/load_progress.h"
#include "runtime/plan.h"

namespace ember::runtime {

struct PlannedOutput;

class Executor : public kernels::SubgraphCompiler {
  struct RunState;
  struct PlanEntry;

 public:
  // One input signature's plan and a run state of its own, held between runs:
  // a run takes no lock and looks nothing up (the ORT plugin EP runs a
  // partition's fixed shapes this way, where the plan lookup and the state pool
  // were most of a small node's cost). One run at a time per Prepared; the
  // executor must outlive it. The state returns to the pool when it is destroyed.
  class Prepared {
   public:
    ~Prepared();
    Prepared(const Prepared&) = delete;
    Prepared& operator=(const Prepared&) = delete;
    // As Executor::run / run_bound, for inputs of the prepared dtypes and shapes
    // (an error otherwise).
    Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs);
    Status run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs);

   private:
    friend class Executor;
    Prepared(const Executor& executor, std::shared_ptr<PlanEntry> entry, std::unique_ptr<RunState> state);
    Status check(std::span<const Tensor* const> inputs) const;
    // A plan of one static step reading only inputs and constants and writing
    // only graph outputs (a single-node session: the ORT plugin EP's nodes
    // claimed alone) runs its kernel straight on the caller's tensors, without
    // the value table. False when the outputs are not all bound, valid and
    // apart from the inputs (the general path then runs, or names the error).
    bool run_direct(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs, Status& st);

    const Executor& executor_;
    std::shared_ptr<PlanEntry> entry_;
    std::unique_ptr<RunState> state_;
    bool direct_ = false;
    // Per input and output slot of the step: the executor input or graph output
    // it is (-1: omitted, or the constant in step_in_).
    std::vector<int32_t> in_slot_, out_slot_;
    std::vector<const Tensor*> step_in_;
    std::vector<Tensor*> step_out_;
    std::vector<const Tensor*> planned_out_;  // per output slot: its dtype and shape in the plan
  };

  // `inputs`: the values fed by the caller, in order (graph inputs, or a
  // subgraph's outer references). Creates every kernel whose input dtypes are
  // known now; the rest are created when a run first sees their dtypes.
  // `owned`: the same graph, mutable, when the executor is its only user (a
  // session's graph): then a constant every reader prepacked at creation
  // (OpKernel::prepacked_input) loses its data right after the last reader is
  // created, and its file pages leave resident memory, so peak memory stays
  // near the weights' size instead of twice it. `progress` (may be empty)
  // hears the bytes of constant inputs whose kernels exist, after each node.
  static Result<std::unique_ptr<Executor>> create(std::shared_ptr<const ir::Graph> graph,
                                                  std::vector<ir::ValueId> inputs, ir::Graph* owned = nullptr,
                                                  const LoadProgress& progress = {});
  ~Executor() override;

  // `inputs[i]` may be nullptr for a value with a default. Outputs in graph order.
  Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const;
  // Writes output k into the caller's `outputs[k]` (which must have the dtype
  // and shape this run computes), or computes and drops it when null. A bound
  // output may share its bytes with an input when no other node reads the input's
  // data and the output's kernel writes the output in place over it
  // (OpKernel::may_share_buffer: GroupQueryAttention's present/past KV); the
  // kernel then sees both. Any other overlap is an error.
  Status run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) const;

  // Plans for `inputs` (or finds the cached plan), fills in the dtype and shape
  // of each graph output, and holds that plan and a run state.
  Result<std::unique_ptr<Prepared>> prepare(std::span<const Tensor* const> inputs,
                                            std::span<PlannedOutput> outputs) const;

  Result<std::unique_ptr<kernels::CompiledSubgraph>> compile(std::shared_ptr<const ir::Graph> graph) override;

  const ir::Graph& graph() const { return *graph_; }
  ExecutorStats stats() const;

 private:
  Executor() = default;

  // The kernel of node `n`, created on first use; an error if it was built for other dtypes.
  Result<const kernels::OpKernel*> kernel(ir::NodeId n, std::span<const DType> input_dtypes) const;
  Result<const kernels::OpKernel*> create_kernel(ir::NodeId n, std::span<const DType> input_dtypes) const;
  // Drops the data of node n's constant inputs that every reader has prepacked.
  void release_prepacked_inputs(ir::Graph& owned, ir::NodeId n);
  Result<std::shared_ptr<PlanEntry>> find_or_build_plan(std::span<const Tensor* const> inputs) const;
  Status check_counts(std::span<const Tensor* const> inputs, size_t num_outputs) const;
  // The plan's output dtypes and shapes.
  void planned_outputs(const Plan& plan, std::span<PlannedOutput> outputs) const;
  // `owned` receives the outputs (run()), else `bound` names their buffers (run_bound()).
  Status run_impl(std::span<const Tensor* const> inputs, std::vector<Tensor>* owned,
                  std::span<Tensor* const> bound) const;
  // One run of `plan` in `state` (made for it).
  Status execute(const Plan& plan, std::span<const Tensor* const> inputs, std::vector<Tensor>* owned,
                 std::span<Tensor* const> bound, RunState& state) const;
  Status bind_outputs(const Plan& plan, std::span<const Tensor* const> inputs, std::span<Tensor* const> bound,
                      RunState& state) const;
  Status check_shared_buffer(ir::ValueId output, const void* data, size_t nbytes,
                             std::span<const Tensor* const> inputs) const;
  Status copy_bound_outputs(const Plan& plan, std::span<Tensor* const> bound, RunState& state) const;
  void give_outputs(const Plan& plan, std::vector<Tensor>& outputs, RunState& state) const;
  std::unique_ptr<RunState> acquire_state(const PlanEntry& entry) const;
  void release_state(std::unique_ptr<RunState> state) const;
  Status run_step(const Plan& plan, const Step& step, RunState& state) const;
  Status run_dynamic_step(const Plan& plan, const Step& step, RunState& state) const;

  std::shared_ptr<const ir::Graph> graph_;
  std::vector<ir::ValueId> inputs_;
  // Kernels are created once; slots filled late are published under mutex_.
  mutable std::vector<std::unique_ptr<kernels::OpKernel>> owned_kernels_;
  mutable std::vector<std::atomic<const kernels::OpKernel*>> kernels_;
  mutable std::vector<std::vector<DType>> kernel_dtypes_;  // the input dtypes each kernel was built for
  mutable std::mutex kernel_mutex_;
  size_t released_bytes_ = 0;  // constant data dropped after prepacking
  mutable std::mutex mutex_;  // plans_ and free_states_
  mutable std::vector<std::shared_ptr<PlanEntry>> plans_;  // most recent first
  mutable std::vector<std::unique_ptr<RunState>> free_states_;
  mutable uint64_t next_plan_id_ = 0;
  mutable PlanScratch plan_scratch_;
  mutable size_t plans_built_ = 0;
  mutable size_t plans_rebuilt_ = 0;
  mutable size_t planning_ns_ = 0;
};

}  // namespace ember::runtime
