// Scalar row microkernels: the level every CPU has. The f32 sums accumulate in
// double here (no lanes to spread the rounding over), which makes this level the
// most accurate of the three.
#include "kernels/norm/row_ukernels.h"

#include <xmmintrin.h>

#include <cmath>
#include <limits>

#include "kernels/common/isa_tables.h"

namespace ember::kernels {
namespace {

float sum_scalar(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return static_cast<float>(s);
}

float sum_sq_dev_scalar(const float* x, int64_t n, float center) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - center;
    s += d * d;
  }
  return static_cast<float>(s);
}

void normalize_scalar(const float* x, float* y, int64_t n, float center, float scale, const float* gamma,
                      const float* beta) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = (x[i] - center) * scale * gamma[i];
    y[i] = beta ? v + beta[i] : v;
  }
}

void add3_scalar(const float* a, const float* b, const float* c, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = c ? a[i] + b[i] + c[i] : a[i] + b[i];
}

// Serial chains of `kRows` rows at once: one f32 add after another per row, as
// ORT sums (row_ukernels.h). A chain is bound by the add latency (4 cycles), so
// interleaving rows keeps the adders busy; the order within each row is fixed.
// In SSE scalar builtins (baseline x86-64): written as plain float code, GCC 12
// vectorizes across the rows with a 4x4 transpose per 4 columns, and the
// shuffles cost more than they save: 128 rows of 896, 39.6 us that way against
// 26.5 us (one row at a time: 72 us), on an AVX-512 Xeon.
template <int kRows>
void sum_squares_serial_rows(const float* x, int64_t stride, int64_t n, float* acc) {
  __m128 a[kRows];
  for (int r = 0; r < kRows; ++r) a[r] = _mm_set_ss(acc[r]);
  for (int64_t i = 0; i < n; ++i) {
    for (int r = 0; r < kRows; ++r) {
      const __m128 v = _mm_load_ss(x + r * stride + i);
      a[r] = _mm_add_ss(a[r], _mm_mul_ss(v, v));
    }
  }
  for (int r = 0; r < kRows; ++r) acc[r] = _mm_cvtss_f32(a[r]);
}

// The one implementation at every level: nothing vectorizes a serial chain, and
// a row interleave of 8 already issues an add per cycle.
void sum_squares_serial_scalar(const float* x, int64_t stride, int64_t rows, int64_t n, float* acc) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) sum_squares_serial_rows<8>(x + r * stride, stride, n, acc + r);
  if (r + 4 <= rows) {
    sum_squares_serial_rows<4>(x + r * stride, stride, n, acc + r);
    r += 4;
  }
  if (r + 2 <= rows) {
    sum_squares_serial_rows<2>(x + r * stride, stride, n, acc + r);
    r += 2;
  }
  if (r < rows) sum_squares_serial_rows<1>(x + r * stride, stride, n, acc + r);
}

float sum_squares_lanes8_row(const float* x, int64_t n) {
  const int64_t body = n - n % 8;
  float lane[8] = {};
  for (int64_t i = 0; i < body; i += 8) {
    for (int l = 0; l < 8; ++l) lane[l] = std::fma(x[i + l], x[i + l], lane[l]);
  }
  float s = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  const int64_t rounded = body + (n - body) / 4 * 4;  // tail elements whose squares round
  for (int64_t i = body; i < rounded; ++i) s += x[i] * x[i];
  for (int64_t i = rounded; i < n; ++i) s = std::fma(x[i], x[i], s);
  return s;
}

// std::fma is a libm call here (the FMA instruction where the CPU has one):
// this level gives the AVX2 kernel's bits on every CPU.
void sum_squares_lanes8_scalar(const float* x, int64_t stride, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = sum_squares_lanes8_row(x + r * stride, n);
}

void rms_scale_scalar(const float* x, float* y, int64_t n, float rms, const float* gamma) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / rms * gamma[i];
}

float max_scalar(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > m || std::isnan(x[i])) m = x[i];
    if (std::isnan(m)) return m;
  }
  return m;
}

float min_scalar(const float* x, int64_t n) {
  float m = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] < m || std::isnan(x[i])) m = x[i];
    if (std::isnan(m)) return m;
  }
  return m;
}

float exp_sum_scalar(const float* x, float* y, int64_t n, float shift) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i] - shift);
    if (y) y[i] = e;
    s += e;
  }
  return static_cast<float>(s);
}

void scale_scalar(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

void sub2_scalar(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - a) - b;
}

double sum_f64_scalar(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

double sum_sq_f64_scalar(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

double sum_abs_f64_scalar(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(x[i]));
  return s;
}

void accumulate_f64_scalar(const float* x, double* acc, int64_t n, int kind) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    acc[i] += kind == kAccumulateSum ? v : kind == kAccumulateSquare ? v * v : std::fabs(v);
  }
}

void max_into_scalar(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > acc[i] || std::isnan(x[i])) acc[i] = std::isnan(acc[i]) ? acc[i] : x[i];
  }
}

void min_into_scalar(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] < acc[i] || std::isnan(x[i])) acc[i] = std::isnan(acc[i]) ? acc[i] : x[i];
  }
}

void fill_row_scalar(RowTable& t) {
  t.sum = sum_scalar;
  t.sum_sq_dev = sum_sq_dev_scalar;
  t.normalize = normalize_scalar;
  t.add3 = add3_scalar;
  t.sum_squares_serial = sum_squares_serial_scalar;
  t.sum_squares_lanes8 = sum_squares_lanes8_scalar;
  t.rms_scale = rms_scale_scalar;
  t.max = max_scalar;
  t.min = min_scalar;
  t.exp_sum = exp_sum_scalar;
  t.scale = scale_scalar;
  t.sub2 = sub2_scalar;
  t.sum_f64 = sum_f64_scalar;
  t.sum_sq_f64 = sum_sq_f64_scalar;
  t.sum_abs_f64 = sum_abs_f64_scalar;
  t.accumulate_f64 = accumulate_f64_scalar;
  t.max_into = max_into_scalar;
  t.min_into = min_into_scalar;
}

}  // namespace

const RowTable& row_table(Isa isa) {
  static const auto tables = build_isa_tables<RowTable>(fill_row_scalar, fill_row_avx2, fill_row_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels
