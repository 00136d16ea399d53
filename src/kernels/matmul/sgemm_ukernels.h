#pragma once
// f32 GEMM microkernels over packed operands, one table per ISA level.
//
// Packed B (built by pack_b in sgemm.h): columns cut into panels of `nr`, the
// last panel padded with zero columns; panel p is k rows of nr floats,
// b[p][kk][j]. Packed A: a block of `rows` (<= mr) rows stored k-major,
// a[kk * rows + r], so a single row (rows == 1) is just that row of A.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels::sgemm {

struct SgemmTable {
  int64_t mr;  // most rows of one tile
  int64_t nr;  // panel width of packed B
  // For r < rows <= mr and j < cols <= nr:
  //   c[r * ldc + j] = (accumulate ? c[r * ldc + j] : 0) + alpha * sum_kk a[kk * rows + r] * b[kk * nr + j]
  // summed in kk order per element; c is never read unless accumulate.
  void (*tile)(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols,
               float alpha, bool accumulate);
  // B unpacked, row-major with leading dimension ldb:
  //   y[j] = (accumulate ? y[j] : 0) + alpha * sum_kk a[kk] * b[kk * ldb + j] for j < n.
  void (*gemv_rows)(int64_t k, const float* a, const float* b, int64_t ldb, float* y, int64_t n, float alpha,
                    bool accumulate);
};

const SgemmTable& sgemm_table(Isa isa);
inline const SgemmTable& sgemm_table() { return sgemm_table(active_isa()); }

void fill_sgemm_avx2(SgemmTable& t);
void fill_sgemm_avx512(SgemmTable& t);

}  // namespace ember::kernels::sgemm
