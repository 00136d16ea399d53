// MaxUnpool: scatters X into zeros at MaxPool's flat indices. The indices
// address the unpooled shape implied by kernel_shape, strides and pads; an
// output_shape input only adds zeros after that shape's end along each dim
// (ONNX's reference and its test_maxunpool_export_with_output_shape).
#include <cstring>
#include <memory>

#include "kernels/conv/conv_ops.h"

namespace ember::kernels {
namespace {

class MaxUnpoolKernel final : public OpKernel {
 public:
  MaxUnpoolKernel(DType dtype, std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads)
      : dtype_(dtype), kernel_(std::move(kernel)), strides_(std::move(strides)), pads_(std::move(pads)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Shape inferred, unpooled_shape(ctx));
    if (!ctx.has_input(2)) {
      ctx.set_output(0, dtype_, std::move(inferred));
      return Status::ok();
    }
    if (!ctx.has_value(2)) return needs_value(2);
    EMBER_ASSIGN_OR_RETURN(Shape out, requested_shape(ctx, inferred));
    ctx.set_output(0, dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Shape inferred, unpooled_shape(ctx));
    const Tensor& x = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    Tensor& y = ctx.output(0);
    const Shape& out = y.shape();
    const int64_t limit = shape_numel(inferred);
    const int64_t* idx = indices.data_as<int64_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (idx[i] < 0 || idx[i] >= limit) {
        return invalid_argument("I[{}] = {} is outside the unpooled shape {} ({} elements)", i, idx[i],
                                shape_to_string(inferred), limit);
      }
    }
    std::memset(y.data(), 0, y.nbytes());
    const size_t elem = dtype_nbytes(dtype_, 1);
    const auto* src = static_cast<const uint8_t*>(x.data());
    auto* dst = static_cast<uint8_t*>(y.data());
    for (int64_t i = 0; i < x.numel(); ++i) {
      // The flat index in the unpooled shape, re-addressed in the output shape.
      int64_t rest = idx[i], offset = 0, out_stride = 1;
      for (size_t d = inferred.size(); d-- > 0;) {
        offset += (rest % inferred[d]) * out_stride;
        rest /= inferred[d];
        out_stride *= out[d];
      }
      std::memcpy(dst + static_cast<size_t>(offset) * elem, src + static_cast<size_t>(i) * elem, elem);
    }
    return Status::ok();
  }

 private:
  Result<Shape> unpooled_shape(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    const Shape& indices = ctx.input(1).shape();
    const size_t rank = kernel_.size();
    if (x.size() != rank + 2) {
      return invalid_argument("X {} must be N x C x {} spatial dims (kernel_shape has {})", shape_to_string(x), rank,
                              rank);
    }
    if (indices != x) {
      return invalid_argument("I {} must have the shape of X {}", shape_to_string(indices), shape_to_string(x));
    }
    Shape out{x[0], x[1]};
    for (size_t i = 0; i < rank; ++i) {
      const int64_t stride = strides_.empty() ? 1 : strides_[i];
      const int64_t pads = pads_.empty() ? 0 : pads_[i] + pads_[i + rank];
      const int64_t size = (x[i + 2] - 1) * stride - pads + kernel_[i];
      if (size < 0) return invalid_argument("X {} gives a negative unpooled size along spatial dim {}", shape_to_string(x), i);
      out.push_back(size);
    }
    return out;
  }

  Result<Shape> requested_shape(const KernelContext& ctx, const Shape& inferred) const {
    const Tensor& t = ctx.input(2);
    if (t.rank() != 1 || t.dim(0) != static_cast<int64_t>(inferred.size())) {
      return invalid_argument("output_shape {} must be 1-D with {} values", t.describe(), inferred.size());
    }
    Shape out(t.data_as<int64_t>(), t.data_as<int64_t>() + inferred.size());
    for (size_t d = 0; d < out.size(); ++d) {
      if (out[d] < inferred[d] || (d < 2 && out[d] != inferred[d])) {
        return invalid_argument("output_shape {} cannot hold the unpooled shape {}", shape_to_string(out),
                                shape_to_string(inferred));
      }
    }
    return out;
  }

  DType dtype_;
  std::vector<int64_t> kernel_, strides_, pads_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_max_unpool(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType t = init.input_dtypes[0];
  if (!dtype_is_float(t)) return not_implemented("dtype {} is not supported (float types only)", dtype_name(t));
  if (init.input_dtypes[1] != DType::kI64) {
    return invalid_argument("I must be int64, got {}", dtype_name(init.input_dtypes[1]));
  }
  const DType shape_dtype = input_dtype(init, 2);
  if (shape_dtype != DType::kUndefined && shape_dtype != DType::kI64) {
    return invalid_argument("output_shape must be int64, got {}", dtype_name(shape_dtype));
  }
  ir::AttrReader reader(init.node);
  reader.require("kernel_shape");
  std::vector<int64_t> kernel = reader.get_ints("kernel_shape");
  std::vector<int64_t> strides = reader.get_ints("strides");
  std::vector<int64_t> pads = reader.get_ints("pads");
  EMBER_RETURN_IF_ERROR(reader.status());
  const size_t rank = kernel.size();
  if (rank == 0) return invalid_argument("kernel_shape must not be empty");
  if (!strides.empty() && strides.size() != rank) {
    return invalid_argument("strides has {} values, expected {}", strides.size(), rank);
  }
  if (!pads.empty() && pads.size() != 2 * rank) {
    return invalid_argument("pads has {} values, expected {}", pads.size(), 2 * rank);
  }
  for (int64_t k : kernel) {
    if (k < 1) return invalid_argument("kernel_shape must be >= 1, got {}", k);
  }
  for (int64_t s : strides) {
    if (s < 1) return invalid_argument("strides must be >= 1, got {}", s);
  }
  for (int64_t p : pads) {
    if (p < 0) return invalid_argument("pads must be >= 0, got {}", p);
  }
  return std::unique_ptr<OpKernel>(
      std::make_unique<MaxUnpoolKernel>(t, std::move(kernel), std::move(strides), std::move(pads)));
}

}  // namespace ember::kernels
