// QuantizeLinear, DequantizeLinear (per tensor, per axis and blocked) and
// DynamicQuantizeLinear, computed as ONNX Runtime's MLAS does:
//   Q:  y = round_half_even(clamp(x / scale, qmin - zp, qmax - zp)) + zp in f32
//       (a NaN quotient clamps to qmin, as MAXPS returns its second operand);
//   DQ: y = float(int32(x) - int32(zp)) * scale in f32, rounded once to the
//       scale's type.
// The narrow types (int4, int2, float8, float4) follow the same formulas; to a
// float type Q rounds x / scale + zp by Cast's rules (with `saturate`).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "base/narrow_types.h"
#include "kernels/common/shape_util.h"
#include "kernels/quant/qgemm.h"
#include "kernels/quant/quant_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

// Elements per parallel_for chunk. Measured on per-tensor f32 -> u8 through
// the op (best of 300, this Zen 5 VM): 16384 elements take 2.0 us, 262144 take
// 31.6 us on one thread (the AVX-512 division bounds it). A second thread gained
// nothing at 64Ki-256Ki elements on this 2-vCPU machine, where compute-bound
// kernels do not scale; the chunk is kept small enough to split on real cores.
constexpr int64_t kQuantGrain = 16384;

// Scale (and zero point) of element (o, a, i) of x viewed as [outer, axis_len,
// inner]: o * s_outer + (a / block) * s_axis + i * s_inner.
struct QuantLayout {
  int64_t outer = 1, axis_len = 1, inner = 1;
  int64_t s_outer = 0, s_axis = 0, s_inner = 0, block = 1;
};

Result<QuantLayout> quant_layout(const Shape& x, const Tensor& scale, const Tensor* zp, int64_t axis_attr,
                                 int64_t block_size) {
  const bool single = scale.numel() == 1 && scale.rank() <= 1;  // [] and [1] both mean per tensor
  if (zp && zp->shape() != scale.shape() && !(single && zp->numel() == 1 && zp->rank() <= 1)) {
    return invalid_argument("zero point {} and scale {} differ in shape", zp->describe(), scale.describe());
  }
  QuantLayout l;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (block_size <= 0 && scale.rank() <= 1 && scale.numel() == 1) {
    l.inner = shape_numel(x);
    return l;
  }
  EMBER_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(axis_attr, rank));
  const auto ax = static_cast<size_t>(axis);
  for (size_t d = 0; d < x.size(); ++d) (d < ax ? l.outer : d > ax ? l.inner : l.axis_len) *= x[d];
  if (block_size <= 0) {
    if (scale.rank() != 1 || scale.numel() != l.axis_len) {
      return invalid_argument("scale {} must have one value per index of axis {} ({})", scale.describe(), axis,
                              l.axis_len);
    }
    l.s_axis = 1;
    return l;
  }
  const int64_t blocks = (l.axis_len + block_size - 1) / block_size;
  bool ok = scale.rank() == rank;
  for (size_t d = 0; ok && d < x.size(); ++d) ok = scale.shape()[d] == (d == ax ? blocks : x[d]);
  if (!ok) {
    return invalid_argument("scale {} does not match input {} in blocks of {} along axis {}", scale.describe(),
                            shape_to_string(x), block_size, axis);
  }
  l.block = block_size;
  l.s_inner = 1;
  l.s_axis = l.inner;
  l.s_outer = blocks * l.inner;
  return l;
}

float to_f32(float v) { return v; }
float to_f32(Float16 v) { return static_cast<float>(v); }
float to_f32(BFloat16 v) { return static_cast<float>(v); }
float to_f32(int32_t v) { return static_cast<float>(v); }

template <typename TY>
TY quantize_one(float x, float scale, int32_t zp) {
  const float lo = static_cast<float>(static_cast<int32_t>(std::numeric_limits<TY>::lowest()) - zp);
  const float hi = static_cast<float>(static_cast<int32_t>(std::numeric_limits<TY>::max()) - zp);
  float v = x / scale;
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return static_cast<TY>(static_cast<int32_t>(std::nearbyint(v)) + zp);
}

