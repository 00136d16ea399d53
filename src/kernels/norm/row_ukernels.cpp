// Scalar row microkernels: the level every CPU has. The f32 sums accumulate in
// double here (no lanes to spread the rounding over), which makes this level the
// most accurate of the three.
#include "kernels/norm/row_ukernels.h"

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
