// Ops that generate their output from shapes and scalars: Range, ConstantOfShape,
// EyeLike, and Trilu (which keeps one triangle of its input).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

// The bits of `value` converted to one element of `dtype`.
uint64_t element_bits(double value, DType dtype) {
  uint64_t bits = 0;
  EMBER_SWITCH_ALL(dtype, T, {
    T v = static_cast<T>(static_cast<compute_t<T>>(value));
    std::memcpy(&bits, &v, sizeof(T));
  }, break);
  return bits;
}

class RangeKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    static constexpr const char* kNames[] = {"input 0 (start)", "input 1 (limit)", "input 2 (delta)"};
    for (size_t i = 0; i < 3; ++i) {
      if (!ctx.has_value(i)) return needs_value(i);
      if (ctx.input(i).numel() != 1) {
        return invalid_argument("{} must be a scalar, got {}", kNames[i], ctx.input(i).describe());
      }
    }
    EMBER_ASSIGN_OR_RETURN(int64_t count, element_count(ctx));
    ctx.set_output(0, ctx.input(0).dtype(), Shape{count});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    EMBER_SWITCH_NUMERIC(out.dtype(), T, {
      using C = compute_t<T>;
      C start = static_cast<C>(*ctx.input(0).data_as<T>());
      C delta = static_cast<C>(*ctx.input(2).data_as<T>());
      T* dst = out.data_as<T>();
      for (int64_t i = 0; i < out.numel(); ++i) dst[i] = static_cast<T>(static_cast<C>(start + static_cast<C>(i) * delta));
    }, break);
    return Status::ok();
  }

 private:
  // max(ceil((limit - start) / delta), 0), exact for integer types.
  static Result<int64_t> element_count(const KernelContext& ctx) {
    DType dtype = ctx.input(0).dtype();
    if (dtype_is_float(dtype)) {
      double start = read_double(ctx.input(0), 0);
      double limit = read_double(ctx.input(1), 0);
      double delta = read_double(ctx.input(2), 0);
      if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) {
        return invalid_argument("start {}, limit {} and delta {} must be finite with delta != 0", start, limit, delta);
      }
      return static_cast<int64_t>(std::max(std::ceil((limit - start) / delta), 0.0));
    }
    int64_t start = read_int(ctx.input(0), 0);
    int64_t limit = read_int(ctx.input(1), 0);
    int64_t delta = read_int(ctx.input(2), 0);
    if (delta == 0) return invalid_argument("delta must not be 0");
    int64_t diff = limit - start;
    if (delta > 0) return diff > 0 ? (diff + delta - 1) / delta : 0;
    return diff < 0 ? (diff + delta + 1) / delta : 0;
  }
};

class ConstantOfShapeKernel final : public OpKernel {
 public:
  ConstantOfShapeKernel(DType dtype, uint64_t value_bits) : dtype_(dtype), value_bits_(value_bits) {}

  Status infer(KernelContext& ctx) const override {
    if (!ctx.has_value(0)) return needs_value(0);
    EMBER_ASSIGN_OR_RETURN(IndexVec dims, read_index_input(ctx.input(0), "input 0 (shape)"));
    Shape out(dims.begin(), dims.end());
    for (int64_t d : dims) {
      if (d < 0) return invalid_argument("input 0 (shape) {} has a negative dim", shape_to_string(dims));
    }
    ctx.set_output(0, dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    fill_elements(ctx.output(0).data(), ctx.output(0).numel(), &value_bits_, dtype_size(dtype_));
    return Status::ok();
  }

 private:
  DType dtype_;
  uint64_t value_bits_;
};

class EyeLikeKernel final : public OpKernel {
 public:
  // k is clamped so that i + k cannot overflow; beyond the matrix it selects nothing anyway.
  EyeLikeKernel(DType dtype, int64_t k)
      : dtype_(dtype), k_(std::clamp(k, INT64_MIN / 4, INT64_MAX / 4)), one_bits_(element_bits(1.0, dtype)) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.rank() != 2) return invalid_argument("input 0 must be 2-D, got {}", in.describe());
    ctx.set_output(0, dtype_, in.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    std::memset(out.data(), 0, out.nbytes());
    int64_t rows = out.dim(0);
    int64_t cols = out.dim(1);
    size_t esize = dtype_size(dtype_);
    auto* dst = static_cast<std::byte*>(out.data());
    for (int64_t i = std::max(int64_t{0}, -k_); i < rows && i + k_ < cols; ++i) {
      std::memcpy(dst + static_cast<size_t>(i * cols + i + k_) * esize, &one_bits_, esize);
    }
    return Status::ok();
  }

 private:
  DType dtype_;
  int64_t k_;
  uint64_t one_bits_;
};