// Calls fn(x_begin, count, scale_index) over runs of x that share one scale
// (per tensor or per axis: s_inner == 0), split over threads.
template <typename Fn>
void for_each_run(const QuantLayout& l, Fn&& fn) {
  if (l.outer == 1 && l.axis_len == 1) {
    threading::parallel_for(l.inner, kQuantGrain, [&](int64_t b, int64_t e) { fn(b, e - b, int64_t{0}); });
    return;
  }
  const int64_t row = l.axis_len * l.inner;
  const int64_t grain = std::max<int64_t>(1, kQuantGrain / std::max<int64_t>(row, 1));
  threading::parallel_for(l.outer, grain, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t a = 0; a < l.axis_len; ++a) fn((o * l.axis_len + a) * l.inner, l.inner, o * l.s_outer + a * l.s_axis);
    }
  });
}

// Calls fn(x_index, scale_index) over x, split over threads by outer rows.
template <typename Fn>
void for_each_quant(const QuantLayout& l, Fn&& fn) {
  if (l.s_inner == 0) {
    for_each_run(l, [&](int64_t x0, int64_t count, int64_t si) {
      for (int64_t i = 0; i < count; ++i) fn(x0 + i, si);
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kQuantGrain / std::max<int64_t>(l.axis_len * l.inner, 1));
  threading::parallel_for(l.outer, grain, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t a = 0; a < l.axis_len; ++a) {
        const int64_t base = o * l.s_outer + (a / l.block) * l.s_axis;
        const int64_t x0 = (o * l.axis_len + a) * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) fn(x0 + i, base + i * l.s_inner);
      }
    }
  });
}

// The zero point of a narrow type, as a value.
double narrow_zp_at(const Tensor* zp, int64_t i) {
  return zp ? narrow_to_double(zp->dtype(), narrow_code_at(zp->data(), zp->dtype(), i)) : 0.0;
}

int32_t zp_at(const Tensor* zp, int64_t i) {
  if (!zp) return 0;
  if (dtype_is_narrow(zp->dtype())) return static_cast<int32_t>(narrow_zp_at(zp, i));
  int32_t v = 0;
  EMBER_SWITCH_INT(zp->dtype(), T, { v = static_cast<int32_t>(zp->data_as<T>()[i]); }, break);
  return v;
}

float scale_at(const Tensor& s, int64_t i) {
  if (s.dtype() == DType::kF16) return static_cast<float>(s.data_as<Float16>()[i]);
  if (s.dtype() == DType::kBF16) return static_cast<float>(s.data_as<BFloat16>()[i]);
  return s.data_as<float>()[i];
}

const Tensor* zero_point_of(const KernelContext& ctx) { return ctx.has_input(2) ? &ctx.input(2) : nullptr; }

// The layout of (x, scale, zero point), the inputs 0..2 of both Q and DQ.
Result<QuantLayout> layout_of(const KernelContext& ctx, int64_t axis, int64_t block) {
  return quant_layout(ctx.input(0).shape(), ctx.input(1), zero_point_of(ctx), axis, block);
}

class QuantizeKernel final : public OpKernel {
 public:
  QuantizeKernel(DType x_type, DType scale_type, DType y_type, int64_t axis, int64_t block, bool saturate)
      : x_type_(x_type), y_type_(y_type), axis_(axis), block_(block), saturate_(saturate),
        simd_(x_type == DType::kF32 && scale_type == DType::kF32 && (y_type == DType::kU8 || y_type == DType::kI8)),
        table_(&quant::qgemm_table()) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(layout_of(ctx, axis_, block_).status());
    ctx.set_output(0, y_type_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor* zp = zero_point_of(ctx);
    EMBER_ASSIGN_OR_RETURN(QuantLayout l, layout_of(ctx, axis_, block_));
    Tensor& y = ctx.output(0);
    if (dtype_is_narrow(y_type_)) {
      quantize_narrow(x, scale, zp, l, y);
      return Status::ok();
    }
    if (simd_ && l.s_inner == 0) {
      const float* xs = x.data_as<float>();
      auto* ys = static_cast<uint8_t*>(y.data());
      const bool is_signed = y_type_ == DType::kI8;
      for_each_run(l, [&](int64_t x0, int64_t count, int64_t si) {
        table_->f32_quantize(xs + x0, ys + x0, count, scale.data_as<float>()[si], zp_at(zp, si), is_signed);
      });
      return Status::ok();
    }
    const auto go = [&]<typename TX, typename TY>() {
      const TX* xs = x.data_as<TX>();
      TY* ys = y.data_as<TY>();
      for_each_quant(l, [&](int64_t xi, int64_t si) {
        ys[xi] = quantize_one<TY>(to_f32(xs[xi]), scale_at(scale, si), zp_at(zp, si));
      });
    };
    const auto by_y = [&]<typename TX>() {
      switch (y_type_) {
        case DType::kU8: go.template operator()<TX, uint8_t>(); break;
        case DType::kI8: go.template operator()<TX, int8_t>(); break;
        case DType::kU16: go.template operator()<TX, uint16_t>(); break;
        default: go.template operator()<TX, int16_t>(); break;
      }
    };
    switch (x_type_) {
      case DType::kF32: by_y.template operator()<float>(); break;
      case DType::kF16: by_y.template operator()<Float16>(); break;
      case DType::kBF16: by_y.template operator()<BFloat16>(); break;
      default: by_y.template operator()<int32_t>(); break;
    }
    return Status::ok();
  }

