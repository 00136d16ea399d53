// OneHot, NonZero, Compress, CumSum and CumProd. NonZero and Compress have output shapes
// that depend on input values, so their infer() needs those values.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ir/graph.h"
#include "kernels/tensor/gather_scatter_common.h"

namespace ember::kernels::gather_scatter {
namespace {

// Calls f(flat_index) for every element of `t` that is not zero (NaN counts as
// nonzero, -0.0 as zero).
template <typename F>
void for_each_nonzero(const Tensor& t, F&& f) {
  const int64_t n = t.numel();
  EMBER_SWITCH_ALL(t.dtype(), T, {
    const T* p = t.data_as<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (static_cast<compute_t<T>>(p[i]) != compute_t<T>(0)) f(i);
    }
  }, break);
}

class OneHotKernel final : public OpKernel {
 public:
  explicit OneHotKernel(int64_t axis) : axis_(axis) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& indices = ctx.input(0);
    if (!ctx.has_value(1)) return needs_value(1);
    const Tensor& depth_t = ctx.input(1);
    const Tensor& values = ctx.input(2);
    if (depth_t.numel() != 1) return invalid_argument("OneHot depth must hold one value, got {}", depth_t.describe());
    const double depth = read_double(depth_t, 0);
    if (!(depth >= 0)) return invalid_argument("OneHot depth must be >= 0, got {}", depth);
    if (values.numel() != 2) {
      return invalid_argument("OneHot values must hold [off, on], got {}", values.describe());
    }
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, indices.rank() + 1, "OneHot axis"));
    Shape out(indices.shape().begin(), indices.shape().end());
    out.insert(out.begin() + axis, static_cast<int64_t>(depth));
    ctx.set_output(0, values.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& indices = ctx.input(0);
    const Tensor& values = ctx.input(2);
    Tensor& out = ctx.output(0);
    const int64_t axis = axis_ < 0 ? axis_ + out.rank() : axis_;
    const int64_t depth = out.dim(axis);
    const int64_t inner = dims_product(indices.shape(), axis, indices.rank());
    const int64_t count = indices.numel();
    visit_word_type(dtype_size(values.dtype()), [&]<typename W>() {
      const W off = values.data_as<W>()[0];
      const W on = values.data_as<W>()[1];
      W* dst = out.data_as<W>();
      std::fill(dst, dst + out.numel(), off);
      EMBER_SWITCH_NUMERIC(indices.dtype(), T, {
        const T* idx = indices.data_as<T>();
        for (int64_t j = 0; j < count; ++j) {
          const double v = static_cast<double>(static_cast<compute_t<T>>(idx[j]));
          // Out-of-range indices give an all-off row, as the spec asks.
          if (!(v >= static_cast<double>(-depth) && v < static_cast<double>(depth))) continue;
          int64_t i = static_cast<int64_t>(v);
          if (i < 0) i += depth;
          const int64_t o = j / inner;
          dst[(o * depth + i) * inner + j % inner] = on;
        }
      }, break);
    });
    return Status::ok();
  }

 private:
  int64_t axis_;
};

class NonZeroKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    if (!ctx.has_value(0)) return needs_value(0);
    const Tensor& x = ctx.input(0);
    int64_t nnz = 0;
    for_each_nonzero(x, [&](int64_t) { ++nnz; });
    // A scalar is read as a 1-D tensor of one element, as numpy.nonzero does.
    ctx.set_output(0, DType::kI64, Shape{std::max<int64_t>(x.rank(), 1), nnz});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t nnz = out.dim(1);
    const Shape strides = contiguous_strides(x.shape());
    int64_t* dst = out.data_as<int64_t>();
    int64_t k = 0;
    for_each_nonzero(x, [&](int64_t flat) {
      if (x.rank() == 0) dst[k] = 0;
      for (int64_t d = 0; d < x.rank(); ++d) {
        const int64_t s = strides[static_cast<size_t>(d)];
        dst[d * nnz + k] = (flat / s) % x.dim(d);
      }
      ++k;
    });
    return Status::ok();
  }
};

class CompressKernel final : public OpKernel {
 public:
  CompressKernel(bool has_axis, int64_t axis) : has_axis_(has_axis), axis_(axis) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (!ctx.has_value(1)) return needs_value(1);
    const Tensor& cond = ctx.input(1);
    if (cond.rank() != 1) return invalid_argument("Compress condition must be 1-D, got {}", cond.describe());
    int64_t axis = 0;
    if (has_axis_) {
      EMBER_ASSIGN_OR_RETURN(axis, normalize_axis(axis_, x.rank(), "Compress axis"));
    }
    const int64_t dim = has_axis_ ? x.dim(axis) : x.numel();
    const bool* c = cond.data_as<bool>();
    const int64_t kept = std::count(c, c + std::min(dim, cond.numel()), true);
    Shape out{kept};
    if (has_axis_) {
      out = x.shape();
      out[static_cast<size_t>(axis)] = kept;
    }
    ctx.set_output(0, x.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& cond = ctx.input(1);
    const int64_t axis = !has_axis_ ? 0 : axis_ < 0 ? axis_ + x.rank() : axis_;
    const int64_t outer = has_axis_ ? dims_product(x.shape(), 0, axis) : 1;
    const int64_t dim = has_axis_ ? x.dim(axis) : x.numel();
    const int64_t inner = has_axis_ ? dims_product(x.shape(), axis + 1, x.rank()) : 1;
    // Condition entries past the axis length are ignored, as in ONNX Runtime.
    const int64_t used = std::min(dim, cond.numel());
    const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(x.dtype());
    const bool* c = cond.data_as<bool>();
    const auto* src = static_cast<const uint8_t*>(x.data());
    auto* dst = static_cast<uint8_t*>(ctx.output(0).data());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < used; ++j) {
        if (!c[j]) continue;
        std::memcpy(dst, src + static_cast<size_t>(o * dim + j) * row_bytes, row_bytes);
        dst += row_bytes;
      }
    }
    return Status::ok();
  }

 private:
  bool has_axis_;
  int64_t axis_;
};

