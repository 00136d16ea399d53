// Scan: runs the body once per slice of the scan inputs, carrying state, and
// stacks each iteration's scan outputs. Opset 9+ scans any axis in either
// direction; opset 8 has a leading batch axis and per-batch sequence lengths.
#include <algorithm>
#include <cstring>

#include "base/value_list.h"
#include "kernels/common/shape_util.h"
#include "kernels/control/control_ops.h"

namespace ember::kernels::control_ops {
namespace {

struct ScanAttrs {
  size_t num_scan_inputs = 0;
  std::vector<int64_t> input_axes, input_directions, output_axes, output_directions;
};

class ScanKernel final : public OpKernel {
 public:
  ScanKernel(BoundSubgraph body, ScanAttrs attrs, bool batched, size_t num_states)
      : body_(std::move(body)), attrs_(std::move(attrs)), batched_(batched), num_states_(num_states) {}

  Status infer(KernelContext& ctx) const override {
    const ir::Graph& g = *body_.graph;
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, g.value(g.outputs[i]).dtype, Shape{});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const size_t first = batched_ ? 1 : 0;  // opset 8: input 0 is sequence_lens
    std::vector<const Tensor*> states, scans;
    for (size_t i = 0; i < num_states_; ++i) states.push_back(&ctx.input(first + i));
    for (size_t j = 0; j < attrs_.num_scan_inputs; ++j) {
      const Tensor& x = ctx.input(first + num_states_ + j);
      if (dtype_is_container(x.dtype()) || x.dtype() == DType::kString) {
        return not_implemented("Scan over {} inputs", dtype_name(x.dtype()));
      }
      scans.push_back(&x);
    }
    std::vector<Tensor> final_states;
    std::vector<std::vector<Tensor>> outputs(ctx.num_outputs() - num_states_);
    if (batched_) {
      EMBER_RETURN_IF_ERROR(run_batched(ctx, states, scans, final_states, outputs));
    } else {
      EMBER_RETURN_IF_ERROR(run_sequence(ctx, states, scans, attrs_.input_axes, final_states, outputs));
    }
    for (size_t i = 0; i < num_states_; ++i) {
      if (ctx.has_output(i)) ctx.output(i) = std::move(final_states[i]);
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!ctx.has_output(num_states_ + k)) continue;
      std::vector<Tensor>& parts = outputs[k];
      // A zero-length scan stacks no parts: their dtype and shape come from the body.
      EMBER_ASSIGN_OR_RETURN(Tensor like, parts.empty() ? declared_part(k) : Result<Tensor>(parts[0]));
      EMBER_RETURN_IF_ERROR(check_parts(parts, k));
      if (!batched_ && attrs_.output_directions[k] == 1) std::reverse(parts.begin(), parts.end());
      auto axis = batched_ ? Result<int64_t>(0) : normalize_axis(attrs_.output_axes[k], like.rank() + 1, "scan_output_axes");
      EMBER_RETURN_IF_ERROR(axis.status());
      ctx.output(num_states_ + k) = stack_along(parts, static_cast<size_t>(*axis), like.dtype(), like.shape());
    }
    return Status::ok();
  }

  bool allocates_outputs() const override { return true; }

 private:
  // Zeros of the dtype and shape the body declares (or infers) for scan output k,
  // for scans of no iterations.
  Result<Tensor> declared_part(size_t k) const {
    const ir::Value& v = body_.graph->value(body_.graph->outputs[num_states_ + k]);
    bool known = v.has_shape && !dtype_is_container(v.dtype) && v.dtype != DType::kUndefined;
    Shape shape;
    for (const ir::Dim& d : v.shape) {
      known = known && d.known();
      shape.push_back(d.value);
    }
    if (!known) {
      return not_implemented("a zero-length scan, and the body does not declare (or infer) the dtype and every dim of "
                             "scan output '{}'", v.name);
    }
    return Tensor::allocate(v.dtype, shape);
  }

