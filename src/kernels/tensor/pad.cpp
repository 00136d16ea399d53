// Pad: constant, reflect, edge and wrap modes; negative pads crop.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/common/shape_util.h"
#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Source index of padded position `i` (any integer) on a dim of size n > 0.
int64_t map_index(int64_t i, int64_t n, PadMode mode) {
  switch (mode) {
    case PadMode::kEdge:
      return std::clamp(i, int64_t{0}, n - 1);
    case PadMode::kWrap:
      return (i % n + n) % n;
    default: {
      // Reflection without repeating the edge has period 2(n-1); numpy repeats it for wide pads.
      if (n == 1) return 0;
      int64_t period = 2 * (n - 1);
      int64_t m = (i % period + period) % period;
      return m < n ? m : period - m;
    }
  }
}

class PadKernel final : public OpKernel {
 public:
  PadKernel(PadMode mode, bool from_inputs, IndexVec pads_attr, uint64_t value_bits, size_t elem_size)
      : mode_(mode), from_inputs_(from_inputs), pads_attr_(std::move(pads_attr)), value_bits_(value_bits),
        elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    IndexVec begin;
    IndexVec end;
    EMBER_RETURN_IF_ERROR(read_pads(ctx, begin, end));
    Shape out = in.shape();
    for (size_t d = 0; d < out.size(); ++d) {
      out[d] += begin[d] + end[d];
      if (out[d] < 0) {
        return invalid_argument("pads {}..{} on axis {} of input 0 {} leave a negative size", begin[d], end[d], d,
                                in.describe());
      }
      if (mode_ != PadMode::kConstant && in.shape()[d] == 0 && out[d] > 0) {
        return invalid_argument("cannot pad axis {} of input 0 {} in a non-constant mode: it is empty", d,
                                in.describe());
      }
    }
    ctx.set_output(0, in.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    IndexVec begin;
    IndexVec end;
    EMBER_RETURN_IF_ERROR(read_pads(ctx, begin, end));
    uint64_t value = value_bits_;
    if (from_inputs_ && ctx.has_input(2) && ctx.input(2).numel() > 0) std::memcpy(&value, ctx.input(2).data(), elem_size_);
    if (out.numel() == 0) return Status::ok();
    if (in.rank() == 0) {
      std::memcpy(out.data(), in.data(), elem_size_);
      return Status::ok();
    }
    size_t last = static_cast<size_t>(in.rank() - 1);
    Shape in_strides = contiguous_strides(in.shape());
    int64_t row_len = out.dim(static_cast<int64_t>(last));
    IndexVec index(last, 0);
    auto* dst = static_cast<std::byte*>(out.data());
    const auto* src = static_cast<const std::byte*>(in.data());
    for (int64_t row = 0, rows = out.numel() / row_len; row < rows; ++row) {
      int64_t src_row = 0;
      bool inside = true;
      for (size_t d = 0; d < last; ++d) {
        int64_t i = index[d] - begin[d];
        int64_t n = in.shape()[d];
        if (i < 0 || i >= n) {
          if (mode_ == PadMode::kConstant) inside = false;
          else i = map_index(i, n, mode_);
        }
        src_row += i * in_strides[d];
      }
      std::byte* dst_row = dst + static_cast<size_t>(row * row_len) * elem_size_;
      if (inside) {
        pad_row(src + static_cast<size_t>(src_row) * elem_size_, in.shape()[last], begin[last], dst_row, row_len,
                &value);
      } else {
        fill_elements(dst_row, row_len, &value, elem_size_);
      }
      for (size_t d = last; d-- > 0;) {
        if (++index[d] < out.dim(static_cast<int64_t>(d))) break;
        index[d] = 0;
      }
    }
    return Status::ok();
  }

