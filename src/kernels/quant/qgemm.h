#pragma once
// Integer GEMM microkernels over prepacked weights: u8 activations times s8
// weights, exact in int32 (two's-complement wrap-around, like the reference).
//
// Every operand combination reduces to u8 x s8 exactly: an s8 A is read as
// a ^ 0x80 = a + 128 with its zero point raised by 128, a u8 B is stored as
// b ^ 0x80 = b - 128 with its zero point lowered by 128. Then
//   sum_k (a - za)(b - zb) = sum_k a*b + za * (K*zb - colsum_b) - zb * rowsum_a,
// so a microkernel sums raw products and adds per-row and per-column terms.
//
// Packed B layout (qgemm_driver.cpp packs it once): columns in panels of
// kQGemmPanelCols = 16, the last panel padded with zero columns; K padded with
// zero rows to a multiple of 4. Panel p is `panel_stride` = round_up(K, 4) * 16
// bytes at panels + p * panel_stride; k-group g (k = 4g .. 4g+3) is its 64 bytes
// at g * 64, column c's four values at g * 64 + c * 4 (the vpdpbusd operand).
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::quant {

inline constexpr int64_t kQGemmPanelCols = 16;

// One call: rows [0, m) of A times `panels` consecutive panels, n valid columns.
struct QGemmCall {
  const uint8_t* a = nullptr;  // row i at a + i * lda, read as a ^ a_xor
  int64_t lda = 0;
  uint8_t a_xor = 0;
  int64_t m = 0, k = 0;
  const int32_t* row_sum = nullptr;  // m values: sum_k (a ^ a_xor)
  const int32_t* row_zp = nullptr;   // m values: za (after the shift)
  const int8_t* panels = nullptr;
  int64_t panel_stride = 0;
  int64_t num_panels = 0;
  int64_t n = 0;                       // <= num_panels * 16
  const int32_t* col_zp = nullptr;     // num_panels * 16 values: zb (after the shift)
  const int32_t* col_term = nullptr;   // num_panels * 16 values: K * zb - colsum_b
  int64_t ldc = 0;                     // output row stride, in elements
  int32_t* c = nullptr;                // int32 output, or null for the requantized one:
  uint8_t* q = nullptr;                // q[i, j] = saturate(round_half_even(clamp(float(acc) * mult[j])) + y_zp)
  const float* mult = nullptr;         // num_panels * 16 values
  int32_t y_zp = 0;
  bool y_signed = false;               // s8 output (else u8)
};

struct QGemmTable {
  void (*gemm)(const QGemmCall& call);
  int32_t (*row_sum)(const uint8_t* a, int64_t k, uint8_t a_xor);
  // Activation quantization (QuantizeLinear, DynamicQuantizeLinear) as 8-bit
  // (s8 when is_signed): y = round_half_even(clamp(x / scale, qmin - zp,
  // qmax - zp)) + zp, a NaN quotient clamping to qmin (MAXPS keeps its second
  // operand), as ONNX Runtime's MLAS computes it.
  void (*f32_quantize)(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp, bool is_signed);
  // lo = min(0, x[0..n)), hi = max(0, x[0..n)); NaN elements are skipped.
  void (*f32_range)(const float* x, int64_t n, float* lo, float* hi);
};

const QGemmTable& qgemm_table(Isa isa);
inline const QGemmTable& qgemm_table() { return qgemm_table(active_isa()); }

void fill_qgemm_avx2(QGemmTable& t);
void fill_qgemm_avx512(QGemmTable& t);
// Installed by the avx512 level only when cpu_features() reports AVX-512 VNNI.
void fill_qgemm_avx512vnni(QGemmTable& t);

}  // namespace ember::kernels::quant
