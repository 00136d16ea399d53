// AVX2 + FMA depthwise rows: 8 outputs per vector, up to eight per block;
// width stride 2 as two loads and two shuffles, other strides by eight loads;
// the row ends by masked loads (stride 1) or lane by lane, and FMAs blended
// under the lane mask. No VGATHERDPS: Debian's QEMU 7.2, which runs the
// emulated ctest entries, reads a gather whose index register is ymm4 or ymm12
// (SIB index 100b) as having no index.
#include <immintrin.h>

#include <cstdint>

#include "kernels/conv/conv_depthwise_ukernels.h"

namespace ember::kernels::dwconv {
namespace {

constexpr int64_t kLanes = 8;
constexpr int kUnroll = 8;
using VF = __m256;
using VM = __m256i;

VF vset(float v) { return _mm256_set1_ps(v); }
VF vload_s1(const float* p) { return _mm256_loadu_ps(p); }
// [a0 a2 b0 b2 | a4 a6 b4 b6], then 64-bit lanes 0, 2, 1, 3: a0 a2 a4 a6 b0 b2 b4 b6.
VF vload_s2(const float* p) {
  const __m256 pairs = _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), 0xd8));
}
VF vgather(const float* p, int64_t stride) {
  return _mm256_setr_ps(p[0], p[stride], p[2 * stride], p[3 * stride], p[4 * stride], p[5 * stride], p[6 * stride],
                        p[7 * stride]);
}
VM vrange(int64_t lo, int64_t hi) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(static_cast<int32_t>(lo - 1))),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(hi)), lane));
}
// Stride 1: masked-off lanes are never read (their faults are suppressed), so
// row + iw0 may point before the row. Others: lane by lane.
VF vload_masked(const float* row, int64_t iw0, int64_t stride, VM m) {
  if (stride == 1) return _mm256_maskload_ps(row + iw0, m);
  const int lanes = _mm256_movemask_ps(_mm256_castsi256_ps(m));
  alignas(32) float v[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) v[j] = (lanes >> j & 1) != 0 ? row[iw0 + j * stride] : 0.0f;
  return _mm256_load_ps(v);
}
VF vfma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
VF vfma_masked(VF a, VF b, VF c, VM m) { return _mm256_blendv_ps(c, _mm256_fmadd_ps(a, b, c), _mm256_castsi256_ps(m)); }
void vstore(float* p, VF v) { _mm256_storeu_ps(p, v); }
void vstore_first(float* p, VF v, int64_t n) { _mm256_maskstore_ps(p, vrange(0, n), v); }

#include "kernels/conv/conv_depthwise_rows.inc"

}  // namespace

void fill_dwconv_avx2(DwconvTable& t) { t.rows = dwconv_rows_any; }

}  // namespace ember::kernels::dwconv
