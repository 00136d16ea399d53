// SequenceMap: runs the body once per element of input 0; sequence inputs give
// the body their element at that position, tensor inputs are passed whole.
// Each body output becomes a sequence of the per-element results.
#include "base/value_list.h"
#include "kernels/control/control_ops.h"

namespace ember::kernels::control_ops {
namespace {

class SequenceMapKernel final : public OpKernel {
 public:
  explicit SequenceMapKernel(BoundSubgraph body) : body_(std::move(body)) {}

  Status infer(KernelContext& ctx) const override {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, DType::kSequence, Shape{});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const size_t num_inputs = body_.graph->inputs.size();
    const ValueList* first = container_list(ctx.input(0));
    if (!first || ctx.input(0).dtype() != DType::kSequence) {
      return invalid_argument("input 0 must be a sequence, got {}", ctx.input(0).describe());
    }
    const size_t n = first->items.size();
    std::vector<const ValueList*> lists(num_inputs, nullptr);
    for (size_t i = 0; i < num_inputs; ++i) {
      if (ctx.input(i).dtype() != DType::kSequence) continue;
      lists[i] = container_list(ctx.input(i));
      if (!lists[i] || lists[i]->items.size() != n) {
        return invalid_argument("input {} holds {} tensors, input 0 holds {}", i, lists[i] ? lists[i]->items.size() : 0, n);
      }
    }
    std::vector<ValueList> results(ctx.num_outputs());
    for (size_t k = 0; k < results.size(); ++k) {
      results[k].elem_dtype = body_.graph->value(body_.graph->outputs[k]).dtype;
    }
    std::vector<const Tensor*> inputs;
    std::vector<Tensor> outputs;
    for (size_t e = 0; e < n; ++e) {
      inputs.clear();
      for (size_t i = 0; i < num_inputs; ++i) inputs.push_back(lists[i] ? &lists[i]->items[e] : &ctx.input(i));
      Status st = body_.run(ctx, inputs, outputs);
      if (!st.is_ok()) return st.with_context(fmt::format("body, element {}: ", e));
      for (size_t k = 0; k < results.size(); ++k) {
        if (dtype_is_container(outputs[k].dtype())) return not_implemented("SequenceMap bodies returning a {}", dtype_name(outputs[k].dtype()));
        results[k].elem_dtype = outputs[k].dtype();
        results[k].items.push_back(std::move(outputs[k]));
      }
    }
    for (size_t k = 0; k < results.size(); ++k) {
      if (ctx.has_output(k)) ctx.output(k) = make_container(DType::kSequence, std::move(results[k]));
    }
    return Status::ok();
  }

  bool allocates_outputs() const override { return true; }

 private:
  BoundSubgraph body_;
};

}  // namespace

KernelResult create_sequence_map(const KernelInit& init) {
  const size_t explicit_inputs = init.node.num_explicit_inputs;
  if (explicit_inputs < 1 || input_dtype(init, 0) != DType::kSequence) {
    return invalid_model("input 0 must be a sequence, got {}", dtype_name(input_dtype(init, 0)));
  }
  for (size_t i = 0; i < explicit_inputs; ++i) {
    if (init.node.inputs[i] == ir::kNoValue) return invalid_model("input {} is missing", i);
  }
  EMBER_ASSIGN_OR_RETURN(BoundSubgraph body, bind_subgraph(init, "body", static_cast<int>(explicit_inputs)));
  if (body.graph->outputs.size() != init.node.outputs.size()) {
    return invalid_model("body has {} outputs, the node {}", body.graph->outputs.size(), init.node.outputs.size());
  }
  return std::unique_ptr<OpKernel>(new SequenceMapKernel(std::move(body)));
}

}  // namespace ember::kernels::control_ops
