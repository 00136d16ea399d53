// AVX-512 depthwise rows: 16 outputs per vector, up to eight per block;
// width stride 2 as two loads and one permute, other strides by gather; the
// row ends by masked loads (stride 1) or masked gathers and masked FMAs.
#include <immintrin.h>

#include <cstdint>

#include "kernels/conv/conv_depthwise_ukernels.h"

namespace ember::kernels::dwconv {
namespace {

constexpr int64_t kLanes = 16;
constexpr int kUnroll = 8;
using VF = __m512;
using VM = __mmask16;

VF vset(float v) { return _mm512_set1_ps(v); }
VF vload_s1(const float* p) { return _mm512_loadu_ps(p); }
VF vload_s2(const float* p) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16));
}
__m512i lane_offsets(int64_t stride) {
  return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(static_cast<int32_t>(stride)));
}
VF vgather(const float* p, int64_t stride) { return _mm512_i32gather_ps(lane_offsets(stride), p, 4); }
VM vrange(int64_t lo, int64_t hi) {
  const uint32_t below_hi = (uint32_t{1} << hi) - 1u, below_lo = (uint32_t{1} << lo) - 1u;
  return static_cast<VM>(below_hi & ~below_lo);
}
// Masked-off lanes are never read (their faults are suppressed), so row + iw0
// may point before the row.
VF vload_masked(const float* row, int64_t iw0, int64_t stride, VM m) {
  if (stride == 1) return _mm512_maskz_loadu_ps(m, row + iw0);
  const __m512i index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(iw0)), lane_offsets(stride));
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, index, row, 4);
}
VF vfma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
VF vfma_masked(VF a, VF b, VF c, VM m) { return _mm512_mask3_fmadd_ps(a, b, c, m); }
void vstore(float* p, VF v) { _mm512_storeu_ps(p, v); }
void vstore_first(float* p, VF v, int64_t n) { _mm512_mask_storeu_ps(p, vrange(0, n), v); }

#include "kernels/conv/conv_depthwise_rows.inc"

}  // namespace

void fill_dwconv_avx512(DwconvTable& t) { t.rows = dwconv_rows_any; }

}  // namespace ember::kernels::dwconv
