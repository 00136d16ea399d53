// TopK, ArgMax and ArgMin: selections along one axis. Ordering follows numpy and
// ONNX Runtime: NaN ranks above every number, ties go to the lower index.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "kernels/tensor/gather_scatter_common.h"

namespace ember::kernels::gather_scatter {
namespace {

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// True when (a, ia) ranks before (b, ib) in TopK's output order.
template <typename C>
bool ranks_before(C a, int64_t ia, C b, int64_t ib, bool largest) {
  const bool na = is_nan(a);
  const bool nb = is_nan(b);
  if (na || nb) {
    if (na && nb) return ia < ib;
    return largest ? na : nb;
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

// Selects the k best of `dim` values spaced `stride` apart. `heap` holds k
// contiguous slots; writes values and indices `out_stride` apart.
template <typename T>
void top_k_row(const T* src, int64_t dim, int64_t stride, int64_t k, bool largest, int64_t* heap, T* values,
               int64_t* indices, int64_t out_stride) {
  using C = compute_t<T>;
  auto value = [&](int64_t i) { return static_cast<C>(src[i * stride]); };
  // std heaps keep the greatest element on top; with "ranks before" as the order
  // the top is the worst of the k kept so far.
  auto cmp = [&](int64_t a, int64_t b) { return ranks_before(value(a), a, value(b), b, largest); };
  int64_t size = 0;
  for (int64_t i = 0; i < dim && k > 0; ++i) {
    if (size < k) {
      heap[size++] = i;
      std::push_heap(heap, heap + size, cmp);
    } else if (cmp(i, heap[0])) {
      std::pop_heap(heap, heap + size, cmp);
      heap[size - 1] = i;
      std::push_heap(heap, heap + size, cmp);
    }
  }
  std::sort_heap(heap, heap + size, cmp);
  for (int64_t j = 0; j < k; ++j) {
    values[j * out_stride] = src[heap[j] * stride];
    indices[j * out_stride] = heap[j];
  }
}

class TopKKernel final : public OpKernel {
 public:
  TopKKernel(int64_t axis, int64_t k_attr, bool largest) : axis_(axis), k_attr_(k_attr), largest_(largest) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, x.rank(), "TopK axis"));
    int64_t k = k_attr_;
    if (k < 0) {
      if (!ctx.has_value(1)) return needs_value(1);
      const Tensor& kt = ctx.input(1);
      if (kt.numel() != 1) return invalid_argument("TopK K must hold one value, got {}", kt.describe());
      k = read_int(kt, 0);
    }
    if (k < 0 || k > x.dim(axis)) {
      return invalid_argument("TopK k {} is out of range for axis {} of size {}", k, axis, x.dim(axis));
    }
    Shape out = x.shape();
    out[static_cast<size_t>(axis)] = k;
    ctx.set_output(0, x.dtype(), out);
    ctx.set_output(1, DType::kI64, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    const int64_t dim = x.dim(axis);
    const int64_t k = ctx.output(0).dim(axis);
    const int64_t outer = dims_product(x.shape(), 0, axis);
    const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
    int64_t* indices = ctx.output(1).data_as<int64_t>();
    // On the last axis (the sampling case) the index output itself is the heap;
    // other axes write it strided and need k slots of scratch.
    std::vector<int64_t> scratch(inner == 1 ? 0 : static_cast<size_t>(k));
    EMBER_SWITCH_NUMERIC(x.dtype(), T, {
      const T* src = x.data_as<T>();
      T* values = ctx.output(0).data_as<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t out_base = o * k * inner + i;
          int64_t* heap = inner == 1 ? indices + out_base : scratch.data();
          top_k_row(src + o * dim * inner + i, dim, inner, k, largest_, heap, values + out_base,
                    indices + out_base, inner);
        }
      }
    }, break);
    return Status::ok();
  }

 private:
  int64_t axis_;
  int64_t k_attr_;  // opset < 10 carries k as an attribute; -1 when it is input 1
  bool largest_;
};

