// The fast Resize path for f32 NCHW tensors resized on H and W with nearest or
// linear taps: per-axis tables in f32 built once per call, then for each output
// row a contiguous vertical blend of (at most) two source rows, which the
// compiler vectorizes, and a horizontal gather from that blended row. Planes
// (N*C) split across threads. The order of operations is the reference's
// (H before W), so NaN and Inf spread the same way.
#include <algorithm>
#include <vector>

#include "kernels/image/resize.h"
#include "threading/thread_pool.h"

namespace ember::kernels::image {
namespace {

// One axis as at most two taps per output position in f32.
struct FastAxis {
  bool two_taps = false;
  std::vector<int64_t> index0;
  std::vector<int64_t> index1;
  std::vector<float> weight0;
  std::vector<float> weight1;
};

FastAxis fast_axis(const AxisPlan& plan) {
  FastAxis a;
  auto n = static_cast<size_t>(plan.out_len);
  a.index0.resize(n);
  a.weight0.resize(n, 1.0f);
  if (plan.identity) {
    for (size_t y = 0; y < n; ++y) a.index0[y] = static_cast<int64_t>(y);
    return a;
  }
  a.two_taps = plan.taps == 2;
  if (a.two_taps) {
    a.index1.resize(n);
    a.weight1.resize(n);
  }
  for (size_t y = 0; y < n; ++y) {
    auto t = y * static_cast<size_t>(plan.taps);
    a.index0[y] = plan.index[t];
    a.weight0[y] = static_cast<float>(plan.weight[t]);
    if (a.two_taps) {
      a.index1[y] = plan.index[t + 1];
      a.weight1[y] = static_cast<float>(plan.weight[t + 1]);
    }
  }
  return a;
}

// Output elements per parallel_for task: enough that a task outweighs waking a
// worker (about 10 us of blending).
constexpr int64_t kTaskOutputs = 32 * 1024;

void resize_plane(const float* src, float* dst, int64_t width, const FastAxis& h, const FastAxis& w, float* blended) {
  auto out_h = static_cast<int64_t>(h.index0.size());
  auto out_w = static_cast<int64_t>(w.index0.size());
  for (int64_t y = 0; y < out_h; ++y) {
    const float* row0 = src + h.index0[static_cast<size_t>(y)] * width;
    const float* row = row0;
    if (h.two_taps) {
      const float* row1 = src + h.index1[static_cast<size_t>(y)] * width;
      float a = h.weight0[static_cast<size_t>(y)];
      float b = h.weight1[static_cast<size_t>(y)];
      for (int64_t x = 0; x < width; ++x) blended[x] = a * row0[x] + b * row1[x];
      row = blended;
    }
    float* out = dst + y * out_w;
    const int64_t* i0 = w.index0.data();
    if (w.two_taps) {
      const int64_t* i1 = w.index1.data();
      const float* w0 = w.weight0.data();
      const float* w1 = w.weight1.data();
      for (int64_t x = 0; x < out_w; ++x) out[x] = w0[x] * row[i0[x]] + w1[x] * row[i1[x]];
    } else {
      for (int64_t x = 0; x < out_w; ++x) out[x] = row[i0[x]];
    }
  }
}

}  // namespace

bool can_resize_nchw_f32(const Tensor& in, std::span<const AxisPlan> plans) {
  if (in.dtype() != DType::kF32 || in.rank() != 4 || plans.size() != 4) return false;
  if (!plans[0].identity || !plans[1].identity) return false;
  for (size_t d = 2; d < 4; ++d) {
    const AxisPlan& p = plans[d];
    if (!p.identity && (p.taps > 2 || !p.extrapolated.empty())) return false;
  }
  return true;
}

void resize_nchw_f32(const Tensor& in, Tensor& out, std::span<const AxisPlan> plans) {
  if (out.numel() == 0) return;
  int64_t planes = in.dim(0) * in.dim(1);
  int64_t height = in.dim(2);
  int64_t width = in.dim(3);
  FastAxis h = fast_axis(plans[2]);
  FastAxis w = fast_axis(plans[3]);
  int64_t plane_in = height * width;
  int64_t plane_out = out.dim(2) * out.dim(3);
  const float* src = in.data_as<float>();
  float* dst = out.data_as<float>();
  int64_t grain = std::max<int64_t>(1, kTaskOutputs / std::max<int64_t>(plane_out, 1));
  threading::parallel_for(planes, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> blended(h.two_taps ? static_cast<size_t>(width) : 0);
    for (int64_t p = begin; p < end; ++p) {
      resize_plane(src + p * plane_in, dst + p * plane_out, width, h, w, blended.data());
    }
  });
}

}  // namespace ember::kernels::image
