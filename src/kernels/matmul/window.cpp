#include "kernels/matmul/window.h"

#include <algorithm>

namespace ember::kernels {
namespace {

Result<AutoPad> parse_auto_pad(const std::string& s) {
  if (s.empty() || s == "NOTSET") return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  return invalid_argument("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", s);
}

Status check_positive(const std::vector<int64_t>& v, std::string_view what) {
  for (int64_t x : v) {
    if (x < 1) return invalid_argument("{} must be >= 1, got {}", what, x);
  }
  return Status::ok();
}

}  // namespace

Result<WindowAttrs> read_window_attrs(const ir::Node& node, bool require_kernel_shape) {
  ir::AttrReader attrs(node);
  if (require_kernel_shape) attrs.require("kernel_shape");
  WindowAttrs a;
  a.kernel_shape = attrs.get_ints("kernel_shape");
  a.strides = attrs.get_ints("strides");
  a.dilations = attrs.get_ints("dilations");
  a.pads = attrs.get_ints("pads");
  const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  const int64_t ceil_mode = attrs.get_int("ceil_mode", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  EMBER_ASSIGN_OR_RETURN(a.auto_pad, parse_auto_pad(auto_pad));
  a.ceil_mode = ceil_mode != 0;
  EMBER_RETURN_IF_ERROR(check_positive(a.kernel_shape, "kernel_shape"));
  EMBER_RETURN_IF_ERROR(check_positive(a.strides, "strides"));
  EMBER_RETURN_IF_ERROR(check_positive(a.dilations, "dilations"));
  for (int64_t p : a.pads) {
    if (p < 0) return invalid_argument("pads must be >= 0, got {}", p);
  }
  return a;
}

Result<Window3d> resolve_window(const WindowAttrs& a, std::span<const int64_t> in_spatial,
                                std::span<const int64_t> kernel) {
  const size_t rank = in_spatial.size();
  if (rank == 0 || rank > kMaxWindowRank) {
    return not_implemented("{} spatial dims are not supported (1 to {})", rank, kMaxWindowRank);
  }
  if (kernel.size() != rank) {
    return invalid_argument("kernel_shape has {} dims but the input has {} spatial dims", kernel.size(), rank);
  }
  const auto check_len = [&](const std::vector<int64_t>& v, size_t want, std::string_view what) -> Status {
    if (!v.empty() && v.size() != want) return invalid_argument("{} has {} values, expected {}", what, v.size(), want);
    return Status::ok();
  };
  EMBER_RETURN_IF_ERROR(check_len(a.strides, rank, "strides"));
  EMBER_RETURN_IF_ERROR(check_len(a.dilations, rank, "dilations"));
  EMBER_RETURN_IF_ERROR(check_len(a.pads, 2 * rank, "pads"));
  Window3d w;
  const size_t lift = kMaxWindowRank - rank;
  for (size_t i = 0; i < rank; ++i) {
    const size_t d = i + lift;
    w.in[d] = in_spatial[i];
    w.kernel[d] = kernel[i];
    w.stride[d] = a.strides.empty() ? 1 : a.strides[i];
    w.dilation[d] = a.dilations.empty() ? 1 : a.dilations[i];
    const int64_t extent = (w.kernel[d] - 1) * w.dilation[d] + 1;
    switch (a.auto_pad) {
      case AutoPad::kNotSet: {
        w.pad_begin[d] = a.pads.empty() ? 0 : a.pads[i];
        w.pad_end[d] = a.pads.empty() ? 0 : a.pads[i + rank];
        const int64_t span = w.in[d] + w.pad_begin[d] + w.pad_end[d] - extent;
        if (span < 0) {
          w.out[d] = 0;
          break;
        }
        w.out[d] = (a.ceil_mode ? (span + w.stride[d] - 1) / w.stride[d] : span / w.stride[d]) + 1;
        // A last window starting inside the end padding is dropped (as in ORT and PyTorch).
        if (a.ceil_mode && (w.out[d] - 1) * w.stride[d] >= w.in[d] + w.pad_begin[d]) --w.out[d];
        break;
      }
      case AutoPad::kValid:
        w.out[d] = w.in[d] >= extent ? (w.in[d] - extent) / w.stride[d] + 1 : 0;
        break;
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        w.out[d] = (w.in[d] + w.stride[d] - 1) / w.stride[d];
        const int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * w.stride[d] + extent - w.in[d]);
        const int64_t small = total / 2;
        w.pad_begin[d] = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
        w.pad_end[d] = total - w.pad_begin[d];
        break;
      }
    }
    if (a.auto_pad == AutoPad::kNotSet && w.in[d] + w.pad_begin[d] + w.pad_end[d] < extent && w.in[d] > 0) {
      return invalid_argument("spatial dim {} of size {} (pads {}+{}) is smaller than the kernel extent {}", i,
                              w.in[d], w.pad_begin[d], w.pad_end[d], extent);
    }
  }
  return w;
}

Shape window_output_shape(int64_t batch, int64_t channels, const Window3d& w, size_t spatial_rank) {
  Shape out{batch, channels};
  for (size_t d = kMaxWindowRank - spatial_rank; d < kMaxWindowRank; ++d) out.push_back(w.out[d]);
  return out;
}

}  // namespace ember::kernels
