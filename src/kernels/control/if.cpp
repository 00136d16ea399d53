// If: runs the then- or else-branch subgraph, compiled once at session creation.
#include <climits>

#include "kernels/registry.h"

namespace ember::kernels {
namespace {

struct Branch {
  std::shared_ptr<const ir::Graph> graph;
  std::unique_ptr<CompiledSubgraph> compiled;
  std::vector<size_t> outer_input;  // for each outer_ref of the branch: its index in the node's inputs
};

class IfKernel final : public OpKernel {
 public:
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
    const Branch& b = *ctx.input(0).data_as<bool>() ? then_ : else_;
    std::vector<const Tensor*> outer;
    outer.reserve(b.outer_input.size());
    for (size_t i : b.outer_input) outer.push_back(&ctx.input(i));
    std::vector<Tensor> outputs;
    EMBER_RETURN_IF_ERROR(b.compiled->run(outer, outputs));
    if (outputs.size() != ctx.num_outputs()) {
      return invalid_model("the branch produced {} outputs, the node has {}", outputs.size(), ctx.num_outputs());
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (ctx.has_output(i)) ctx.output(i) = std::move(outputs[i]);
    }
    return Status::ok();
  }

  bool allocates_outputs() const override { return true; }

  static Result<std::unique_ptr<OpKernel>> create(const KernelInit& init) {
    ir::AttrReader attrs(init.node);
    auto then_graph = attrs.get_graph("then_branch");
    auto else_graph = attrs.get_graph("else_branch");
    EMBER_RETURN_IF_ERROR(attrs.status());
    if (!then_graph || !else_graph) return invalid_model("then_branch and else_branch are required");
    if (!init.subgraphs || !init.graph) return not_implemented("If needs a runtime that compiles subgraphs");
    auto kernel = std::make_unique<IfKernel>();
    EMBER_RETURN_IF_ERROR(kernel->bind(init, then_graph, kernel->then_, "then_branch"));
    EMBER_RETURN_IF_ERROR(kernel->bind(init, else_graph, kernel->else_, "else_branch"));
    size_t n = init.node.outputs.size();
    if (then_graph->outputs.size() != n || else_graph->outputs.size() != n) {
      return invalid_model("the node has {} outputs but then_branch has {} and else_branch {}", n,
                           then_graph->outputs.size(), else_graph->outputs.size());
    }
    for (size_t i = 0; i < n; ++i) {
      DType a = then_graph->value(then_graph->outputs[i]).dtype, b = else_graph->value(else_graph->outputs[i]).dtype;
      if (a != DType::kUndefined && b != DType::kUndefined && a != b) {
        return invalid_model("output {} is {} in then_branch but {} in else_branch", i, dtype_name(a), dtype_name(b));
      }
    }
    return std::unique_ptr<OpKernel>(std::move(kernel));
  }

 private:
  Status bind(const KernelInit& init, std::shared_ptr<ir::Graph> g, Branch& b, std::string_view which) {
    if (!g->inputs.empty()) return invalid_model("{} must take no inputs, it declares {}", which, g->inputs.size());
    const ir::Node& node = init.node;
    for (ir::ValueId ref : g->outer_refs) {
      const std::string& name = g->value(ref).name;
      size_t i = node.num_explicit_inputs;
      while (i < node.inputs.size() && init.graph->value(node.inputs[i]).name != name) ++i;
      if (i == node.inputs.size()) return invalid_model("{} reads '{}', which the enclosing graph does not define", which, name);
      b.outer_input.push_back(i);
    }
    b.graph = g;
    EMBER_ASSIGN_OR_RETURN(b.compiled, init.subgraphs->compile(g));
    return Status::ok();
  }

  Branch then_, else_;
};

}  // namespace

void register_control_ops(OpRegistry& r) { r.add({"", "If", 1, INT_MAX, &IfKernel::create}); }

}  // namespace ember::kernels
