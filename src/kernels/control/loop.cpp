// Loop: runs the body while the trip count and the condition allow, carrying
// state (tensors, sequences or optionals) from one iteration to the next and
// stacking each iteration's scan outputs along a new leading axis.
#include <climits>

#include "base/value_list.h"
#include "kernels/control/control_ops.h"

namespace ember::kernels::control_ops {
namespace {

class LoopKernel final : public OpKernel {
 public:
  LoopKernel(BoundSubgraph body, size_t num_carried) : body_(std::move(body)), num_carried_(num_carried) {
    for (size_t c = 0; c < num_carried_; ++c) {
      wraps_optional_.push_back(body_.graph->value(body_.graph->inputs[2 + c]).dtype == DType::kOptional);
    }
  }

  Status infer(KernelContext& ctx) const override {
    const ir::Graph& g = *body_.graph;
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      DType t = i < num_carried_ && ctx.has_input(2 + i) ? ctx.input(2 + i).dtype() : g.value(g.outputs[1 + i]).dtype;
      ctx.set_output(i, t, Shape{});
    }
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    int64_t trip_count = INT64_MAX;
    if (ctx.has_input(0)) {
      const Tensor& m = ctx.input(0);
      if (!dtype_is_int(m.dtype()) || m.numel() != 1) return invalid_argument("M must be one integer, got {}", m.describe());
      trip_count = read_int(m, 0);
    }
    bool cond = true;
    if (ctx.has_input(1)) {
      EMBER_ASSIGN_OR_RETURN(cond, read_cond(ctx.input(1), "cond"));
    }
    Tensor iter = Tensor::allocate_uninitialized(DType::kI64, Shape{});
    Tensor cond_in = Tensor::allocate_uninitialized(DType::kBool, Shape{});
    const size_t num_scan = ctx.num_outputs() - num_carried_;
    // carried: the latest values (the initial ones, then the body's outputs);
    // fed: the same as the body's inputs declare them.
    std::vector<Tensor> carried, fed(num_carried_), outputs;
    std::vector<std::vector<Tensor>> scans(num_scan);
    std::vector<const Tensor*> inputs;
    for (size_t c = 0; c < num_carried_; ++c) {
      const Tensor& initial = ctx.input(2 + c);
      carried.push_back(initial.owns_storage() ? initial : initial.clone());
    }
    for (int64_t i = 0; i < trip_count && cond; ++i) {
      *iter.data_as<int64_t>() = i;
      *cond_in.data_as<bool>() = cond;
      inputs.assign({&iter, &cond_in});
      for (size_t c = 0; c < num_carried_; ++c) {
        fed[c] = as_declared(c, carried[c]);
        inputs.push_back(&fed[c]);
      }
      Status st = body_.run(ctx, inputs, outputs);
      if (!st.is_ok()) return st.with_context(fmt::format("body, iteration {}: ", i));
      EMBER_ASSIGN_OR_RETURN(cond, read_cond(outputs[0], "the body's condition output"));
      for (size_t c = 0; c < num_carried_; ++c) carried[c] = std::move(outputs[1 + c]);
      for (size_t k = 0; k < num_scan; ++k) scans[k].push_back(std::move(outputs[1 + num_carried_ + k]));
    }
    for (size_t c = 0; c < num_carried_; ++c) {
      if (ctx.has_output(c)) ctx.output(c) = std::move(carried[c]);
    }
    for (size_t k = 0; k < num_scan; ++k) {
      if (!ctx.has_output(num_carried_ + k)) continue;
      auto stacked = stack_scan_output(k, scans[k]);
      if (!stacked.is_ok()) return stacked.status().with_context(fmt::format("scan output {}: ", k));
      ctx.output(num_carried_ + k) = std::move(stacked).value();
    }
    return Status::ok();
  }

  bool allocates_outputs() const override { return true; }

 private:
  static Result<bool> read_cond(const Tensor& t, std::string_view what) {
    if (t.dtype() != DType::kBool || t.numel() != 1) return invalid_argument("{} must be one bool, got {}", what, t.describe());
    return *t.data_as<bool>();
  }

  // A carried value as the body input declares it: a tensor or sequence passed
  // where the body takes an optional becomes an optional holding it.
  Tensor as_declared(size_t c, const Tensor& value) const {
    if (!wraps_optional_[c] || value.dtype() == DType::kOptional) return value;
    return make_container(DType::kOptional, ValueList{value.dtype(), {value}});
  }

  Result<Tensor> stack_scan_output(size_t k, const std::vector<Tensor>& parts) const {
    const ir::Value& declared = body_.graph->value(body_.graph->outputs[1 + num_carried_ + k]);
    if (parts.empty()) {
      // No iteration ran: the shape comes from the body's declaration when it is fully known.
      bool known = declared.has_shape && !dtype_is_container(declared.dtype) && declared.dtype != DType::kUndefined;
      Shape shape{0};
      for (const ir::Dim& d : declared.shape) {
        known = known && d.known();
        shape.push_back(d.value);
      }
      if (!known) {
        return not_implemented("zero iterations, and the body does not declare (or infer) the dtype and every dim of "
                               "scan output '{}'", declared.name);
      }
      return Tensor::allocate(declared.dtype, shape);
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      if (dtype_is_container(parts[i].dtype()) || parts[i].dtype() == DType::kString) {
        return not_implemented("scan outputs of {} values", dtype_name(parts[i].dtype()));
      }
      if (parts[i].dtype() != parts[0].dtype() || !(parts[i].shape() == parts[0].shape())) {
        return invalid_argument("iteration {} gives {}, iteration 0 gave {}", i, parts[i].describe(), parts[0].describe());
      }
    }
    return stack_along(parts, 0, parts[0].dtype(), parts[0].shape());
  }

  BoundSubgraph body_;
  size_t num_carried_;
  std::vector<bool> wraps_optional_;  // per carried value: the body declares it optional
};

}  // namespace

KernelResult create_loop(const KernelInit& init) {
  const size_t explicit_inputs = init.node.num_explicit_inputs;
  if (explicit_inputs < 2) return invalid_model("Loop needs inputs M and cond (either may be empty), got {}", explicit_inputs);
  const size_t num_carried = explicit_inputs - 2;
  for (size_t c = 0; c < num_carried; ++c) {
    if (init.node.inputs[2 + c] == ir::kNoValue) return invalid_model("loop-carried input {} is missing", 2 + c);
  }
  if (init.node.outputs.size() < num_carried) {
    return invalid_model("Loop has {} loop-carried inputs but {} outputs", num_carried, init.node.outputs.size());
  }
  EMBER_ASSIGN_OR_RETURN(BoundSubgraph body, bind_subgraph(init, "body", static_cast<int>(2 + num_carried)));
  const size_t num_scan = init.node.outputs.size() - num_carried;
  if (body.graph->outputs.size() != 1 + num_carried + num_scan) {
    return invalid_model("body has {} outputs; the node needs 1 + {} carried + {} scan outputs", body.graph->outputs.size(),
                         num_carried, num_scan);
  }
  return std::unique_ptr<OpKernel>(new LoopKernel(std::move(body), num_carried));
}

}  // namespace ember::kernels::control_ops