class TriluKernel final : public OpKernel {
 public:
  TriluKernel(bool upper, size_t elem_size) : upper_(upper), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.rank() < 2) return invalid_argument("input 0 must have rank >= 2, got {}", in.describe());
    if (ctx.has_value(1) && ctx.input(1).numel() != 1) {
      return invalid_argument("input 1 (k) must be a scalar, got {}", ctx.input(1).describe());
    }
    ctx.set_output(0, in.dtype(), in.shape());
    return Status::ok();
  }

  // Row i keeps columns j >= i + k (upper) or j <= i + k (lower); the rest is zero.
  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    int64_t k = ctx.has_input(1) ? read_int(ctx.input(1), 0) : 0;
    int64_t rows = in.dim(in.rank() - 2);
    int64_t cols = in.dim(in.rank() - 1);
    if (out.numel() == 0) return Status::ok();
    int64_t matrices = in.numel() / (rows * cols);
    const auto* src = static_cast<const std::byte*>(in.data());
    auto* dst = static_cast<std::byte*>(out.data());
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t i = 0; i < rows; ++i) {
        // Kept columns [keep_begin, keep_end), computed without overflow for huge k.
        int64_t diag = std::clamp(k, -rows - 1, cols + 1) + i;
        int64_t keep_begin = upper_ ? std::clamp(diag, int64_t{0}, cols) : 0;
        int64_t keep_end = upper_ ? cols : std::clamp(diag + 1, int64_t{0}, cols);
        size_t row = static_cast<size_t>((m * rows + i) * cols) * elem_size_;
        std::memset(dst + row, 0, static_cast<size_t>(cols) * elem_size_);
        if (keep_end > keep_begin) {
          size_t off = row + static_cast<size_t>(keep_begin) * elem_size_;
          std::memcpy(dst + off, src + off, static_cast<size_t>(keep_end - keep_begin) * elem_size_);
        }
      }
    }
    return Status::ok();
  }

 private:
  bool upper_;
  size_t elem_size_;
};

Result<DType> read_dtype_attr(ir::AttrReader& attrs, DType fallback) {
  if (!attrs.has("dtype")) return fallback;
  int64_t v = attrs.get_int("dtype", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (v == static_cast<int64_t>(DType::kString)) return not_implemented("dtype string is not supported");
  if (v < 0 || v > INT32_MAX || !dtype_is_known(static_cast<int32_t>(v))) {
    return invalid_argument("dtype {} is not a supported tensor type", v);
  }
  return static_cast<DType>(v);
}

}  // namespace

KernelResult create_range(const KernelInit& init) {
  for (size_t i = 0; i < 3; ++i) EMBER_RETURN_IF_ERROR(require_input(init, i, fmt::format("input {}", i)));
  DType dtype = init.input_dtypes[0];
  if (init.input_dtypes[1] != dtype || init.input_dtypes[2] != dtype) {
    return invalid_argument("start, limit and delta must share a dtype, got {}, {}, {}", dtype_name(dtype),
                            dtype_name(init.input_dtypes[1]), dtype_name(init.input_dtypes[2]));
  }
  if (!dtype_is_float(dtype) && !dtype_is_int(dtype)) {
    return invalid_argument("dtype {} is not numeric", dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(new RangeKernel());
}

KernelResult create_constant_of_shape(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0 (shape)"));
  if (!dtype_is_int(init.input_dtypes[0])) {
    return invalid_argument("input 0 (shape) must be an integer tensor, got {}", dtype_name(init.input_dtypes[0]));
  }
  ir::AttrReader attrs(init.node);
  const Tensor* value = attrs.get_tensor("value");
  EMBER_RETURN_IF_ERROR(attrs.status());
  DType dtype = DType::kF32;
  uint64_t bits = 0;
  if (value) {
    if (value->numel() != 1) return invalid_argument("attribute 'value' must hold one element, got {}", value->describe());
    dtype = value->dtype();
    EMBER_RETURN_IF_ERROR(check_movable_dtype(dtype, "attribute 'value'"));
    std::memcpy(&bits, value->data(), dtype_size(dtype));
  }
  return std::unique_ptr<OpKernel>(new ConstantOfShapeKernel(dtype, bits));
}

KernelResult create_eye_like(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  int64_t k = attrs.get_int("k", 0);
  EMBER_ASSIGN_OR_RETURN(DType dtype, read_dtype_attr(attrs, init.input_dtypes[0]));
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new EyeLikeKernel(dtype, k));
}

KernelResult create_trilu(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  if (has_input(init, 1) && !dtype_is_int(init.input_dtypes[1])) {
    return invalid_argument("input 1 (k) must be an integer tensor, got {}", dtype_name(init.input_dtypes[1]));
  }
  ir::AttrReader attrs(init.node);
  int64_t upper = attrs.get_int("upper", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new TriluKernel(upper != 0, dtype_size(init.input_dtypes[0])));
}

}  // namespace ember::kernels::tensor_ops
