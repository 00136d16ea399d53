// Binarizer and ArrayFeatureExtractor.
#include <cstring>
#include <string>

#include "kernels/ml/ml_ops.h"

namespace ember::kernels::ml_ops {
namespace {

// Y = 1 where X > threshold, else 0 (NaN gives 0), in X's dtype.
class BinarizerKernel final : public OpKernel {
 public:
  explicit BinarizerKernel(double threshold) : threshold_(threshold) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, ctx.input(0).dtype(), ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    EMBER_SWITCH_NUMERIC(x.dtype(), T, {
      const T* in = x.data_as<T>();
      T* out = y.data_as<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        out[i] = static_cast<double>(static_cast<compute_t<T>>(in[i])) > threshold_ ? T(1) : T(0);
      }
    }, return internal_error("Binarizer on {}", x.describe()));
    return Status::ok();
  }

 private:
  double threshold_;
};

// Z = X[..., indices]: the last axis gathered at the flattened indices; a 1-D X
// gives [1, K], as ONNX Runtime does.
class ArrayFeatureExtractorKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() == 0) return invalid_argument("X must have at least one dimension, got {}", x.describe());
    Shape shape = x.rank() == 1 ? Shape{1} : x.shape();
    if (x.rank() > 1) shape.pop_back();
    shape.push_back(ctx.input(1).numel());
    ctx.set_output(0, x.dtype(), std::move(shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const int64_t last = x.dim(x.rank() - 1);
    const int64_t k = indices.numel();
    const int64_t rows = last == 0 ? 0 : x.numel() / last;
    const int64_t* idx = indices.data_as<int64_t>();
    for (int64_t j = 0; j < k; ++j) {
      if (idx[j] < 0 || idx[j] >= last) {
        return invalid_argument("index {} at position {} is out of range for the last axis of X {}", idx[j], j,
                                x.describe());
      }
    }
    Tensor& z = ctx.output(0);
    if (x.dtype() == DType::kString) {
      const auto* in = x.data_as<std::string>();
      auto* out = z.data_as<std::string>();
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < k; ++j) out[r * k + j] = in[r * last + idx[j]];
      }
      return Status::ok();
    }
    const size_t esize = dtype_size(x.dtype());
    const auto* in = static_cast<const std::byte*>(x.data());
    auto* out = static_cast<std::byte*>(z.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < k; ++j) {
        std::memcpy(out + static_cast<size_t>(r * k + j) * esize, in + static_cast<size_t>(r * last + idx[j]) * esize,
                    esize);
      }
    }
    return Status::ok();
  }
};

}  // namespace

KernelResult create_binarizer(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType t = init.input_dtypes[0];
  if (t != DType::kF32 && t != DType::kF64 && t != DType::kI64 && t != DType::kI32) {
    return invalid_argument("X must be float32, float64, int64 or int32, got {}", dtype_name(t));
  }
  ir::AttrReader attrs(init.node);
  const double threshold = attrs.get_float("threshold", 0.0f);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(std::make_unique<BinarizerKernel>(threshold));
}

KernelResult create_array_feature_extractor(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType t = init.input_dtypes[0];
  if (t != DType::kF32 && t != DType::kF64 && t != DType::kI64 && t != DType::kI32 && t != DType::kString) {
    return invalid_argument("X must be float32, float64, int64, int32 or string, got {}", dtype_name(t));
  }
  if (init.input_dtypes[1] != DType::kI64) {
    return invalid_argument("Y (the indices) must be int64, got {}", dtype_name(init.input_dtypes[1]));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<ArrayFeatureExtractorKernel>());
}

}  // namespace ember::kernels::ml_ops
