// GridSample (opsets 16, 20, 22): samples X [N, C, D1..Dr] at the normalized
// coordinates of grid [N, O1..Or, r] (innermost spatial axis first, as PyTorch).
// Coordinates are denormalized, rounded (nearest) and folded into range by the
// padding mode in the grid's precision, as ONNX's reference does; then each output
// position's taps (indices and weights) are built once and applied to every channel.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/image/image_ops.h"
#include "kernels/tensor/tensor_util.h"
#include "threading/thread_pool.h"

namespace ember::kernels::image {
namespace {

enum class SampleMode { kNearest, kLinear, kCubic };
enum class PaddingMode { kZeros, kBorder, kReflection };

// Folds x into [lo, hi] by reflecting at the borders as often as needed.
double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    auto n = static_cast<int64_t>(dx / range);
    double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    auto n = static_cast<int64_t>(dx / range);
    double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// Keys' cubic coefficients (a = -0.75, PyTorch's) for the taps at -1, 0, 1, 2 of fraction t.
template <typename C>
void cubic_coeffs(C t, C* c) {
  const C a = C(-0.75);
  C x = std::abs(t);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

// Taps per parallel_for task (a task is whole channels): enough that a task
// outweighs waking a worker.
constexpr int64_t kTaskTaps = 32 * 1024;
// Output positions are handled in blocks of at most this many taps, which bounds
// the tap table (12 bytes a tap) for large volumetric grids.
constexpr int64_t kBlockTaps = 1 << 20;

int64_t ceil_div_int(int64_t a, int64_t b) { return (a + b - 1) / b; }

class GridSampleKernel final : public OpKernel {
 public:
  GridSampleKernel(SampleMode mode, PaddingMode padding, bool align_corners, bool only_4d)
      : mode_(mode), padding_(padding), align_corners_(align_corners), only_4d_(only_4d) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    if (x.rank() < 3 || (only_4d_ && x.rank() != 4)) {
      return invalid_argument("input 0 (X) {} must be {}", x.describe(), only_4d_ ? "4-D at this opset" : "N x C x spatial");
    }
    int64_t r = x.rank() - 2;
    if (grid.rank() != x.rank() || grid.dim(0) != x.dim(0) || grid.dim(grid.rank() - 1) != r) {
      return invalid_argument("input 1 (grid) {} must be [{}, spatial..., {}] for input 0 (X) {}", grid.describe(),
                              x.dim(0), r, x.describe());
    }
    Shape out{x.dim(0), x.dim(1)};
    for (int64_t d = 1; d <= r; ++d) out.push_back(grid.dim(d));
    ctx.set_output(0, x.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    Tensor& out = ctx.output(0);
    if (out.numel() == 0) return Status::ok();
    for (int64_t d = 2; d < x.rank(); ++d) {
      if (x.dim(d) == 0 && padding_ != PaddingMode::kZeros) {
        return invalid_argument("cannot sample empty input 0 (X) {} with border or reflection padding", x.describe());
      }
    }
    Status status = Status::ok();
    EMBER_SWITCH_FLOAT(x.dtype(), T, { status = sample_with_grid<T>(x, grid, out); },
                       status = not_implemented("GridSample of X dtype {}", dtype_name(x.dtype())));
    return status;
  }

 private:
  template <typename T>
  Status sample_with_grid(const Tensor& x, const Tensor& grid, Tensor& out) const {
    EMBER_SWITCH_FLOAT(grid.dtype(), G, { (sample<T, G>)(x, grid, out); },
                       return not_implemented("GridSample of grid dtype {}", dtype_name(grid.dtype())));
    return Status::ok();
  }

  // Coordinates and weights are computed in G's compute type: the grid's precision.
  template <typename T, typename G>
  void sample(const Tensor& x, const Tensor& grid, Tensor& out) const {
    using C = compute_t<G>;
    const auto r = static_cast<size_t>(x.rank() - 2);
    const int64_t batch = x.dim(0);
    const int64_t channels = x.dim(1);
    std::vector<int64_t> dims(r);
    for (size_t i = 0; i < r; ++i) dims[i] = x.dim(static_cast<int64_t>(i) + 2);
    const int64_t plane = shape_numel(dims);
    const int64_t positions = out.numel() / (batch * channels);
    const int64_t per_dim = mode_ == SampleMode::kNearest ? 1 : (mode_ == SampleMode::kLinear ? 2 : 4);
    int64_t combos = 1;
    for (size_t i = 0; i < r; ++i) combos *= per_dim;
    const T* src = x.data_as<T>();
    const G* coords = grid.data_as<G>();
    T* dst = out.data_as<T>();
    // Taps of a block of output positions of one batch item, shared by its
    // channels: position first+p reads offsets[p*combos ..] with weights[p*combos
    // ..]. A tap in the zeros padding reads offset `plane`: a zero appended to a
    // copy of the channel, so every position has the same number of taps.
    const int64_t block = std::min(positions, std::max<int64_t>(1, kBlockTaps / combos));
    const auto total = static_cast<size_t>(block * combos);
    std::vector<int64_t> offsets(total);
    std::vector<C> weights(total);
    std::vector<int64_t> tap_index(r * static_cast<size_t>(per_dim));
    std::vector<C> tap_weight(tap_index.size());
    const bool zero_tap = padding_ == PaddingMode::kZeros;
    const int64_t grain = std::max<int64_t>(1, kTaskTaps / std::max<int64_t>(block * combos, 1));
    const int64_t blocks = ceil_div_int(positions, block);
    for (int64_t job = 0; job < batch * blocks; ++job) {
      const int64_t n = job / blocks;
      const int64_t first = job % blocks * block;
      const int64_t count = std::min(block, positions - first);
      for (int64_t p = 0; p < count; ++p) {
        const G* g = coords + (n * positions + first + p) * static_cast<int64_t>(r);
        for (size_t i = 0; i < r; ++i) {
          axis_taps<C>(static_cast<C>(g[r - 1 - i]), dims[i], &tap_index[i * per_dim], &tap_weight[i * per_dim]);
        }
        for (int64_t k = 0; k < combos; ++k) {
          int64_t rest = k;
          int64_t offset = 0;
          int64_t stride = 1;
          C w = 1;
          bool inside = true;
          for (size_t i = r; i-- > 0;) {
            auto t = i * static_cast<size_t>(per_dim) + static_cast<size_t>(rest % per_dim);
            rest /= per_dim;
            inside = inside && tap_index[t] >= 0;
            offset += tap_index[t] * stride;
            stride *= dims[i];
            w *= tap_weight[t];
          }
          auto at = static_cast<size_t>(p * combos + k);
          offsets[at] = inside ? offset : plane;
          weights[at] = w;
        }
      }
      threading::parallel_for(channels, grain, [&](int64_t begin, int64_t end) {
        std::vector<T> padded(zero_tap ? static_cast<size_t>(plane) + 1 : 0);
        for (int64_t c = begin; c < end; ++c) {
          const T* in_plane = src + (n * channels + c) * plane;
          if (zero_tap) {
            std::copy(in_plane, in_plane + plane, padded.begin());
            padded[static_cast<size_t>(plane)] = T(0.0f);
            in_plane = padded.data();
          }
          T* out_plane = dst + (n * channels + c) * positions + first;
          if (combos == 4) {
            gather_taps<T, C, 4>(in_plane, offsets.data(), weights.data(), count, 4, out_plane);
          } else {
            gather_taps<T, C, 0>(in_plane, offsets.data(), weights.data(), count, combos, out_plane);
          }
        }
      });
    }
  }

  // out[p] = sum of weights[p*taps + k] * in[offsets[p*taps + k]]; kTaps > 0
  // fixes the tap count at compile time (2-D linear) so the loop unrolls.
  template <typename T, typename C, int64_t kTaps>
  static void gather_taps(const T* in, const int64_t* offsets, const C* weights, int64_t positions, int64_t taps,
                          T* out) {
    if constexpr (kTaps > 0) taps = kTaps;
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t* o = offsets + p * taps;
      const C* w = weights + p * taps;
      C acc = 0;
      for (int64_t k = 0; k < taps; ++k) acc += w[k] * static_cast<C>(in[o[k]]);
      out[p] = static_cast<T>(acc);
    }
  }

  // The taps of one axis of length `len` for normalized coordinate g: input
  // indices (-1 for a tap that reads zero padding) and weights.
  template <typename C>
  void axis_taps(C g, int64_t len, int64_t* index, C* weight) const {
    C length = static_cast<C>(len);
    C v = align_corners_ ? (g + 1) / 2 * (length - 1) : ((g + 1) * length - 1) / 2;
    double lo = align_corners_ ? 0.0 : -0.5;
    double hi = align_corners_ ? static_cast<double>(len) - 1 : static_cast<double>(len) - 0.5;
    if (mode_ == SampleMode::kNearest) v = std::nearbyint(v);
    if (v < lo || v > hi) {
      if (padding_ == PaddingMode::kBorder) v = std::clamp(v, C(0), length - 1);
      if (padding_ == PaddingMode::kReflection) v = static_cast<C>(reflect(static_cast<double>(v), lo, hi));
    }
    if (std::isnan(v)) v = C(0);
    // Far-off coordinates only read padding; keep them in range of int64.
    v = std::clamp(v, C(-4) - length, C(4) + length * 2);
    if (mode_ == SampleMode::kNearest) {
      index[0] = pixel(static_cast<int64_t>(v), len, lo, hi);
      weight[0] = 1;
      return;
    }
    C left = std::floor(v);
    auto base = static_cast<int64_t>(left);
    C t = v - left;
    if (mode_ == SampleMode::kLinear) {
      index[0] = pixel(base, len, lo, hi);
      index[1] = pixel(base + 1, len, lo, hi);
      weight[0] = 1 - t;
      weight[1] = t;
      return;
    }
    cubic_coeffs(t, weight);
    for (int64_t k = 0; k < 4; ++k) index[k] = pixel(base - 1 + k, len, lo, hi);
  }

  // The input index tap i reads under the padding mode; -1 for zero padding.
  int64_t pixel(int64_t i, int64_t len, double lo, double hi) const {
    if (i >= 0 && i < len) return i;
    switch (padding_) {
      case PaddingMode::kZeros:
        return -1;
      case PaddingMode::kBorder:
        return std::clamp<int64_t>(i, 0, len - 1);
      case PaddingMode::kReflection:
        return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0, len - 1);
    }
    return -1;
  }

