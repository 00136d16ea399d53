#include "kernels/registry.h"

#include <algorithm>
#include <cstring>

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

bool OpRegistry::knows(std::string_view domain, std::string_view op_type) const {
  for (const OpEntry& e : entries_) {
    if (e.domain == domain && e.op_type == op_type) return true;
  }
  return false;
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

namespace {

// The ops that read the narrow types (ONNX 17-26): the conversions, and data
// movement that copies whole bytes (which refuses the packed 4-bit and 2-bit
// types itself). Every other kernel is kept from misreading their bytes here.
bool reads_narrow_types(const ir::Node& node) {
  static constexpr std::string_view kOps[] = {
      "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "BitCast", "Identity", "Reshape", "Flatten",
      "Squeeze", "Unsqueeze", "Shape", "Size", "Concat", "Split", "Slice", "Transpose", "Expand", "Tile", "Gather",
  };
  return node.domain.empty() && std::find(std::begin(kOps), std::end(kOps), node.op_type) != std::end(kOps);
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_kernel(const KernelInit& init) {
  const ir::Node& node = init.node;
  const OpEntry* e = OpRegistry::instance().find(node.domain, node.op_type, node.opset);
  if (!e) {
    if (OpRegistry::instance().knows(node.domain, node.op_type)) {
      return not_implemented("{}: opset {} of this op is not supported", node.label(), node.opset);
    }
    return not_implemented("{}: unsupported op", node.label());
  }
  for (size_t i = 0; i < init.input_dtypes.size(); ++i) {
    if (dtype_is_narrow(init.input_dtypes[i]) && !reads_narrow_types(node)) {
      return not_implemented("{}: input {} is {}, which this op does not support", node.label(), i,
                             dtype_name(init.input_dtypes[i]));
    }
  }
  if (!e->strings) {
    for (size_t i = 0; i < init.input_dtypes.size(); ++i) {
      if (init.input_dtypes[i] == DType::kString) {
        return not_implemented("{}: input {} is a string tensor, which this op does not support", node.label(), i);
      }
    }
  }
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
  EMBER_RETURN_IF_ERROR(kernel.infer(ctx));
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
