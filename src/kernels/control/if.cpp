// If: runs the then- or else-branch subgraph, compiled once at session creation.
// Branch outputs may be tensors, sequences or optionals.
#include "kernels/control/control_ops.h"

namespace ember::kernels::control_ops {
namespace {

class IfKernel final : public OpKernel {
 public:
  IfKernel(BoundSubgraph then_branch, BoundSubgraph else_branch)
      : then_(std::move(then_branch)), else_(std::move(else_branch)) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& cond = ctx.input(0);
    if (cond.dtype() != DType::kBool || cond.numel() != 1) {
      return invalid_argument("cond must be a single bool, got {}", cond.describe());
    }
    // Output shapes are known only once a branch has run; declared dtypes suffice here.
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      ctx.set_output(i, then_.graph->value(then_.graph->outputs[i]).dtype, Shape{});
    }
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const BoundSubgraph& b = *ctx.input(0).data_as<bool>() ? then_ : else_;
    std::vector<const Tensor*> inputs;
    std::vector<Tensor> outputs;
    EMBER_RETURN_IF_ERROR(b.run(ctx, inputs, outputs));
    if (outputs.size() != ctx.num_outputs()) {
      return invalid_model("the branch produced {} outputs, the node has {}", outputs.size(), ctx.num_outputs());
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (ctx.has_output(i)) ctx.output(i) = std::move(outputs[i]);
    }
    return Status::ok();
  }

  bool allocates_outputs() const override { return true; }

 private:
  BoundSubgraph then_, else_;
};

}  // namespace

KernelResult create_if(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(BoundSubgraph then_branch, bind_subgraph(init, "then_branch", 0));
  EMBER_ASSIGN_OR_RETURN(BoundSubgraph else_branch, bind_subgraph(init, "else_branch", 0));
  const ir::Graph& t = *then_branch.graph;
  const ir::Graph& e = *else_branch.graph;
  size_t n = init.node.outputs.size();
  if (t.outputs.size() != n || e.outputs.size() != n) {
    return invalid_model("the node has {} outputs but then_branch has {} and else_branch {}", n, t.outputs.size(),
                         e.outputs.size());
  }
  for (size_t i = 0; i < n; ++i) {
    DType a = t.value(t.outputs[i]).dtype, b = e.value(e.outputs[i]).dtype;
    if (a != DType::kUndefined && b != DType::kUndefined && a != b) {
      return invalid_model("output {} is {} in then_branch but {} in else_branch", i, dtype_name(a), dtype_name(b));
    }
  }
  return std::unique_ptr<OpKernel>(new IfKernel(std::move(then_branch), std::move(else_branch)));
}

}  // namespace ember::kernels::control_ops
