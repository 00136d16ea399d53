// Softmax, LogSoftmax, Hardmax: reference kernels.
//
// Before opset 13 the input is read as a 2-D matrix [prod(shape[:axis]),
// prod(shape[axis:])] and each row is normalized; from 13 on the op normalizes
// along `axis` alone. Both are a normalization over the middle of an
// [outer, n, inner] view.
#include <cmath>
#include <limits>

#include "kernels/common/shape_util.h"
#include "kernels/reduce/reduce_ops.h"

namespace ember::kernels {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

constexpr int kPerAxisSince = 13;

// One row of `n` values `stride` apart. Subtracting the row maximum keeps exp()
// finite; a row of all -inf then gives NaN, as ONNX Runtime does.
template <SoftmaxKind kKind, typename T>
void normalize_row(const T* x, T* y, int64_t n, int64_t stride) {
  using C = compute_t<T>;
  if (n == 0) return;
  if constexpr (kKind == SoftmaxKind::kHardmax) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (static_cast<C>(x[i * stride]) > static_cast<C>(x[best * stride])) best = i;
    }
    for (int64_t i = 0; i < n; ++i) y[i * stride] = static_cast<T>(static_cast<C>(i == best ? 1 : 0));
  } else {
    C max = -std::numeric_limits<C>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(x[i * stride]);
      if (v > max || std::isnan(v)) max = v;
    }
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(std::exp(static_cast<C>(x[i * stride]) - max));
    if constexpr (kKind == SoftmaxKind::kSoftmax) {
      for (int64_t i = 0; i < n; ++i) {
        const double e = static_cast<double>(std::exp(static_cast<C>(x[i * stride]) - max));
        y[i * stride] = static_cast<T>(static_cast<C>(e / sum));
      }
    } else {
      const C log_sum = static_cast<C>(std::log(sum));
      for (int64_t i = 0; i < n; ++i) y[i * stride] = static_cast<T>(static_cast<C>(x[i * stride]) - max - log_sum);
    }
  }
}

template <SoftmaxKind kKind, typename T>
void normalize_tensor(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      normalize_row<kKind, T>(x + base, y + base, n, inner);
    }
  }
}

template <SoftmaxKind kKind>
Status normalize_dispatch(const Tensor& x, Tensor& y, int64_t outer, int64_t n, int64_t inner) {
  EMBER_SWITCH_FLOAT(x.dtype(), T, (normalize_tensor<kKind, T>(x.data_as<T>(), y.data_as<T>(), outer, n, inner));
                     return Status::ok(), break);
  return internal_error("softmax: unexpected dtype {}", dtype_name(x.dtype()));
}

class SoftmaxKernel final : public OpKernel {
 public:
  SoftmaxKernel(SoftmaxKind kind, int64_t axis, bool per_axis) : kind_(kind), axis_(axis), per_axis_(per_axis) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_RETURN_IF_ERROR(normalize_axis(axis_, x.rank(), "attribute 'axis'").status());
    ctx.set_output(0, x.dtype(), x.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1;
    int64_t n = 1;
    int64_t inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) {
        outer *= x.dim(d);
      } else if (d == axis || !per_axis_) {
        n *= x.dim(d);
      } else {
        inner *= x.dim(d);
      }
    }
    Tensor& y = ctx.output(0);
    switch (kind_) {
      case SoftmaxKind::kSoftmax: return normalize_dispatch<SoftmaxKind::kSoftmax>(x, y, outer, n, inner);
      case SoftmaxKind::kLogSoftmax: return normalize_dispatch<SoftmaxKind::kLogSoftmax>(x, y, outer, n, inner);
      case SoftmaxKind::kHardmax: return normalize_dispatch<SoftmaxKind::kHardmax>(x, y, outer, n, inner);
    }
    return internal_error("softmax: unknown kind");
  }

 private:
  SoftmaxKind kind_;
  int64_t axis_;
  bool per_axis_;
};

}  // namespace

KernelResult create_softmax(const KernelInit& init) {
  const ir::Node& node = init.node;
  SoftmaxKind kind;
  if (node.op_type == "Softmax") {
    kind = SoftmaxKind::kSoftmax;
  } else if (node.op_type == "LogSoftmax") {
    kind = SoftmaxKind::kLogSoftmax;
  } else if (node.op_type == "Hardmax") {
    kind = SoftmaxKind::kHardmax;
  } else {
    return internal_error("create_softmax does not implement {}", node.op_type);
  }
  const bool per_axis = node.opset >= kPerAxisSince;
  ir::AttrReader attrs(node);
  const int64_t axis = attrs.get_int("axis", per_axis ? -1 : 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (init.input_dtypes.size() != 1) return invalid_argument("expects 1 input, got {}", init.input_dtypes.size());
  const DType dtype = init.input_dtypes[0];
  if (dtype == DType::kString) return not_implemented("string tensors are not supported");
  if (!dtype_is_float(dtype)) {
    return invalid_argument("input 'input' must be a floating-point tensor, got {}", dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<SoftmaxKernel>(kind, axis, per_axis));
}

}  // namespace ember::kernels