 private:
  // One output row of `len` elements from an input row of `n`, shifted by `begin`.
  void pad_row(const std::byte* src, int64_t n, int64_t begin, std::byte* dst, int64_t len, const void* value) const {
    int64_t mid_begin = std::clamp(begin, int64_t{0}, len);
    int64_t mid_end = std::clamp(begin + n, mid_begin, len);
    auto put_outside = [&](int64_t o0, int64_t o1) {
      if (o0 >= o1) return;
      if (mode_ == PadMode::kConstant) {
        fill_elements(dst + static_cast<size_t>(o0) * elem_size_, o1 - o0, value, elem_size_);
        return;
      }
      for (int64_t o = o0; o < o1; ++o) {
        std::memcpy(dst + static_cast<size_t>(o) * elem_size_,
                    src + static_cast<size_t>(map_index(o - begin, n, mode_)) * elem_size_, elem_size_);
      }
    };
    put_outside(0, mid_begin);
    if (mid_end > mid_begin) {
      std::memcpy(dst + static_cast<size_t>(mid_begin) * elem_size_,
                  src + static_cast<size_t>(mid_begin - begin) * elem_size_,
                  static_cast<size_t>(mid_end - mid_begin) * elem_size_);
    }
    put_outside(mid_end, len);
  }

  // Per-dim begin/end pads from the attribute or inputs 1 (pads) and 3 (axes).
  Status read_pads(const KernelContext& ctx, IndexVec& begin, IndexVec& end) const {
    auto rank = static_cast<size_t>(ctx.input(0).rank());
    IndexVec pads = pads_attr_;
    IndexVec axes;
    bool has_axes = from_inputs_ && ctx.has_input(3);
    if (from_inputs_) {
      if (!ctx.has_value(1)) return needs_value(1);
      EMBER_ASSIGN_OR_RETURN(pads, read_index_input(ctx.input(1), "input 1 (pads)"));
      if (has_axes) {
        if (!ctx.has_value(3)) return needs_value(3);
        EMBER_ASSIGN_OR_RETURN(axes, read_index_input(ctx.input(3), "input 3 (axes)"));
      }
    }
    size_t naxes = has_axes ? axes.size() : rank;
    if (pads.size() != 2 * naxes) {
      return invalid_argument("pads {} must have {} entries for input 0 of rank {}", shape_to_string(pads), 2 * naxes,
                              rank);
    }
    begin.clear();
    begin.resize(rank, 0);
    end.clear();
    end.resize(rank, 0);
    for (size_t i = 0; i < naxes; ++i) {
      int64_t axis = static_cast<int64_t>(i);
      if (has_axes) {
        EMBER_ASSIGN_OR_RETURN(axis, normalize_axis(axes[i], static_cast<int64_t>(rank), "axes value"));
      }
      begin[static_cast<size_t>(axis)] = pads[i];
      end[static_cast<size_t>(axis)] = pads[i + naxes];
    }
    return Status::ok();
  }

  PadMode mode_;
  bool from_inputs_;
  IndexVec pads_attr_;
  uint64_t value_bits_;
  size_t elem_size_;
};

Result<PadMode> parse_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return invalid_argument("mode '{}' is not one of constant, reflect, edge, wrap", mode);
}

// The pad value of the attribute form, stored as the bits of one element of `dtype`.
uint64_t value_bits(float value, DType dtype) {
  uint64_t bits = 0;
  EMBER_SWITCH_ALL(dtype, T, {
    T v = static_cast<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  }, break);
  return bits;
}

}  // namespace

KernelResult create_pad(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  DType dtype = init.input_dtypes[0];
  EMBER_RETURN_IF_ERROR(check_movable_dtype(dtype, "input 0"));
  ir::AttrReader attrs(init.node);
  bool from_inputs = init.node.opset >= 11;
  EMBER_ASSIGN_OR_RETURN(PadMode mode, parse_mode(attrs.get_string("mode", "constant")));
  IndexVec pads;
  float value = 0;
  if (!from_inputs) {
    std::string_view pads_name = init.node.opset < 2 ? "paddings" : "pads";
    attrs.require(pads_name);
    pads = to_index_vec(attrs.get_ints(pads_name));
    value = attrs.get_float("value", 0.0f);
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (from_inputs) {
    EMBER_RETURN_IF_ERROR(require_input(init, 1, "input 1 (pads)"));
    if (has_input(init, 2) && init.input_dtypes[2] != dtype) {
      return invalid_argument("input 2 (constant_value) is {} but input 0 is {}", dtype_name(init.input_dtypes[2]),
                              dtype_name(dtype));
    }
  }
  return std::unique_ptr<OpKernel>(
      new PadKernel(mode, from_inputs, std::move(pads), value_bits(value, dtype), dtype_size(dtype)));
}

}  // namespace ember::kernels::tensor_ops