enum class ScanOp { kSum, kProduct };

// Floats accumulate in double; integers in 64 bits, products unsigned so that an
// overflow wraps as it does in the element type.
template <typename T, ScanOp kOp>
using ScanAcc = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double,
                                   std::conditional_t<std::is_signed_v<T> && kOp == ScanOp::kSum, int64_t, uint64_t>>;

template <ScanOp kOp, typename T>
void cumulative_scan(const T* src, T* dst, int64_t outer, int64_t dim, int64_t inner, bool exclusive, bool reverse) {
  using Acc = ScanAcc<T, kOp>;
  const int64_t step = reverse ? -inner : inner;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t pos = o * dim * inner + i + (reverse ? (dim - 1) * inner : 0);
      Acc acc = kOp == ScanOp::kSum ? Acc(0) : Acc(1);
      for (int64_t j = 0; j < dim; ++j, pos += step) {
        const auto v = static_cast<Acc>(static_cast<compute_t<T>>(src[pos]));
        if (exclusive) dst[pos] = static_cast<T>(static_cast<compute_t<T>>(acc));
        if constexpr (kOp == ScanOp::kSum) {
          acc += v;
        } else {
          acc *= v;
        }
        if (!exclusive) dst[pos] = static_cast<T>(static_cast<compute_t<T>>(acc));
      }
    }
  }
}

// CumSum and CumProd: an inclusive or exclusive scan along a run-time axis.
template <ScanOp kOp>
class CumulativeKernel final : public OpKernel {
 public:
  CumulativeKernel(bool exclusive, bool reverse) : exclusive_(exclusive), reverse_(reverse) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (ctx.has_value(1)) EMBER_RETURN_IF_ERROR(read_axis(ctx).status());
    ctx.set_output(0, x.dtype(), x.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    // The axis is a run-time input, so only here can its value be checked.
    EMBER_ASSIGN_OR_RETURN(int64_t axis, read_axis(ctx));
    const int64_t outer = dims_product(x.shape(), 0, axis);
    const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
    EMBER_SWITCH_NUMERIC(x.dtype(), T, cumulative_scan<kOp>(x.data_as<T>(), ctx.output(0).data_as<T>(), outer,
                                                            x.dim(axis), inner, exclusive_, reverse_), break);
    return Status::ok();
  }

 private:
  static constexpr const char* kAxisName = kOp == ScanOp::kSum ? "CumSum axis" : "CumProd axis";

  static Result<int64_t> read_axis(const KernelContext& ctx) {
    const Tensor& a = ctx.input(1);
    if (a.numel() != 1) return invalid_argument("{} must hold one value, got {}", kAxisName, a.describe());
    return normalize_axis(read_int(a, 0), ctx.input(0).rank(), kAxisName);
  }

  bool exclusive_;
  bool reverse_;
};

template <ScanOp kOp>
KernelResult create_cumulative(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  EMBER_RETURN_IF_ERROR(check_numeric_dtype(init.input_dtypes[0], "x"));
  EMBER_RETURN_IF_ERROR(check_index_dtype(init.input_dtypes[1], "axis"));
  ir::AttrReader attrs(init.node);
  const int64_t exclusive = attrs.get_int("exclusive", 0);
  const int64_t reverse = attrs.get_int("reverse", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new CumulativeKernel<kOp>(exclusive != 0, reverse != 0));
}

}  // namespace

KernelResult create_one_hot(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  EMBER_RETURN_IF_ERROR(check_numeric_dtype(init.input_dtypes[0], "indices"));
  EMBER_RETURN_IF_ERROR(check_numeric_dtype(init.input_dtypes[1], "depth"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[2], "values"));
  ir::AttrReader attrs(init.node);
  int64_t axis = attrs.get_int("axis", -1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new OneHotKernel(axis));
}

KernelResult create_non_zero(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "X"));
  return std::unique_ptr<OpKernel>(new NonZeroKernel());
}

KernelResult create_compress(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input"));
  if (init.input_dtypes[1] != DType::kBool) {
    return invalid_argument("Compress condition must be bool, got {}", dtype_name(init.input_dtypes[1]));
  }
  ir::AttrReader attrs(init.node);
  const bool has_axis = attrs.has("axis");
  int64_t axis = attrs.get_int("axis", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new CompressKernel(has_axis, axis));
}

KernelResult create_cum_sum(const KernelInit& init) { return create_cumulative<ScanOp::kSum>(init); }

KernelResult create_cum_prod(const KernelInit& init) { return create_cumulative<ScanOp::kProduct>(init); }

}  // namespace ember::kernels::gather_scatter
