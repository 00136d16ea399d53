#include "kernels/quant/qgemm.h"

#include <cmath>

#include "base/cpu_features.h"
#include "kernels/common/isa_tables.h"
#include "kernels/quant/qgemm_driver.h"

namespace ember::kernels::quant {
namespace {

// The products and correction terms wrap modulo 2^32 as the SIMD lanes do; the
// unsigned arithmetic keeps that defined in C++.
int32_t corrected(uint32_t dot, int32_t za, int32_t zb, int32_t row_sum, int32_t col_term) {
  return static_cast<int32_t>(dot + static_cast<uint32_t>(za) * static_cast<uint32_t>(col_term) -
                              static_cast<uint32_t>(row_sum) * static_cast<uint32_t>(zb));
}

void gemm_scalar(const QGemmCall& c) {
  for (int64_t i = 0; i < c.m; ++i) {
    const uint8_t* arow = c.a + i * c.lda;
    for (int64_t j = 0; j < c.n; ++j) {
      const int8_t* panel = c.panels + (j / kQGemmPanelCols) * c.panel_stride + (j % kQGemmPanelCols) * 4;
      uint32_t dot = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) {
        const int32_t av = arow[kk] ^ c.a_xor;
        dot += static_cast<uint32_t>(av * panel[(kk / 4) * 64 + kk % 4]);
      }
      const int32_t v = corrected(dot, c.row_zp[i], c.col_zp[j], c.row_sum[i], c.col_term[j]);
      if (c.c) {
        c.c[i * c.ldc + j] = v;
      } else {
        c.q[i * c.ldc + j] = static_cast<uint8_t>(qgemm_requantize(v, c.mult[j], c.y_zp, c.y_signed));
      }
    }
  }
}

int32_t row_sum_scalar(const uint8_t* a, int64_t k, uint8_t a_xor) {
  int32_t sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += a[i] ^ a_xor;
  return sum;
}

void f32_quantize_scalar(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp, bool is_signed) {
  const float lo = static_cast<float>((is_signed ? -128 : 0) - zp);
  const float hi = static_cast<float>((is_signed ? 127 : 255) - zp);
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(v)) + zp);
  }
}

void f32_range_scalar(const float* x, int64_t n, float* lo, float* hi) {
  float l = 0.0f, h = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo = l;
  *hi = h;
}

void fill_qgemm_scalar(QGemmTable& t) {
  t.gemm = gemm_scalar;
  t.row_sum = row_sum_scalar;
  t.f32_quantize = f32_quantize_scalar;
  t.f32_range = f32_range_scalar;
}

void fill_qgemm_avx512_level(QGemmTable& t) {
  fill_qgemm_avx512(t);
  if (cpu_features().avx512vnni) fill_qgemm_avx512vnni(t);
}

}  // namespace

// The clamp compares as MAXPS/MINPS do (a NaN product becomes the low bound),
// then rounds half to even under the default rounding mode, like CVTPS2DQ.
int32_t qgemm_requantize(int32_t acc, float mult, int32_t y_zp, bool y_signed) {
  const float lo = static_cast<float>((y_signed ? -128 : 0) - y_zp);
  const float hi = static_cast<float>((y_signed ? 127 : 255) - y_zp);
  float f = static_cast<float>(acc) * mult;
  f = f > lo ? f : lo;
  f = f < hi ? f : hi;
  return static_cast<int32_t>(std::nearbyint(f)) + y_zp;
}

const QGemmTable& qgemm_table(Isa isa) {
  static const auto tables = build_isa_tables<QGemmTable>(fill_qgemm_scalar, fill_qgemm_avx2, fill_qgemm_avx512_level);
  return select_table(tables, isa);
}

}  // namespace ember::kernels::quant
