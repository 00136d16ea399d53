#include "kernels/matmul/gemm_lowp.h"

#include <algorithm>

#include "base/cpu_features.h"
#include "base/dtype.h"
#include "kernels/common/isa_tables.h"

namespace ember::kernels {
namespace {

// Index of B(k, j) inside a packed panel (layouts in gemm_lowp.h).
int64_t f16_offset(int64_t k, int64_t j) { return k * kLowpPanelCols + j; }
int64_t bf16_offset(int64_t k, int64_t j) { return (k >> 1) * 2 * kLowpPanelCols + 2 * j + (k & 1); }

// The reference order: for each output, a[k] * b[k] added in k order in f32.
template <bool kBf16>
void gemm_lowp_scalar(const LowpGemmArgs& g) {
  auto to_float = [](uint16_t v) { return kBf16 ? BFloat16::to_float(v) : Float16::to_float(v); };
  for (int64_t i = 0; i < g.m; ++i) {
    const uint16_t* a = g.a + i * g.lda;
    for (int64_t j0 = 0; j0 < g.n; j0 += kLowpPanelCols) {
      const uint16_t* panel = g.panels + (j0 / kLowpPanelCols) * g.panel_stride;
      const int64_t cols = std::min(kLowpPanelCols, g.n - j0);
      float acc[kLowpPanelCols] = {};
      for (int64_t k = 0; k < g.k; ++k) {
        const float av = to_float(a[k]);
        for (int64_t j = 0; j < cols; ++j) {
          acc[j] += av * to_float(panel[kBf16 ? bf16_offset(k, j) : f16_offset(k, j)]);
        }
      }
      uint16_t* c = g.c + i * g.ldc + j0;
      for (int64_t j = 0; j < cols; ++j) c[j] = kBf16 ? BFloat16::from_float(acc[j]) : Float16::from_float(acc[j]);
    }
  }
}

void fill_gemm_lowp_scalar(GemmLowpTable& t) {
  t.f16_gemm = gemm_lowp_scalar<false>;
  t.bf16_gemm = gemm_lowp_scalar<true>;
}

void fill_gemm_lowp_avx512_level(GemmLowpTable& t) {
  fill_gemm_lowp_avx512(t);
  if (cpu_features().avx512bf16) fill_gemm_lowp_avx512bf16(t);
}

}  // namespace

int64_t lowp_panel_stride(bool bf16, int64_t k) { return (bf16 ? (k + 1) / 2 * 2 : k) * kLowpPanelCols; }

void pack_lowp_panels(bool bf16, const uint16_t* b, int64_t ldb, int64_t k, int64_t n, uint16_t* panels) {
  const int64_t stride = lowp_panel_stride(bf16, k);
  for (int64_t j0 = 0; j0 < n; j0 += kLowpPanelCols) {
    uint16_t* panel = panels + (j0 / kLowpPanelCols) * stride;
    std::fill_n(panel, stride, uint16_t{0});
    const int64_t cols = std::min(kLowpPanelCols, n - j0);
    for (int64_t kk = 0; kk < k; ++kk) {
      const uint16_t* row = b + kk * ldb + j0;
      for (int64_t j = 0; j < cols; ++j) panel[bf16 ? bf16_offset(kk, j) : f16_offset(kk, j)] = row[j];
    }
  }
}

const GemmLowpTable& gemm_lowp_table(Isa isa) {
  static const auto tables =
      build_isa_tables<GemmLowpTable>(fill_gemm_lowp_scalar, fill_gemm_lowp_avx2, fill_gemm_lowp_avx512_level);
  return select_table(tables, isa);
}

}  // namespace ember::kernels
