// bf16 GEMM on vdpbf16ps: one instruction multiplies 16 columns x 2 k-steps
// of a packed pair (gemm_lowp.h) by A's pair broadcast as one 32-bit lane and
// adds both products to the f32 accumulators. A is read in place: no widening.
//
// vdpbf16ps treats bf16 denormals as zero and flushes denormal f32 results
// (Intel SDM), so outputs differ from the reference only where products or
// partial sums are below 2^-126; NaN and Inf propagate as in f32.
#include <immintrin.h>

#include <cstdint>

#include "kernels/matmul/gemm_lowp.h"

// GCC 12 warns falsely about the _mm512_undefined_* idiom inside srli and
// cvtps_ph (as in elementwise/simd_f32_avx512.inc).
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace ember::kernels {
namespace {

constexpr int kMaxRows = 4;
// M > 1: 4 rows x 4 panels = 16 accumulators; M = 1: 8 panels, enough
// independent chains to hide the latency of vdpbf16ps while B streams.
constexpr int kMaxPanelsBlocked = 4;
constexpr int kMaxPanelsRow = 8;

#include "kernels/matmul/gemm_lowp_avx512.inc"

int pair_at(const uint16_t* a) {
  int v;
  __builtin_memcpy(&v, a, sizeof(v));
  return v;
}

template <int MR, int NP>
void block(const LowpGemmArgs& g, const uint16_t* a, const uint16_t* panels, uint16_t* c, int64_t cols) {
  __m512 acc[MR][NP];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 32
    for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  const int64_t pairs = g.k / 2;
  const uint16_t* bq = panels;
  for (int64_t q = 0; q < pairs; ++q, bq += 2 * kLowpPanelCols) {
    __m512bh b[NP];
#pragma GCC unroll 32
    for (int p = 0; p < NP; ++p) b[p] = (__m512bh)_mm512_loadu_si512(bq + p * g.panel_stride);
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair_at(a + r * g.lda + 2 * q));
#pragma GCC unroll 32
      for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_dpbf16_ps(acc[r][p], av, b[p]);
    }
  }
  if (g.k & 1) {
    // The last k pairs with a zero in A and in the packed padding.
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(a[r * g.lda + g.k - 1]);
#pragma GCC unroll 32
      for (int p = 0; p < NP; ++p) {
        const __m512bh b = (__m512bh)_mm512_loadu_si512(bq + p * g.panel_stride);
        acc[r][p] = _mm512_dpbf16_ps(acc[r][p], av, b);
      }
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 32
    for (int p = 0; p < NP; ++p) {
      if (p * 16 >= cols) break;
      store_bf16(c + r * g.ldc + p * 16, acc[r][p], cols - p * 16);
    }
  }
}

// Panels per block: up to 8 for a single row, up to 4 when register-blocked.
template <int MR>
void rows_block(const LowpGemmArgs& g, const uint16_t* a, const uint16_t* panels, uint16_t* c, int64_t cols) {
  const int64_t np = (cols + 15) / 16;
  if constexpr (MR == 1) {
    switch (np) {
      case 5: return block<MR, 5>(g, a, panels, c, cols);
      case 6: return block<MR, 6>(g, a, panels, c, cols);
      case 7: return block<MR, 7>(g, a, panels, c, cols);
      case 8: return block<MR, 8>(g, a, panels, c, cols);
      default: break;
    }
  }
  switch (np) {
    case 1: return block<MR, 1>(g, a, panels, c, cols);
    case 2: return block<MR, 2>(g, a, panels, c, cols);
    case 3: return block<MR, 3>(g, a, panels, c, cols);
    default: return block<MR, 4>(g, a, panels, c, cols);
  }
}

void bf16_gemm_avx512bf16(const LowpGemmArgs& g) {
  const int64_t group = 16 * (g.m == 1 ? kMaxPanelsRow : kMaxPanelsBlocked);
  for (int64_t j0 = 0; j0 < g.n; j0 += group) {
    const int64_t cols = min64(group, g.n - j0);
    const uint16_t* panels = g.panels + (j0 / 16) * g.panel_stride;
    int64_t i = 0;
    for (; i + kMaxRows <= g.m; i += kMaxRows) {
      rows_block<kMaxRows>(g, g.a + i * g.lda, panels, g.c + i * g.ldc + j0, cols);
    }
    const uint16_t* a = g.a + i * g.lda;
    uint16_t* c = g.c + i * g.ldc + j0;
    switch (g.m - i) {
      case 3: rows_block<3>(g, a, panels, c, cols); break;
      case 2: rows_block<2>(g, a, panels, c, cols); break;
      case 1: rows_block<1>(g, a, panels, c, cols); break;
      default: break;
    }
  }
}

}  // namespace

void fill_gemm_lowp_avx512bf16(GemmLowpTable& t) { t.bf16_gemm = bf16_gemm_avx512bf16; }

}  // namespace ember::kernels