  static Status check_parts(const std::vector<Tensor>& parts, size_t k) {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].dtype() != parts[0].dtype() || !(parts[i].shape() == parts[0].shape())) {
        return invalid_argument("scan output {}: iteration {} gives {}, iteration 0 gave {}", k, i, parts[i].describe(),
                                parts[0].describe());
      }
    }
    return Status::ok();
  }

  // One scan over `scans` along `axes` (`length` slices: the full axis when negative).
  Status run_sequence(const KernelContext& ctx, const std::vector<const Tensor*>& states,
                      const std::vector<const Tensor*>& scans, const std::vector<int64_t>& axes,
                      std::vector<Tensor>& final_states, std::vector<std::vector<Tensor>>& outputs,
                      int64_t length = -1) const {
    std::vector<size_t> axis(scans.size());
    int64_t full = -1;
    for (size_t j = 0; j < scans.size(); ++j) {
      EMBER_ASSIGN_OR_RETURN(int64_t a, normalize_axis(axes[j], scans[j]->rank(), "scan_input_axes"));
      axis[j] = static_cast<size_t>(a);
      const int64_t n = scans[j]->dim(a);
      if (full >= 0 && n != full) return invalid_argument("scan input {} has {} slices, scan input 0 has {}", j, n, full);
      full = n;
    }
    if (full < 0) return invalid_model("Scan needs at least one scan input");
    const int64_t steps = length < 0 ? full : std::min(length, full);
    std::vector<Tensor> carried, slices(scans.size()), body_out;
    for (const Tensor* s : states) carried.push_back(s->owns_storage() ? *s : s->clone());
    std::vector<const Tensor*> inputs;
    for (int64_t t = 0; t < steps; ++t) {
      inputs.clear();
      for (Tensor& s : carried) inputs.push_back(&s);
      for (size_t j = 0; j < scans.size(); ++j) {
        const int64_t at = attrs_.input_directions[j] == 1 ? steps - 1 - t : t;
        slices[j] = slice_along(*scans[j], axis[j], at);
        inputs.push_back(&slices[j]);
      }
      Status st = body_.run(ctx, inputs, body_out);
      if (!st.is_ok()) return st.with_context(fmt::format("body, iteration {}: ", t));
      for (size_t i = 0; i < carried.size(); ++i) carried[i] = std::move(body_out[i]);
      for (size_t k = 0; k < outputs.size(); ++k) outputs[k].push_back(std::move(body_out[carried.size() + k]));
    }
    final_states = std::move(carried);
    return Status::ok();
  }

  // Opset 8: each batch row scans its own sequence (axis 1) for sequence_lens[b]
  // steps; scan outputs past a row's length are zeros.
  Status run_batched(const KernelContext& ctx, const std::vector<const Tensor*>& states,
                     const std::vector<const Tensor*>& scans, std::vector<Tensor>& final_states,
                     std::vector<std::vector<Tensor>>& outputs) const {
    if (scans.empty() || scans[0]->rank() < 2) return invalid_argument("scan inputs must be [batch, sequence, ...]");
    const int64_t batch = scans[0]->dim(0);
    if (batch == 0) return not_implemented("Scan (opset 8) over an empty batch");
    const int64_t max_len = scans[0]->dim(1);
    std::vector<int64_t> lengths(static_cast<size_t>(batch), max_len);
    if (ctx.has_input(0)) {
      const Tensor& lens = ctx.input(0);
      if (!dtype_is_int(lens.dtype()) || lens.numel() != batch) {
        return invalid_argument("sequence_lens must hold {} integers, got {}", batch, lens.describe());
      }
      for (int64_t b = 0; b < batch; ++b) {
        lengths[static_cast<size_t>(b)] = read_int(lens, b);
        if (lengths[static_cast<size_t>(b)] < 0 || lengths[static_cast<size_t>(b)] > max_len) {
          return invalid_argument("sequence_lens[{}] = {} is outside [0, {}]", b, lengths[static_cast<size_t>(b)], max_len);
        }
      }
    }
    std::vector<std::vector<Tensor>> row_states(states.size());
    std::vector<std::vector<Tensor>> row_outputs(outputs.size());
    const std::vector<int64_t> axes(scans.size(), 0);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> state_rows, scan_rows, row_final;
      for (const Tensor* s : states) state_rows.push_back(slice_along(*s, 0, b));
      for (const Tensor* x : scans) scan_rows.push_back(slice_along(*x, 0, b));
      std::vector<const Tensor*> state_ptrs, scan_ptrs;
      for (const Tensor& t : state_rows) state_ptrs.push_back(&t);
      for (const Tensor& t : scan_rows) scan_ptrs.push_back(&t);
      std::vector<std::vector<Tensor>> parts(outputs.size());
      EMBER_RETURN_IF_ERROR(run_sequence(ctx, state_ptrs, scan_ptrs, axes, row_final, parts, lengths[static_cast<size_t>(b)]));
      for (size_t i = 0; i < states.size(); ++i) row_states[i].push_back(std::move(row_final[i]));
      for (size_t k = 0; k < outputs.size(); ++k) {
        EMBER_ASSIGN_OR_RETURN(Tensor like, parts[k].empty() ? declared_part(k) : Result<Tensor>(parts[k][0]));
        EMBER_RETURN_IF_ERROR(check_parts(parts[k], k));
        while (static_cast<int64_t>(parts[k].size()) < max_len) parts[k].push_back(Tensor::allocate(like.dtype(), like.shape()));
        row_outputs[k].push_back(stack_along(parts[k], 0, like.dtype(), like.shape()));
      }
    }
    final_states.clear();
    for (auto& rows : row_states) {
      EMBER_RETURN_IF_ERROR(check_parts(rows, 0));
      final_states.push_back(stack_along(rows, 0, rows[0].dtype(), rows[0].shape()));
    }
    // Each scan output is already [sequence, ...] per row: the rows become the batch axis.
    for (size_t k = 0; k < outputs.size(); ++k) outputs[k] = std::move(row_outputs[k]);
    return Status::ok();
  }

  BoundSubgraph body_;
  ScanAttrs attrs_;
  bool batched_;
  size_t num_states_;
};