  SampleMode mode_;
  PaddingMode padding_;
  bool align_corners_;
  bool only_4d_;
};

Result<SampleMode> parse_mode(const std::string& s) {
  if (s == "nearest") return SampleMode::kNearest;
  if (s == "bilinear" || s == "linear") return SampleMode::kLinear;
  if (s == "bicubic" || s == "cubic") return SampleMode::kCubic;
  return invalid_argument("mode '{}' is not one of linear (bilinear), nearest, cubic (bicubic)", s);
}

Result<PaddingMode> parse_padding(const std::string& s) {
  if (s == "zeros") return PaddingMode::kZeros;
  if (s == "border") return PaddingMode::kBorder;
  if (s == "reflection") return PaddingMode::kReflection;
  return invalid_argument("padding_mode '{}' is not one of zeros, border, reflection", s);
}

}  // namespace

KernelResult create_grid_sample(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 0, "input 0 (X)"));
  EMBER_RETURN_IF_ERROR(tensor_ops::require_input(init, 1, "input 1 (grid)"));
  if (!dtype_is_float(init.input_dtypes[0])) {
    return not_implemented("GridSample of input 0 (X) {}: only floating-point inputs", dtype_name(init.input_dtypes[0]));
  }
  if (!dtype_is_float(init.input_dtypes[1])) {
    return invalid_argument("input 1 (grid) must be floating point, got {}", dtype_name(init.input_dtypes[1]));
  }
  bool legacy = init.node.opset < 20;
  ir::AttrReader attrs(init.node);
  EMBER_ASSIGN_OR_RETURN(SampleMode mode, parse_mode(attrs.get_string("mode", legacy ? "bilinear" : "linear")));
  EMBER_ASSIGN_OR_RETURN(PaddingMode padding, parse_padding(attrs.get_string("padding_mode", "zeros")));
  bool align_corners = attrs.get_int("align_corners", 0) != 0;
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new GridSampleKernel(mode, padding, align_corners, legacy));
}

}  // namespace ember::kernels::image
