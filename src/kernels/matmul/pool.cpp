// MaxPool, AveragePool and their Global forms over 1-D to 3-D spatial dims.
#include <algorithm>
#include <limits>
#include <memory>

#include "kernels/matmul/matmul_ops.h"
#include "kernels/matmul/window.h"

namespace ember::kernels {
namespace {

// How many taps of the window at output `o` along lifted dim `d` fall in [lo, hi).
inline int64_t taps_inside(const Window3d& w, int d, int64_t o, int64_t lo, int64_t hi) {
  const int64_t start = o * w.stride[d] - w.pad_begin[d];
  int64_t count = 0;
  for (int64_t k = 0; k < w.kernel[d]; ++k) {
    const int64_t i = start + k * w.dilation[d];
    count += i >= lo && i < hi;
  }
  return count;
}

// The column-major (w, h, d) offset of the element at row-major offset `i` of a plane.
inline int64_t column_major_offset(const Window3d& w, int64_t i) {
  const int64_t iw = i % w.in[2], ih = i / w.in[2] % w.in[1], id = i / (w.in[2] * w.in[1]);
  return (iw * w.in[1] + ih) * w.in[0] + id;
}

// Calls fn(input_offset, output_offset) for every (n, c) plane.
template <typename Fn>
void for_each_plane(int64_t planes, const Window3d& w, Fn&& fn) {
  for (int64_t p = 0; p < planes; ++p) fn(p * w.in_size(), p * w.out_size());
}

template <typename T>
void max_pool_ref(int64_t planes, const Window3d& w, bool column_major, const T* x, T* y, int64_t* indices) {
  for_each_plane(planes, w, [&](int64_t in_off, int64_t out_off) {
    int64_t o = out_off;
    for (int64_t od = 0; od < w.out[0]; ++od) {
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
          T best = std::numeric_limits<T>::lowest();
          int64_t best_off = 0;  // row-major offset of the winning tap in the plane
          bool found = false;
          for_each_tap(w, od, oh, ow, [&](int64_t i, int64_t) {
            const T v = x[in_off + i];
            if (!found || static_cast<compute_t<T>>(v) > static_cast<compute_t<T>>(best)) {
              best = v;
              best_off = i;
              found = true;
            }
          });
          y[o] = best;
          if (indices) indices[o] = in_off + (column_major && found ? column_major_offset(w, best_off) : best_off);
        }
      }
    }
  });
}

template <typename T>
void average_pool_ref(int64_t planes, const Window3d& w, bool count_include_pad, const T* x, T* y) {
  using Acc = compute_t<T>;
  for_each_plane(planes, w, [&](int64_t in_off, int64_t out_off) {
    int64_t o = out_off;
    for (int64_t od = 0; od < w.out[0]; ++od) {
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
          Acc sum = Acc(0);
          for_each_tap(w, od, oh, ow, [&](int64_t i, int64_t) { sum += static_cast<Acc>(x[in_off + i]); });
          // Padding counts toward the divisor only inside the declared pads, never
          // past them (ceil_mode windows can overhang the padded input).
          int64_t count = 1;
          const int64_t pos[3] = {od, oh, ow};
          for (int d = 0; d < 3; ++d) {
            const int64_t lo = count_include_pad ? -w.pad_begin[d] : 0;
            const int64_t hi = count_include_pad ? w.in[d] + w.pad_end[d] : w.in[d];
            count *= taps_inside(w, d, pos[d], lo, hi);
          }
          y[o] = static_cast<T>(count > 0 ? sum / static_cast<Acc>(count) : Acc(0));
        }
      }
    }
  });
}

enum class PoolKind { kMax, kAverage };

