#pragma once
// f16 and bf16 GEMM microkernels: C = A x B with A and C row-major 16-bit
// floats (raw bits), B packed in column panels, every dot product accumulated
// in f32 in k order and rounded once to the output type.
//
// Packed B (pack_lowp_panels): columns cut into panels of kLowpPanelCols = 16,
// the last padded with zero columns; panel p starts at p * panel_stride.
//   f16:  K rows of 16 values; row k at k * 16 (one vcvtph2ps per k-step).
//   bf16: K rounded up to even, k-steps in pairs; pair q at q * 32 holds
//         (k = 2q, k = 2q + 1) of column j at 2j and 2j + 1: one zmm is 16
//         columns x 2 k-steps, the operand layout of vdpbf16ps. The padding k
//         of an odd K is zero.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels {

inline constexpr int64_t kLowpPanelCols = 16;

struct LowpGemmArgs {
  const uint16_t* a = nullptr;  // m x k, row stride lda
  int64_t lda = 0;
  const uint16_t* panels = nullptr;  // ceil(n / 16) packed panels
  int64_t panel_stride = 0;          // elements from one panel to the next
  uint16_t* c = nullptr;             // m x n, row stride ldc
  int64_t ldc = 0;
  int64_t m = 0, n = 0, k = 0;
};

struct GemmLowpTable {
  void (*f16_gemm)(const LowpGemmArgs& args);
  void (*bf16_gemm)(const LowpGemmArgs& args);
};

const GemmLowpTable& gemm_lowp_table(Isa isa);
inline const GemmLowpTable& gemm_lowp_table() { return gemm_lowp_table(active_isa()); }

void fill_gemm_lowp_avx2(GemmLowpTable& t);
void fill_gemm_lowp_avx512(GemmLowpTable& t);
// vdpbf16ps kernels; the avx512 table takes them when cpu_features() reports avx512_bf16.
void fill_gemm_lowp_avx512bf16(GemmLowpTable& t);

// Elements of one packed panel of a K-deep B.
int64_t lowp_panel_stride(bool bf16, int64_t k);
// Packs columns [0, n) of the k x n row-major B (row stride ldb) into
// ceil(n / 16) panels at `panels`, each panel_stride elements.
void pack_lowp_panels(bool bf16, const uint16_t* b, int64_t ldb, int64_t k, int64_t n, uint16_t* panels);

}  // namespace ember::kernels
