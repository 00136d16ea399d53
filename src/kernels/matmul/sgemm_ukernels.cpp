#include "kernels/matmul/sgemm_ukernels.h"

#include "kernels/common/isa_tables.h"

namespace ember::kernels::sgemm {
namespace {

constexpr int64_t kScalarMr = 4;
constexpr int64_t kScalarNr = 16;

void f32_tile_scalar_4x16(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t rows,
                          int64_t cols, float alpha, bool accumulate) {
  float acc[kScalarMr][kScalarNr] = {};
  for (int64_t kk = 0; kk < k; ++kk) {
    const float* bk = b + kk * kScalarNr;
    for (int64_t r = 0; r < rows; ++r) {
      const float av = a[kk * rows + r];
      for (int64_t j = 0; j < kScalarNr; ++j) acc[r][j] += av * bk[j];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* cr = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j) cr[j] = (accumulate ? cr[j] : 0.0f) + alpha * acc[r][j];
  }
}

void f32_gemv_rows_scalar(int64_t k, const float* a, const float* b, int64_t ldb, float* y, int64_t n, float alpha,
                          bool accumulate) {
  for (int64_t j0 = 0; j0 < n; j0 += kScalarNr) {
    const int64_t width = n - j0 < kScalarNr ? n - j0 : kScalarNr;
    float acc[kScalarNr] = {};
    for (int64_t kk = 0; kk < k; ++kk) {
      const float* bk = b + kk * ldb + j0;
      for (int64_t j = 0; j < width; ++j) acc[j] += a[kk] * bk[j];
    }
    for (int64_t j = 0; j < width; ++j) y[j0 + j] = (accumulate ? y[j0 + j] : 0.0f) + alpha * acc[j];
  }
}

void fill_sgemm_scalar(SgemmTable& t) {
  t.mr = kScalarMr;
  t.nr = kScalarNr;
  t.tile = f32_tile_scalar_4x16;
  t.gemv_rows = f32_gemv_rows_scalar;
}

}  // namespace

const SgemmTable& sgemm_table(Isa isa) {
  static const auto tables = build_isa_tables<SgemmTable>(fill_sgemm_scalar, fill_sgemm_avx2, fill_sgemm_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels::sgemm