 private:
  // One thread: packed outputs share bytes between neighbouring elements.
  void quantize_narrow(const Tensor& x, const Tensor& scale, const Tensor* zp, const QuantLayout& l, Tensor& y) const {
    const NarrowCastOptions options{saturate_, E8M0Rounding::kUp};
    const bool to_int = !narrow_is_float(y_type_);
    const auto lo = static_cast<float>(narrow_int_min(y_type_)), hi = static_cast<float>(narrow_int_max(y_type_));
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t a = 0; a < l.axis_len; ++a) {
        const int64_t base = o * l.s_outer + (a / l.block) * l.s_axis;
        const int64_t x0 = (o * l.axis_len + a) * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) {
          const int64_t si = base + i * l.s_inner;
          const float q = static_cast<float>(read_double(x, x0 + i)) / scale_at(scale, si);
          const auto zpv = static_cast<float>(narrow_zp_at(zp, si));
          uint8_t code;
          if (to_int) {
            const float v = std::nearbyint(std::clamp(q, lo - zpv, hi - zpv)) + zpv;
            code = narrow_from_int(y_type_, std::isnan(q) ? static_cast<int64_t>(lo) : static_cast<int64_t>(v), options);
          } else {
            code = narrow_from_double(y_type_, q + zpv, options);
          }
          set_narrow_code(y.data(), y_type_, x0 + i, code);
        }
      }
    }
  }

  DType x_type_, y_type_;
  int64_t axis_, block_;
  bool saturate_;  // float8 outputs: out-of-range values to the largest finite value
  bool simd_;  // f32 x and scale, 8-bit y: the table's microkernel on runs of one scale
  const quant::QGemmTable* table_;
};

class DequantizeKernel final : public OpKernel {
 public:
  DequantizeKernel(DType x_type, DType y_type, int64_t axis, int64_t block)
      : x_type_(x_type), y_type_(y_type), axis_(axis), block_(block) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(layout_of(ctx, axis_, block_).status());
    ctx.set_output(0, y_type_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor* zp = zero_point_of(ctx);
    EMBER_ASSIGN_OR_RETURN(QuantLayout l, layout_of(ctx, axis_, block_));
    Tensor& y = ctx.output(0);
    const auto store = [&](int64_t xi, float v) {
      if (y_type_ == DType::kF16) y.data_as<Float16>()[xi] = Float16(v);
      else if (y_type_ == DType::kBF16) y.data_as<BFloat16>()[xi] = BFloat16(v);
      else y.data_as<float>()[xi] = v;
    };
    if (dtype_is_narrow(x_type_)) {
      for_each_quant(l, [&](int64_t xi, int64_t si) {
        const double xv = narrow_to_double(x_type_, narrow_code_at(x.data(), x_type_, xi));
        store(xi, static_cast<float>(xv - narrow_zp_at(zp, si)) * scale_at(scale, si));
      });
      return Status::ok();
    }
    EMBER_SWITCH_INT(x_type_, TX, {
      const TX* xs = x.data_as<TX>();
      for_each_quant(l, [&](int64_t xi, int64_t si) {
        const float v = static_cast<float>(static_cast<int32_t>(xs[xi]) - zp_at(zp, si)) * scale_at(scale, si);
        if (y_type_ == DType::kF16) y.data_as<Float16>()[xi] = Float16(v);
        else if (y_type_ == DType::kBF16) y.data_as<BFloat16>()[xi] = BFloat16(v);
        else y.data_as<float>()[xi] = v;
      });
    }, break);
    return Status::ok();
  }

 private:
  DType x_type_, y_type_;
  int64_t axis_, block_;
};