Status read_flags(ir::AttrReader& attrs, std::string_view name, size_t count, std::vector<int64_t>& out, bool directions) {
  out = attrs.get_ints(name, std::vector<int64_t>(count, 0));
  if (out.size() != count) return invalid_model("attribute '{}' has {} values, expected {}", name, out.size(), count);
  for (int64_t v : out) {
    if (directions && v != 0 && v != 1) return invalid_model("attribute '{}' holds {}; directions are 0 or 1", name, v);
  }
  return Status::ok();
}

}  // namespace

KernelResult create_scan(const KernelInit& init) {
  const bool batched = init.node.opset < 9;
  ir::AttrReader attrs(init.node);
  attrs.require("num_scan_inputs");
  ScanAttrs a;
  const int64_t num_scan_inputs = attrs.get_int("num_scan_inputs", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  const size_t first = batched ? 1 : 0;
  const size_t explicit_inputs = init.node.num_explicit_inputs;
  if (num_scan_inputs < 1 || first + static_cast<size_t>(num_scan_inputs) > explicit_inputs) {
    return invalid_model("num_scan_inputs is {} for {} inputs", num_scan_inputs, explicit_inputs);
  }
  a.num_scan_inputs = static_cast<size_t>(num_scan_inputs);
  const size_t num_states = explicit_inputs - first - a.num_scan_inputs;
  if (init.node.outputs.size() < num_states) {
    return invalid_model("Scan has {} state inputs but {} outputs", num_states, init.node.outputs.size());
  }
  const size_t num_scan_outputs = init.node.outputs.size() - num_states;
  if (batched) {
    EMBER_RETURN_IF_ERROR(read_flags(attrs, "directions", a.num_scan_inputs, a.input_directions, true));
    a.input_axes.assign(a.num_scan_inputs, 0);
  } else {
    EMBER_RETURN_IF_ERROR(read_flags(attrs, "scan_input_axes", a.num_scan_inputs, a.input_axes, false));
    EMBER_RETURN_IF_ERROR(read_flags(attrs, "scan_input_directions", a.num_scan_inputs, a.input_directions, true));
    EMBER_RETURN_IF_ERROR(read_flags(attrs, "scan_output_axes", num_scan_outputs, a.output_axes, false));
    EMBER_RETURN_IF_ERROR(read_flags(attrs, "scan_output_directions", num_scan_outputs, a.output_directions, true));
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  for (size_t i = first; i < explicit_inputs; ++i) {
    if (init.node.inputs[i] == ir::kNoValue) return invalid_model("input {} is missing", i);
  }
  EMBER_ASSIGN_OR_RETURN(BoundSubgraph body, bind_subgraph(init, "body", static_cast<int>(num_states + a.num_scan_inputs)));
  if (body.graph->outputs.size() != init.node.outputs.size()) {
    return invalid_model("body has {} outputs, the node {}", body.graph->outputs.size(), init.node.outputs.size());
  }
  return std::unique_ptr<OpKernel>(new ScanKernel(std::move(body), std::move(a), batched, num_states));
}

}  // namespace ember::kernels::control_ops