class ArgExtremeKernel final : public OpKernel {
 public:
  ArgExtremeKernel(bool is_max, int64_t axis, bool keepdims, bool select_last)
      : is_max_(is_max), axis_(axis), keepdims_(keepdims), select_last_(select_last) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const char* op = is_max_ ? "ArgMax" : "ArgMin";
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, x.rank(), is_max_ ? "ArgMax axis" : "ArgMin axis"));
    Shape out = x.shape();
    const int64_t others = dims_product(x.shape(), 0, axis) * dims_product(x.shape(), axis + 1, x.rank());
    if (x.dim(axis) == 0 && others != 0) {
      return invalid_argument("{} over axis {} of size 0 in {}", op, axis, x.describe());
    }
    if (keepdims_) {
      out[static_cast<size_t>(axis)] = 1;
    } else {
      out.erase(out.begin() + axis);
    }
    ctx.set_output(0, DType::kI64, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    const int64_t dim = x.dim(axis);
    const int64_t outer = dims_product(x.shape(), 0, axis);
    const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
    int64_t* dst = ctx.output(0).data_as<int64_t>();
    EMBER_SWITCH_NUMERIC(x.dtype(), T, {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          dst[o * inner + i] = arg_extreme(x.data_as<T>() + o * dim * inner + i, dim, inner);
        }
      }
    }, break);
    return Status::ok();
  }

 private:
  // The first NaN wins (the last one with select_last_index), as in numpy.
  template <typename T>
  int64_t arg_extreme(const T* src, int64_t dim, int64_t stride) const {
    using C = compute_t<T>;
    int64_t best = 0;
    C best_v = static_cast<C>(src[0]);
    if (is_nan(best_v) && !select_last_) return 0;
    for (int64_t j = 1; j < dim; ++j) {
      const C v = static_cast<C>(src[j * stride]);
      bool take;
      if (is_nan(v)) {
        take = select_last_ || !is_nan(best_v);
      } else if (is_nan(best_v)) {
        take = false;
      } else {
        take = is_max_ ? (v > best_v || (select_last_ && v == best_v)) : (v < best_v || (select_last_ && v == best_v));
      }
      if (take) {
        best = j;
        best_v = v;
        if (is_nan(v) && !select_last_) break;
      }
    }
    return best;
  }

  bool is_max_;
  int64_t axis_;
  bool keepdims_;
  bool select_last_;
};

KernelResult create_arg_extreme(const KernelInit& init, bool is_max) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(check_numeric_dtype(init.input_dtypes[0], "data"));
  ir::AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  const int64_t keepdims = attrs.get_int("keepdims", 1);
  const int64_t select_last = attrs.get_int("select_last_index", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new ArgExtremeKernel(is_max, axis, keepdims != 0, select_last != 0));
}

}  // namespace

KernelResult create_top_k(const KernelInit& init) {
  const bool k_is_input = init.node.opset >= 10;
  EMBER_RETURN_IF_ERROR(require_inputs(init, k_is_input ? 2 : 1));
  EMBER_RETURN_IF_ERROR(check_numeric_dtype(init.input_dtypes[0], "X"));
  if (k_is_input && init.input_dtypes[1] != DType::kI64) {
    return invalid_argument("TopK K must be int64, got {}", dtype_name(init.input_dtypes[1]));
  }
  ir::AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  const int64_t largest = attrs.get_int("largest", 1);
  int64_t k = -1;
  if (!k_is_input) {
    attrs.require("k");
    k = attrs.get_int("k", 0);
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (!k_is_input && k < 0) return invalid_argument("TopK attribute k must be >= 0, got {}", k);
  return std::unique_ptr<OpKernel>(new TopKKernel(axis, k, largest != 0));
}

KernelResult create_arg_max(const KernelInit& init) { return create_arg_extreme(init, true); }
KernelResult create_arg_min(const KernelInit& init) { return create_arg_extreme(init, false); }

}  // namespace ember::kernels::gather_scatter
