#pragma once
// A plan: for one set of input shapes, where every value lives and which nodes
// run. Built once per input-shape signature and shared read-only by all runs.
// A plan can be rebuilt in place for another signature: its vectors and
// buffers keep their capacity, so decode steps whose shapes grow by one every
// step replan without touching the heap.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"
#include "kernels/kernel.h"

namespace ember::runtime {

enum class Storage : uint8_t {
  kUnused,     // nothing reads or writes it in this plan
  kConstant,   // initializer, folded constant, or evaluated at plan time: data fixed
  kInput,      // the caller's input tensor
  kArena,      // offset in the run's arena
  kOutput,     // a graph output: its own buffer, handed to the caller
  kView,       // the bytes of another value (`view_of`) under its own shape
  kDynamic,    // shape known only at run time: allocated while running
};

struct ValuePlan {
  Storage storage = Storage::kUnused;
  Tensor tensor;          // dtype and shape (and data for kConstant)
  size_t offset = 0;      // kArena
  ir::ValueId view_of = ir::kNoValue;  // kView
  int32_t input_index = -1;   // kInput: position in the executor's inputs
  int32_t output_index = -1;  // kOutput: position in the graph outputs
};

struct Step {
  ir::NodeId node;
  const kernels::OpKernel* kernel = nullptr;  // null for a dynamic step whose input dtypes were unknown
  bool dynamic = false;  // infer and allocate outputs at run time
  bool view = false;     // output 0 aliases input 0: nothing to run
  uint32_t first_input = 0, num_inputs = 0;    // into Plan::step_inputs
  uint32_t first_output = 0, num_outputs = 0;  // into Plan::step_outputs
};

struct Plan {
  std::vector<Shape> input_shapes;  // the signature this plan is for
  std::vector<DType> input_dtypes;
  std::vector<ValuePlan> values;
  std::vector<Step> steps;
  std::vector<ir::ValueId> step_inputs;   // kNoValue for omitted inputs
  std::vector<ir::ValueId> step_outputs;  // kNoValue for omitted outputs
  size_t arena_bytes = 0;
  bool has_dynamic = false;
  // Every graph output is computed straight into its own buffer: nothing to copy after a run.
  bool outputs_in_place = false;
  // Bytes of values computed while planning (shape-derived values): kConstant
  // values point here. Only the first `buffers_used` hold this plan's values;
  // every buffer keeps its capacity across rebuilds.
  std::vector<AlignedBuffer> buffers;
  size_t buffers_used = 0;

  bool matches(std::span<const Tensor* const> inputs) const;
};

// The kernel of node `n` for these input dtypes (created on first request).
using KernelLookup = std::function<Result<const kernels::OpKernel*>(ir::NodeId n, std::span<const DType> input_dtypes)>;

struct PlannerInput {
  const ir::Graph& graph;
  std::span<const ir::ValueId> graph_inputs;  // the executor's inputs, in order
  KernelLookup kernel_for;
};

// The planner's working storage, kept between builds for its capacity.
struct PlanScratch {
  std::vector<const Tensor*> inputs;
  std::vector<DType> dtypes;
  std::vector<Tensor> outputs;
  std::vector<Tensor*> output_ptrs;
  std::vector<int> last_use, root_end, start;
  std::vector<ir::ValueId> root;
  struct Block {
    ir::ValueId id;
    int start, end;
    size_t bytes;
    size_t offset;
  };
  std::vector<Block> blocks;
  std::vector<std::vector<uint32_t>> live_at, starts_at;  // block indices by step
  std::vector<std::pair<size_t, size_t>> busy;
};

// Builds into `plan` the plan for `inputs` (dtype and shape of each; data
// unused, except nullptr = omitted input with a default), reusing the storage
// of whatever `plan` held before.
Status build_plan(const PlannerInput& in, std::span<const Tensor* const> inputs, Plan& plan, PlanScratch& scratch);

}  // namespace ember::runtime