class PoolKernel final : public OpKernel {
 public:
  PoolKernel(PoolKind kind, DType dtype, WindowAttrs attrs, bool global, bool flag)
      : kind_(kind), dtype_(dtype), attrs_(std::move(attrs)), global_(global), flag_(flag) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Window3d w, geometry(ctx));
    const Shape& x = ctx.input(0).shape();
    const Shape out = window_output_shape(x[0], x[1], w, x.size() - 2);
    ctx.set_output(0, dtype_, out);
    ctx.set_output(1, DType::kI64, out);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Window3d w, geometry(ctx));
    const Tensor& x = ctx.input(0);
    const int64_t planes = x.dim(0) * x.dim(1);
    if (kind_ == PoolKind::kMax) {
      int64_t* indices = ctx.has_output(1) ? ctx.output(1).data_as<int64_t>() : nullptr;
      EMBER_SWITCH_NUMERIC(dtype_, T, max_pool_ref<T>(planes, w, flag_, x.data_as<T>(), ctx.output(0).data_as<T>(), indices),
                           return internal_error("MaxPool: unexpected dtype {}", dtype_name(dtype_)));
      return Status::ok();
    }
    EMBER_SWITCH_FLOAT(dtype_, T, average_pool_ref<T>(planes, w, flag_, x.data_as<T>(), ctx.output(0).data_as<T>()),
                       return internal_error("AveragePool: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  Result<Window3d> geometry(const KernelContext& ctx) const {
    const Shape& x = ctx.input(0).shape();
    if (x.size() < 3) return invalid_argument("X {} must be N x C x spatial", shape_to_string(x));
    const std::span<const int64_t> spatial(x.begin() + 2, x.end());
    if (global_) return resolve_window(attrs_, spatial, spatial);
    return resolve_window(attrs_, spatial, attrs_.kernel_shape);
  }

  PoolKind kind_;
  DType dtype_;
  WindowAttrs attrs_;
  bool global_;
  bool flag_;  // MaxPool: storage_order (column-major indices); AveragePool: count_include_pad
};

Result<DType> pool_dtype(const KernelInit& init, PoolKind kind) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType t = init.input_dtypes[0];
  const bool ok = dtype_is_float(t) || (kind == PoolKind::kMax && (t == DType::kU8 || t == DType::kI8));
  if (!ok) return not_implemented("dtype {} is not supported", dtype_name(t));
  return t;
}

Result<std::unique_ptr<OpKernel>> create_pool(const KernelInit& init, PoolKind kind) {
  EMBER_ASSIGN_OR_RETURN(DType t, pool_dtype(init, kind));
  EMBER_ASSIGN_OR_RETURN(WindowAttrs attrs, read_window_attrs(init.node, true));
  ir::AttrReader reader(init.node);
  const int64_t flag = kind == PoolKind::kMax ? reader.get_int("storage_order", 0) : reader.get_int("count_include_pad", 0);
  EMBER_RETURN_IF_ERROR(reader.status());
  if (flag != 0 && flag != 1) {
    return invalid_argument("{} must be 0 or 1, got {}", kind == PoolKind::kMax ? "storage_order" : "count_include_pad",
                            flag);
  }
  return std::unique_ptr<OpKernel>(std::make_unique<PoolKernel>(kind, t, std::move(attrs), false, flag == 1));
}

Result<std::unique_ptr<OpKernel>> create_global_pool(const KernelInit& init, PoolKind kind) {
  EMBER_ASSIGN_OR_RETURN(DType t, pool_dtype(init, kind));
  return std::unique_ptr<OpKernel>(std::make_unique<PoolKernel>(kind, t, WindowAttrs{}, true, false));
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_max_pool(const KernelInit& init) { return create_pool(init, PoolKind::kMax); }
Result<std::unique_ptr<OpKernel>> create_average_pool(const KernelInit& init) {
  return create_pool(init, PoolKind::kAverage);
}
Result<std::unique_ptr<OpKernel>> create_global_max_pool(const KernelInit& init) {
  return create_global_pool(init, PoolKind::kMax);
}
Result<std::unique_ptr<OpKernel>> create_global_average_pool(const KernelInit& init) {
  return create_global_pool(init, PoolKind::kAverage);
}

}  // namespace ember::kernels