// y_scale = (max(x, 0) - min(x, 0)) / 255 (1 when that range is empty, as ONNX
// Runtime does instead of dividing by zero), y_zero_point = round_half_even(
// clamp(0 - min / y_scale, 0, 255)), then Q with those.
class DynamicQuantizeKernel final : public OpKernel {
 public:
  DynamicQuantizeKernel() : table_(&quant::qgemm_table()) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, DType::kU8, ctx.input(0).shape());
    ctx.set_output(1, DType::kF32, Shape{});
    ctx.set_output(2, DType::kU8, Shape{});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const float* xs = x.data_as<float>();
    const int64_t n = x.numel();
    float lo = 0.0f, hi = 0.0f;
    table_->f32_range(xs, n, &lo, &hi);
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float initial_zp = 0.0f - lo / scale;
    const float clamped = std::max(0.0f, std::min(255.0f, initial_zp));
    const auto zp = static_cast<uint8_t>(std::nearbyint(clamped));
    uint8_t* ys = ctx.output(0).data_as<uint8_t>();
    threading::parallel_for(n, kQuantGrain, [&](int64_t b, int64_t e) {
      table_->f32_quantize(xs + b, ys + b, e - b, scale, zp, false);
    });
    if (ctx.has_output(1)) *ctx.output(1).data_as<float>() = scale;
    if (ctx.has_output(2)) *ctx.output(2).data_as<uint8_t>() = zp;
    return Status::ok();
  }

 private:
  const quant::QGemmTable* table_;
};

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

}  // namespace

Result<std::unique_ptr<OpKernel>> create_quantize_linear(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  ir::AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 1), block = attrs.get_int("block_size", 0);
  const int64_t out_attr = attrs.get_int("output_dtype", 0);
  const bool saturate = attrs.get_int("saturate", 1) != 0;
  const int64_t precision = attrs.get_int("precision", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  const DType x = init.input_dtypes[0], s = init.input_dtypes[1];
  const bool has_zp = init.input_dtypes.size() > 2 && init.input_dtypes[2] != DType::kUndefined;
  const DType y = has_zp ? init.input_dtypes[2] : out_attr != 0 ? static_cast<DType>(out_attr) : DType::kU8;
  if (has_zp && out_attr != 0 && static_cast<DType>(out_attr) != y) {
    return invalid_argument("attribute output_dtype is {} but input 'y_zero_point' is {}; they must match", out_attr,
                            dtype_name(y));
  }
  if ((!is_float(x) && x != DType::kI32) || !is_float(s)) {
    return not_implemented("QuantizeLinear of {} with {} scale", dtype_name(x), dtype_name(s));
  }
  if (precision != 0 && precision != static_cast<int64_t>(DType::kF32)) {
    return not_implemented("QuantizeLinear attribute precision {} (float32 only)", precision);
  }
  const bool narrow_y = dtype_is_narrow(y) && y != DType::kF8E8M0;
  if (y != DType::kU8 && y != DType::kI8 && y != DType::kU16 && y != DType::kI16 && !narrow_y) {
    return not_implemented("QuantizeLinear to {}", dtype_name(y));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<QuantizeKernel>(x, s, y, axis, block, saturate));
}

Result<std::unique_ptr<OpKernel>> create_dequantize_linear(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  ir::AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 1), block = attrs.get_int("block_size", 0);
  const int64_t out_attr = attrs.get_int("output_dtype", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  const DType x = init.input_dtypes[0], s = init.input_dtypes[1];
  const bool int_x = x == DType::kU8 || x == DType::kI8 || x == DType::kU16 || x == DType::kI16 || x == DType::kI32 ||
                     (dtype_is_narrow(x) && x != DType::kF8E8M0);
  if (!int_x || !is_float(s)) {
    return not_implemented("DequantizeLinear of {} with {} scale", dtype_name(x), dtype_name(s));
  }
  const DType y = out_attr != 0 ? static_cast<DType>(out_attr) : s;
  if (!is_float(y)) return not_implemented("DequantizeLinear to {} (output_dtype {})", dtype_name(y), out_attr);
  const DType zp = init.input_dtypes.size() > 2 ? init.input_dtypes[2] : DType::kUndefined;
  if (zp != DType::kUndefined && zp != x) {
    return invalid_argument("input 'x_zero_point' is {} but input 'x' is {}; they must match", dtype_name(zp),
                            dtype_name(x));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<DequantizeKernel>(x, y, axis, block));
}

Result<std::unique_ptr<OpKernel>> create_dynamic_quantize_linear(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  if (init.input_dtypes[0] != DType::kF32) {
    return not_implemented("DynamicQuantizeLinear of {} (float only)", dtype_name(init.input_dtypes[0]));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<DynamicQuantizeKernel>());
}

}  // namespace ember::kernels
