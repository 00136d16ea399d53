// Depthwise f32 Conv: the scalar rows microkernel (the shared row algorithm at
// one lane), the per-ISA tables, and the threaded driver.
#include <algorithm>

#include "kernels/common/isa_tables.h"
#include "kernels/conv/conv_f32.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace dwconv {
namespace {

// The vector layer at one lane: the baseline CPU has no FMA, so a tap is a
// multiply then an add (two roundings, as in the reference loop).
constexpr int64_t kLanes = 1;
constexpr int kUnroll = 4;
using VF = float;
using VM = bool;

VF vset(float v) { return v; }
VF vload_s1(const float* p) { return *p; }
VF vload_s2(const float* p) { return *p; }
VF vgather(const float* p, int64_t /*stride*/) { return *p; }
VM vrange(int64_t lo, int64_t hi) { return lo < hi; }
VF vload_masked(const float* row, int64_t iw0, int64_t /*stride*/, VM m) { return m ? row[iw0] : 0.0f; }
VF vfma(VF a, VF b, VF c) { return a * b + c; }
VF vfma_masked(VF a, VF b, VF c, VM m) { return m ? a * b + c : c; }
void vstore(float* p, VF v) { *p = v; }
void vstore_first(float* p, VF v, int64_t /*n*/) { *p = v; }

#include "kernels/conv/conv_depthwise_rows.inc"

void fill_dwconv_scalar(DwconvTable& t) { t.rows = dwconv_rows_any; }

}  // namespace

const DwconvTable& dwconv_table(Isa isa) {
  static const auto tables = build_isa_tables<DwconvTable>(fill_dwconv_scalar, fill_dwconv_avx2, fill_dwconv_avx512);
  return select_table(tables, isa);
}

}  // namespace dwconv

namespace {

// Multiply-adds one parallel_for range must hold to be worth a thread.
constexpr int64_t kMinRangeMacs = int64_t{1} << 16;

dwconv::DwconvGeometry geometry_of(const Window3d& w) {
  dwconv::DwconvGeometry g{};
  for (int d = 0; d < 3; ++d) {
    g.in[d] = w.in[d];
    g.out[d] = w.out[d];
    g.kernel[d] = w.kernel[d];
    g.stride[d] = w.stride[d];
    g.dilation[d] = w.dilation[d];
    g.pad[d] = w.pad_begin[d];
  }
  return g;
}

}  // namespace

void conv_f32_depthwise(const dwconv::DwconvTable& t, const ConvShape& s, const float* x, const float* weights,
                        const float* bias, float* y) {
  const Window3d& w = s.w;
  const int64_t rows = w.out[0] * w.out[1], planes = s.batch * s.out_channels;
  if (rows == 0 || w.out[2] == 0 || planes == 0) return;
  const dwconv::DwconvGeometry g = geometry_of(w);
  // Output channel m reads input channel m / multiplier (in_channels == group).
  const int64_t multiplier = s.out_channels / s.group, taps = w.kernel_size();
  const int64_t in_size = w.in_size(), out_size = w.out_size();
  const int64_t grain = std::max<int64_t>(1, kMinRangeMacs / std::max<int64_t>(1, w.out[2] * taps));
  threading::parallel_for(planes * rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end;) {
      const int64_t plane = u / rows, row0 = u % rows, row1 = std::min(rows, row0 + (end - u));
      const int64_t n = plane / s.out_channels, m = plane % s.out_channels;
      const float* x_c = x + (n * s.in_channels + m / multiplier) * in_size;
      t.rows(g, x_c, weights + m * taps, bias ? bias[m] : 0.0f, row0, row1, y + plane * out_size);
      u += row1 - row0;
    }
  });
}

}  // namespace ember::kernels
