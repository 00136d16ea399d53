#pragma once
// The op-object boundary: an OpKernel is built once per node (validating
// attributes), infers output types and shapes, and runs on preplanned buffers.
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"
#include "ir/graph.h"

namespace ember::kernels {

// A subgraph (the branch of an If) compiled by the runtime. The kernel passes the
// values of the subgraph's outer_refs, in order, and receives owned outputs.
class CompiledSubgraph {
 public:
  virtual ~CompiledSubgraph() = default;
  virtual Status run(std::span<const Tensor* const> outer_values, std::vector<Tensor>& outputs) const = 0;
};

class SubgraphCompiler {
 public:
  virtual ~SubgraphCompiler() = default;
  virtual Result<std::unique_ptr<CompiledSubgraph>> compile(std::shared_ptr<const ir::Graph> graph) = 0;
};

// What a kernel factory sees of its node at session creation.
struct KernelInit {
  const ir::Node& node;
  // dtype of each input (kUndefined for an omitted optional one).
  std::span<const DType> input_dtypes;
  // Constant value of each input, or nullptr when it is computed at run time.
  std::span<const Tensor* const> constant_inputs;
  SubgraphCompiler* subgraphs = nullptr;
  const ir::Graph* graph = nullptr;  // the graph holding `node` (names of its inputs)
};

// The view of one node's inputs and outputs, used for both infer() and run().
// In infer(), inputs carry dtype and shape, and data only when the value is known
// (constant or derived from shapes); outputs receive dtype and shape. In run(),
// every input has data, and outputs have shape, dtype and a buffer to fill.
class KernelContext {
 public:
  KernelContext(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs)
      : inputs_(inputs), outputs_(outputs) {}

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const { return *inputs_[i]; }
  // The input's value is available (always true in run()).
  bool has_value(size_t i) const { return has_input(i) && inputs_[i]->data() != nullptr; }

  size_t num_outputs() const { return outputs_.size(); }
  bool has_output(size_t i) const { return i < outputs_.size() && outputs_[i] != nullptr; }
  Tensor& output(size_t i) { return *outputs_[i]; }
  // Sets an output's type in infer(); a no-op for omitted optional outputs.
  void set_output(size_t i, DType dtype, Shape shape) {
    if (has_output(i)) {
      outputs_[i]->set_dtype(dtype);
      outputs_[i]->set_shape(std::move(shape));
    }
  }

 private:
  std::span<const Tensor* const> inputs_;
  std::span<Tensor* const> outputs_;
};

// Status returned by infer() when an output shape depends on the value of input
// `i` and that value is not known yet; the runtime then infers again at run time.
Status needs_value(size_t input_index);
bool is_needs_value(const Status& s);

// Fails, naming the op and the missing input, unless inputs 0..count-1 are present.
Status require_inputs(const KernelInit& init, size_t count);
// The dtype of input i, kUndefined when it is omitted or past the node's inputs.
DType input_dtype(const KernelInit& init, size_t i);

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual Status infer(KernelContext& ctx) const = 0;
  virtual Status run(KernelContext& ctx) const = 0;
  // infer(), then every output's rank held to kMaxRank: a shape read from data
  // (Reshape's shape input, say) past it is an error, views included. What
  // the runtime calls.
  Status infer_outputs(KernelContext& ctx) const {
    EMBER_RETURN_IF_ERROR(infer(ctx));
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      if (ctx.has_output(i) && ctx.output(i).shape().size() > kMaxRank) {
        return invalid_argument("output {} would have rank {}, past the {} dims a tensor may have", i,
                                ctx.output(i).shape().size(), kMaxRank);
      }
    }
    return Status::ok();
  }

  // Output 0 may be written into the buffer of input `k` (same byte size,
  // elementwise-safe), or -1.
  virtual int inplace_input() const { return -1; }
  // Output `output` is computed correctly when the caller binds it to the very
  // buffer of input `input` (Session::run_bound), e.g. a KV cache appended in place.
  virtual bool may_share_buffer(size_t output, size_t input) const {
    return output == 0 && static_cast<int>(input) == inplace_input();
  }
  // Output 0 is input 0's bytes under a new shape (Reshape, Squeeze, ...): the
  // runtime makes it a view and never calls run().
  virtual bool is_view() const { return false; }
  // The kernel allocates its outputs in run() (shape known only after running,
  // e.g. If): the runtime passes outputs with dtype set and no buffer.
  virtual bool allocates_outputs() const { return false; }
  // False when the outputs depend only on input shapes (Shape, Size): the
  // planner can then evaluate the node before any input data exists.
  virtual bool reads_input_data() const { return true; }
  // True when the kernel copied constant input `i` into its own layout at
  // creation and never reads that input's data again: the runtime may release
  // the input's bytes once every reader has packed it (infer() and run() still
  // see its dtype and shape, with no data).
  virtual bool prepacked_input(size_t /*i*/) const { return false; }
  // Bytes the kernel holds in its own prepacked layouts (weights repacked at
  // creation); reported by `ember info` and session statistics.
  virtual int64_t packed_bytes() const { return 0; }
};

using KernelFactory = Result<std::unique_ptr<OpKernel>> (*)(const KernelInit&);

}  // namespace ember::kernels
