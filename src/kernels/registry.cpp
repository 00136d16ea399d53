#include "kernels/registry.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace ember::kernels {

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_tensor_ops(r);
    register_gather_scatter_ops(r);
    register_reduce_ops(r);
    register_matmul_ops(r);
    register_norm_ops(r);
    register_control_ops(r);
    register_quant_ops(r);
    register_attention_ops(r);
    register_random_ops(r);
    register_recurrent_ops(r);
    register_signal_ops(r);
    register_string_ops(r);
    register_ml_ops(r);
    register_conv_ops(r);
    register_image_ops(r);
    return r;
  }();
  return registry;
}

const OpEntry* OpRegistry::find(std::string_view domain, std::string_view op_type, int opset) const {
  for (const OpEntry& e : entries_) {
    if (e.domain == domain && e.op_type == op_type && e.since_version <= opset && opset <= e.until_version) return &e;
  }
  return nullptr;
}

Status require_inputs(const KernelInit& init, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (i >= init.input_dtypes.size() || init.input_dtypes[i] == DType::kUndefined) {
      return invalid_model("{} needs {} inputs; input {} is missing", init.node.op_type, count, i);
    }
  }
  return Status::ok();
}

DType input_dtype(const KernelInit& init, size_t i) {
  return i < init.input_dtypes.size() ? init.input_dtypes[i] : DType::kUndefined;
}

Status needs_value(size_t input_index) {
  return Status(StatusCode::kNeedsValue, fmt::format("the value of input {} is needed to infer the output shape", input_index));
}
bool is_needs_value(const Status& s) { return s.code() == StatusCode::kNeedsValue; }

Status check_input_types(const OpEntry& entry, const ir::Node& node, std::span<const DType> input_dtypes) {
  for (size_t i = 0; i < input_dtypes.size(); ++i) {
    const DType t = input_dtypes[i];
    if (t == DType::kUndefined || entry.types.contains(t)) continue;
    return not_implemented("{}: input {} is a {} tensor, which this op does not support ({} opsets {}-{} take {})",
                           node.label(), i, dtype_name(t), entry.op_type, entry.since_version, entry.until_version,
                           dtype_set_text(entry.types));
  }
  return Status::ok();
}

namespace {

// Why no entry covers `node`: the op is unknown, or its opset lies outside the
// ranges the table has (and perhaps past the newest opset it was reviewed against).
Status no_entry(const ir::Node& node) {
  std::vector<std::string> ranges;
  for (const OpEntry& e : OpRegistry::instance().entries()) {
    if (e.domain == node.domain && e.op_type == node.op_type) {
      ranges.push_back(fmt::format("{}-{}", e.since_version, e.until_version));
    }
  }
  if (ranges.empty()) return not_implemented("{}: unsupported op", node.label());
  const std::string_view domain = node.domain.empty() ? std::string_view("ai.onnx") : std::string_view(node.domain);
  std::string newer;
  if (node.opset > newest_opset(node.domain)) {
    newer = fmt::format("; the op table is reviewed up to opset {} of {}", newest_opset(node.domain), domain);
  }
  return not_implemented("{}: opset {} of {} is not supported (Ember implements opsets {}){}", node.label(), node.opset,
                         node.op_type, fmt::join(ranges, ", "), newer);
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_kernel(const KernelInit& init) {
  const ir::Node& node = init.node;
  const OpEntry* e = OpRegistry::instance().find(node.domain, node.op_type, node.opset);
  if (!e) return no_entry(node);
  EMBER_RETURN_IF_ERROR(check_input_types(*e, node, init.input_dtypes));
  auto kernel = e->create(init);
  if (!kernel.is_ok()) return kernel.status().with_context(node.label() + ": ");
  return kernel;
}

Result<std::vector<Tensor>> evaluate(const OpKernel& kernel, std::span<const Tensor* const> inputs,
                                     size_t num_outputs) {
  std::vector<Tensor> outputs(num_outputs);
  std::vector<Tensor*> out_ptrs(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) out_ptrs[i] = &outputs[i];
  KernelContext ctx(inputs, out_ptrs);
  EMBER_RETURN_IF_ERROR(kernel.infer_outputs(ctx));
  if (kernel.is_view()) {
    Tensor view(outputs[0].dtype(), outputs[0].shape(), const_cast<void*>(inputs[0]->data()));
    outputs[0] = Tensor::allocate(view.dtype(), view.shape());
    if (view.nbytes()) std::memcpy(outputs[0].data(), view.data(), view.nbytes());
    return outputs;
  }
  if (!kernel.allocates_outputs()) {
    for (Tensor& t : outputs) t = Tensor::allocate(t.dtype(), t.shape());
  }
  EMBER_RETURN_IF_ERROR(kernel.run(ctx));
  return outputs;
}

}  // namespace ember::kernels
