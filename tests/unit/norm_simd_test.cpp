// The row microkernels (kernels/norm/row_ukernels.h) at every ISA level against
// double-precision references, and the ops built on them (LayerNormalization,
// the RMS norms, Skip*, Softmax/LogSoftmax, float reductions) against
// double-precision references computed here, for every output, f16/bf16,
// broadcast parameters, zero-size inputs, non-finite rows and 1 vs 2 threads.
// ctest: every ISA level
// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "base/isa.h"
#include "kernels/norm/row_ukernels.h"
#include "threading/thread_pool.h"
#include "unit/guard_buffer.h"
#include "unit/op_test_util.h"

namespace ember {
namespace {

using kernels::RowTable;
using test::attr_float;
using test::attr_int;
using test::attr_ints;
using test::make_tensor;
using test::run_op;
using test::values_of;

constexpr float kInf = std::numeric_limits<float>::infinity();
const std::vector<int64_t> kSizes = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 899, 1000, 4096};

std::vector<float> random_values(int64_t n, uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// The microkernels' rows sit against a guard page (guard_buffer.h): each size
// at the end guard (unaligned unless n is a multiple of 16) and at the start one.
using Guarded = test::GuardedBuffer<float>;
struct Case {
  int64_t n;
  test::GuardAt at;
};
const std::vector<Case> kCases = [] {
  std::vector<Case> cases;
  for (int64_t n : kSizes) {
    for (test::GuardAt at : test::kBothGuards) cases.push_back({n, at});
  }
  return cases;
}();

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

void expect_rel(double got, double want, double scale, double tol, const std::string& what) {
  EXPECT_NEAR(got, want, tol * (scale + std::fabs(want))) << what;
}

std::string where(Isa isa, int64_t n, test::GuardAt at) {
  return std::string(isa_name(isa)) + " n=" + std::to_string(n) + " " + test::guard_name(at);
}

TEST(RowUkernels, SumsAndVarianceMatchDouble) {
  for (Isa isa : available_isas()) {
    const RowTable& t = kernels::row_table(isa);
    for (const auto& [n, at] : kCases) {
      const std::vector<float> v = random_values(n, 1 + static_cast<uint32_t>(n), -2.0f, 5.0f);
      Guarded x(v, at);
      double sum = 0, abs_sum = 0, sq = 0, dev = 0;
      for (float f : v) sum += f, abs_sum += std::fabs(f), sq += double(f) * f;
      const double mean = n ? sum / n : 0;
      for (float f : v) dev += (f - mean) * (f - mean);
      expect_rel(t.sum(x.data(), n), sum, abs_sum, 2e-6, "sum " + where(isa, n, at));
      expect_rel(t.sum_sq_dev(x.data(), n, static_cast<float>(mean)), dev, 0, 2e-6, "sum_sq_dev " + where(isa, n, at));
      expect_rel(t.sum_f64(x.data(), n), sum, abs_sum, 1e-13, "sum_f64 " + where(isa, n, at));
      expect_rel(t.sum_sq_f64(x.data(), n), sq, 0, 1e-13, "sum_sq_f64 " + where(isa, n, at));
      expect_rel(t.sum_abs_f64(x.data(), n), abs_sum, 0, 1e-13, "sum_abs_f64 " + where(isa, n, at));
    }
  }
}

TEST(RowUkernels, NormalizeAndAddInPlace) {
  for (Isa isa : available_isas()) {
    const RowTable& t = kernels::row_table(isa);
    for (const auto& [n, at] : kCases) {
      const std::vector<float> a = random_values(n, 2), b = random_values(n, 3), c = random_values(n, 4);
      Guarded x(a, at), g(b, at), be(c, at), y(static_cast<size_t>(n), at);
      t.normalize(x.data(), y.data(), n, 0.25f, 1.5f, g.data(), be.data());
      for (int64_t i = 0; i < n; ++i) {
        const double want = (double(a[i]) - 0.25) * 1.5 * b[i] + c[i];
        expect_rel(y.data()[i], want, 1, 1e-6, "normalize " + where(isa, n, at));
      }
      t.normalize(x.data(), x.data(), n, 0.25f, 1.5f, g.data(), nullptr);  // in place, no beta
      for (int64_t i = 0; i < n; ++i) {
        expect_rel(x.data()[i], (double(a[i]) - 0.25) * 1.5 * b[i], 1, 1e-6, "normalize in place " + where(isa, n, at));
      }
      Guarded s(a, at);
      t.add3(s.data(), g.data(), be.data(), s.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        expect_rel(s.data()[i], double(a[i]) + b[i] + c[i], 1, 1e-6, "add3 " + where(isa, n, at));
      }
      t.add3(g.data(), be.data(), nullptr, y.data(), n);
      t.scale(y.data(), y.data(), n, -2.0f);
      t.sub2(y.data(), y.data(), n, 0.5f, 0.25f);
      for (int64_t i = 0; i < n; ++i) {
        expect_rel(y.data()[i], (double(b[i]) + c[i]) * -2.0 - 0.75, 1, 1e-6, "add/scale/sub2 " + where(isa, n, at));
      }
      float big[2] = {10000.0f, 10001.0f};
      t.sub2(big, big, 2, 10001.0f, 0.3132617f);
      EXPECT_EQ(big[0], -1.3132617f) << "sub2 rounds x - a first " << where(isa, n, at);
    }
  }
}

bool same_bits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y || (std::isnan(a) && std::isnan(b));
}

// The RMS norms' sums and scaling round exactly as row_ukernels.h states (ORT's
// orders), with the same bits at every level: rows interleaved in every group
// size, tails of every length, a carried accumulator, and non-finite values.
TEST(RowUkernels, RmsEntriesRoundAsOrtAtEveryIsa) {
  const int64_t stride = 1031;
  for (int64_t n : {0, 1, 3, 4, 7, 8, 12, 15, 16, 17, 20, 23, 64, 899, 1000}) {
    for (int64_t rows : {1, 2, 3, 4, 5, 7, 8, 11, 17}) {
      std::vector<float> x = random_values(rows * stride, 60 + static_cast<uint32_t>(n * 31 + rows), -3.0f, 3.0f);
      if (n > 2 && rows > 2) {
        x[static_cast<size_t>(stride + 1)] = std::nanf("");
        x[static_cast<size_t>(2 * stride + n - 1)] = kInf;
      }
      std::vector<float> serial(static_cast<size_t>(rows)), lanes8(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x.data() + r * stride;
        float s = 0.5f;  // the carried accumulator
        for (int64_t i = 0; i < n; ++i) s += xr[i] * xr[i];
        serial[static_cast<size_t>(r)] = s;
        float lane[8] = {};
        const int64_t body = n - n % 8;
        for (int64_t i = 0; i < body; ++i) lane[i % 8] = std::fma(xr[i], xr[i], lane[i % 8]);
        float l = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
        for (int64_t i = body; i < n; ++i) l = i < body + (n - body) / 4 * 4 ? l + xr[i] * xr[i] : std::fma(xr[i], xr[i], l);
        lanes8[static_cast<size_t>(r)] = l;
      }
      // The rows read end with the last row's n-th element, against the guard.
      const std::span<const float> read = std::span(x).first(static_cast<size_t>((rows - 1) * stride + n));
      for (Isa isa : available_isas()) {
        for (test::GuardAt at : test::kBothGuards) {
          const RowTable& t = kernels::row_table(isa);
          const Guarded xg(read, at);
          Guarded got_serial(static_cast<size_t>(rows), 0.5f, at), got_lanes8(static_cast<size_t>(rows), -1.0f, at);
          t.sum_squares_serial(xg.data(), stride, rows, n, got_serial.data());
          t.sum_squares_lanes8(xg.data(), stride, rows, n, got_lanes8.data());
          for (int64_t r = 0; r < rows; ++r) {
            const std::string here = where(isa, n, at) + " rows=" + std::to_string(rows) + " r=" + std::to_string(r);
            EXPECT_TRUE(same_bits(got_serial[r], serial[r]))
                << "serial " << here << ": " << got_serial[r] << " vs " << serial[r];
            EXPECT_TRUE(same_bits(got_lanes8[r], lanes8[r]))
                << "lanes8 " << here << ": " << got_lanes8[r] << " vs " << lanes8[r];
          }
        }
      }
    }
  }
  for (const auto& [n, at] : kCases) {
    std::vector<float> a = random_values(n, 70), g = random_values(n, 71);
    if (n > 3) a[1] = std::nanf(""), a[2] = kInf, a[3] = -0.0f;
    for (float rms : {0.7310586f, 3.0f, 0.0f, kInf}) {
      for (Isa isa : available_isas()) {
        Guarded x(a, at), y(static_cast<size_t>(n), 9.0f, at), gamma(g, at);
        kernels::row_table(isa).rms_scale(x.data(), y.data(), n, rms, gamma.data());
        kernels::row_table(isa).rms_scale(x.data(), x.data(), n, rms, gamma.data());  // in place
        for (int64_t i = 0; i < n; ++i) {
          const float want = a[i] / rms * g[i];
          EXPECT_TRUE(same_bits(y.data()[i], want))
              << "rms_scale " << where(isa, n, at) << " i=" << i << " rms=" << rms;
          EXPECT_TRUE(same_bits(x.data()[i], want)) << "rms_scale in place " << where(isa, n, at) << " i=" << i;
        }
      }
    }
  }
}

TEST(RowUkernels, MaxMinPropagateNaN) {
  for (Isa isa : available_isas()) {
    const RowTable& t = kernels::row_table(isa);
    EXPECT_EQ(t.max(nullptr, 0), -kInf) << isa_name(isa);
    EXPECT_EQ(t.min(nullptr, 0), kInf) << isa_name(isa);
    for (const auto& [n, at] : kCases) {
      if (n == 0) continue;
      std::vector<float> v = random_values(n, 5);
      v[static_cast<size_t>(n) / 2] = 7.5f;
      v[static_cast<size_t>(n) - 1] = n > 1 ? -9.0f : 7.5f;
      Guarded x(v, at);
      EXPECT_EQ(t.max(x.data(), n), 7.5f) << where(isa, n, at);
      EXPECT_EQ(t.min(x.data(), n), n > 1 ? -9.0f : 7.5f) << where(isa, n, at);
      for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
        std::vector<float> w = v;
        w[static_cast<size_t>(pos)] = std::nanf("");
        Guarded xn(w, at);
        EXPECT_TRUE(std::isnan(t.max(xn.data(), n))) << "max NaN at " << pos << " " << where(isa, n, at);
        EXPECT_TRUE(std::isnan(t.min(xn.data(), n))) << "min NaN at " << pos << " " << where(isa, n, at);
      }
    }
  }
}

TEST(RowUkernels, ExpSumAccuracyAndSpecialValues) {
  for (Isa isa : available_isas()) {
    const RowTable& t = kernels::row_table(isa);
    for (const auto& [n, at] : kCases) {
      std::vector<float> v = random_values(n, 6, -100.0f, 0.0f);
      if (n > 3) {
        v[0] = -kInf;
        v[1] = -0.0f;
        v[2] = -1e-40f;  // denormal
      }
      Guarded x(v, at), y(static_cast<size_t>(n), at);
      const float sum = t.exp_sum(x.data(), y.data(), n, 0.0f);
      double want_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double e = std::exp(double(v[i]));
        want_sum += e;
        // 2 ulp of the result plus the smallest normal (denormal results may flush).
        EXPECT_NEAR(y.data()[i], e, 2.4e-7 * e + 1.2e-38) << "exp(" << v[i] << ") " << where(isa, n, at);
      }
      expect_rel(sum, want_sum, 0, 1e-6, "exp sum " + where(isa, n, at));
      EXPECT_EQ(t.exp_sum(x.data(), nullptr, n, 0.0f), sum) << "no store " << where(isa, n, at);
      t.exp_sum(x.data(), x.data(), n, 0.0f);  // in place
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(x.data()[i], y.data()[i]) << where(isa, n, at);
    }
    float special[3] = {std::nanf(""), -kInf, 0.0f};
    float out[3];
    EXPECT_TRUE(std::isnan(t.exp_sum(special, out, 3, 0.0f))) << isa_name(isa);
    EXPECT_TRUE(std::isnan(out[0])) << isa_name(isa);
    EXPECT_EQ(out[1], 0.0f) << isa_name(isa);
    EXPECT_EQ(out[2], 1.0f) << isa_name(isa);
  }
}

TEST(RowUkernels, ColumnAccumulation) {
  for (Isa isa : available_isas()) {
    const RowTable& t = kernels::row_table(isa);
    for (const auto& [n, at] : kCases) {
      const std::vector<float> a = random_values(n, 7), b = random_values(n, 8);
      Guarded x(a, at);
      for (int kind : {kernels::kAccumulateSum, kernels::kAccumulateSquare, kernels::kAccumulateAbs}) {
        test::GuardedBuffer<double> acc(static_cast<size_t>(n), 1.0, at);
        t.accumulate_f64(x.data(), acc.data(), n, kind);
        for (int64_t i = 0; i < n; ++i) {
          const double v = a[i];
          const double want = 1.0 + (kind == 0 ? v : kind == 1 ? v * v : std::fabs(v));
          EXPECT_EQ(acc[static_cast<size_t>(i)], want) << "kind " << kind << " " << where(isa, n, at);
        }
      }
      std::vector<float> w = b;
      if (n > 2) w[1] = std::nanf("");
      Guarded mx(w, at), mn(w, at);
      t.max_into(x.data(), mx.data(), n);
      t.min_into(x.data(), mn.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(w[i])) {
          EXPECT_TRUE(std::isnan(mx.data()[i]) && std::isnan(mn.data()[i])) << where(isa, n, at);
          continue;
        }
        EXPECT_EQ(mx.data()[i], std::max(a[i], b[i])) << where(isa, n, at);
        EXPECT_EQ(mn.data()[i], std::min(a[i], b[i])) << where(isa, n, at);
      }
    }
  }
}

// ---- ops -------------------------------------------------------------------

struct NormRef {
  std::vector<double> y, mean, inv_std, sum;
};

// Rows of `h` over x [+ skip (row r % skip_rows) + bias]; gamma/beta of size h.
NormRef norm_reference(const std::vector<float>& x, int64_t h, bool rms, double eps, const std::vector<float>& gamma,
                       const std::vector<float>* beta, const std::vector<float>* skip = nullptr,
                       const std::vector<float>* bias = nullptr) {
  NormRef r;
  const int64_t rows = h ? static_cast<int64_t>(x.size()) / h : 0;
  const int64_t skip_rows = skip ? static_cast<int64_t>(skip->size()) / h : 1;
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<double> v(static_cast<size_t>(h));
    for (int64_t j = 0; j < h; ++j) {
      double s = x[row * h + j];
      if (skip) s += (*skip)[(row % skip_rows) * h + j];
      if (bias) s += (*bias)[j];
      v[j] = s;
      r.sum.push_back(s);
    }
    const double mean = sum_of(v) / h;
    double sq = 0;
    for (double s : v) sq += rms ? s * s : (s - mean) * (s - mean);
    const double inv = 1.0 / std::sqrt(sq / h + eps);
    for (int64_t j = 0; j < h; ++j) r.y.push_back(((rms ? v[j] : v[j] - mean) * inv) * gamma[j] + (beta ? (*beta)[j] : 0.0));
    r.mean.push_back(mean);
    r.inv_std.push_back(inv);
  }
  return r;
}

void expect_all_close(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    double g;
    if (got.dtype() == DType::kF32) {
      g = got.data_as<float>()[i];
    } else if (got.dtype() == DType::kF16) {
      g = static_cast<float>(got.data_as<Float16>()[i]);
    } else {
      g = static_cast<float>(got.data_as<BFloat16>()[i]);
    }
    ASSERT_NEAR(g, want[i], tol * (1.0 + std::fabs(want[i]))) << what << " element " << i;
  }
}

TEST(LayerNormOps, LayerNormAllOutputsOverHiddenSizes) {
  for (int64_t h : {1, 7, 16, 17, 899, 4096}) {
    const int64_t rows = 3;
    const auto xv = random_values(rows * h, 11, -4.0f, 6.0f), g = random_values(h, 12), b = random_values(h, 13);
    Tensor x = make_tensor<float>({rows, h}, xv), gt = make_tensor<float>({h}, g), bt = make_tensor<float>({h}, b);
    auto r = run_op("LayerNormalization", {&x, &gt, &bt}, {attr_float("epsilon", 1e-5f)}, 3);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const NormRef want = norm_reference(xv, h, false, 1e-5, g, &b);
    expect_all_close(r.value()[0], want.y, 1e-5, "Y h=" + std::to_string(h));
    expect_all_close(r.value()[1], want.mean, 1e-5, "Mean h=" + std::to_string(h));
    expect_all_close(r.value()[2], want.inv_std, 1e-5, "InvStdDev h=" + std::to_string(h));
    EXPECT_EQ(r.value()[1].shape(), (Shape{rows, 1}));
  }
}

TEST(LayerNormOps, OldOpsetAndBroadcastScale) {
  const int64_t h = 33;
  const auto xv = random_values(4 * h, 14);
  Tensor x = make_tensor<float>({2, 2, h}, xv), g = make_tensor<float>({1}, {1.5f}), b = make_tensor<float>({h}, random_values(h, 15));
  auto r = run_op("LayerNormalization", {&x, &g, &b}, {}, 1, /*opset=*/1);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<float> gv(h, 1.5f), bv = values_of<float>(b);
  expect_all_close(r.value()[0], norm_reference(xv, h, false, 1e-5, gv, &bv).y, 1e-5, "broadcast scale");
  // Over the last two dims (axis -2) with a per-column scale [h] broadcast across rows.
  Tensor g2 = make_tensor<float>({h}, random_values(h, 16));
  auto r2 = run_op("LayerNormalization", {&x, &g2}, {attr_int("axis", -2)}, 1);
  ASSERT_TRUE(r2.is_ok()) << r2.status().to_string();
  std::vector<float> g2_full;
  for (int k = 0; k < 2; ++k) for (float v : values_of<float>(g2)) g2_full.push_back(v);
  expect_all_close(r2.value()[0], norm_reference(xv, 2 * h, false, 1e-5, g2_full, nullptr).y, 1e-5, "axis -2");
}

TEST(LayerNormOps, HalfTypes) {
  const int64_t h = 4096 + 17;  // more than one conversion block
  const auto xv = random_values(2 * h, 17), g = random_values(h, 18), b = random_values(h, 19);
  for (DType dt : {DType::kF16, DType::kBF16}) {
    auto round = [&](const std::vector<float>& v, Shape shape) {
      Tensor t = Tensor::allocate(dt, shape);
      std::vector<float> rounded;
      for (size_t i = 0; i < v.size(); ++i) {
        if (dt == DType::kF16) {
          t.data_as<Float16>()[i] = Float16(v[i]);
          rounded.push_back(static_cast<float>(t.data_as<Float16>()[i]));
        } else {
          t.data_as<BFloat16>()[i] = BFloat16(v[i]);
          rounded.push_back(static_cast<float>(t.data_as<BFloat16>()[i]));
        }
      }
      return std::make_pair(std::move(t), rounded);
    };
    auto [x, xr] = round(xv, {2, h});
    auto [gt, gr] = round(g, {h});
    auto [bt, br] = round(b, {h});
    const double tol = dt == DType::kF16 ? 2e-3 : 1.6e-2;
    auto r = run_op("LayerNormalization", {&x, &gt, &bt}, {}, 3);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const NormRef want = norm_reference(xr, h, false, 1e-5, gr, &br);
    expect_all_close(r.value()[0], want.y, tol, std::string("LN ") + std::string(dtype_name(dt)));
    expect_all_close(r.value()[2], want.inv_std, 1e-5, std::string("LN InvStdDev ") + std::string(dtype_name(dt)));
    auto s = run_op("SkipSimplifiedLayerNormalization", {&x, &x, &gt}, {}, 4, 1, "com.microsoft");
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    const NormRef ws = norm_reference(xr, h, true, 1e-12, gr, nullptr, &xr);
    expect_all_close(s.value()[0], ws.y, tol, std::string("SkipSimplified ") + std::string(dtype_name(dt)));
    expect_all_close(s.value()[3], ws.sum, tol, std::string("SkipSimplified sum ") + std::string(dtype_name(dt)));
  }
}

TEST(LayerNormOps, RmsNorms) {
  for (int64_t h : {1, 17, 899, 4096}) {
    const auto xv = random_values(5 * h, 20), g = random_values(h, 21);
    Tensor x = make_tensor<float>({5, h}, xv), gt = make_tensor<float>({h}, g);
    const NormRef want = norm_reference(xv, h, true, 1e-6, g, nullptr);
    auto s = run_op("SimplifiedLayerNormalization", {&x, &gt}, {attr_float("epsilon", 1e-6f)}, 2, 1);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    expect_all_close(s.value()[0], want.y, 1e-5, "Simplified h=" + std::to_string(h));
    expect_all_close(s.value()[1], want.inv_std, 1e-5, "Simplified inv_std_var h=" + std::to_string(h));
    auto r = run_op("RMSNormalization", {&x, &gt}, {attr_float("epsilon", 1e-6f)}, 1, 23);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    expect_all_close(r.value()[0], want.y, 1e-5, "RMSNormalization h=" + std::to_string(h));
  }
}

TEST(LayerNormOps, SkipLayerNormAllFourOutputs) {
  const int64_t batch = 2, seq = 3;
  for (int64_t h : {7, 16, 899}) {
    const auto xv = random_values(batch * seq * h, 22), sv = random_values(seq * h, 23), g = random_values(h, 24),
               b = random_values(h, 25), bias = random_values(h, 26);
    Tensor x = make_tensor<float>({batch, seq, h}, xv), skip = make_tensor<float>({seq, h}, sv),
           gt = make_tensor<float>({h}, g), bt = make_tensor<float>({h}, b), biast = make_tensor<float>({h}, bias);
    auto r = run_op("SkipLayerNormalization", {&x, &skip, &gt, &bt, &biast}, {attr_float("epsilon", 1e-5f)}, 4, 1,
                    "com.microsoft");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const NormRef want = norm_reference(xv, h, false, 1e-5, g, &b, &sv, &bias);
    const std::string what = " h=" + std::to_string(h);
    expect_all_close(r.value()[0], want.y, 1e-5, "output" + what);
    expect_all_close(r.value()[1], want.mean, 1e-5, "mean" + what);
    expect_all_close(r.value()[2], want.inv_std, 1e-5, "inv_std_var" + what);
    expect_all_close(r.value()[3], want.sum, 1e-6, "input_skip_bias_sum" + what);
    auto s = run_op("SkipSimplifiedLayerNormalization", {&x, &skip, &gt, &biast}, {attr_float("epsilon", 1e-5f)}, 4,
                    1, "com.microsoft");
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    const NormRef ws = norm_reference(xv, h, true, 1e-5, g, nullptr, &sv, &bias);
    expect_all_close(s.value()[0], ws.y, 1e-5, "simplified output" + what);
    expect_all_close(s.value()[1], ws.mean, 1e-5, "simplified mean" + what);
    expect_all_close(s.value()[2], ws.inv_std, 1e-5, "simplified inv_std_var" + what);
    expect_all_close(s.value()[3], ws.sum, 1e-6, "simplified sum" + what);
  }
}

TEST(LayerNormOps, ShapeErrorsAndZeroSize) {
  Tensor x = make_tensor<float>({2, 4}, random_values(8, 27)), g = make_tensor<float>({4}, random_values(4, 28));
  Tensor bad = make_tensor<float>({3}, {1, 2, 3}), skip_bad = make_tensor<float>({2, 3}, random_values(6, 29));
  EXPECT_FALSE(run_op("SkipLayerNormalization", {&x, &skip_bad, &g}, {}, 1, 1, "com.microsoft").is_ok());
  EXPECT_FALSE(run_op("SkipLayerNormalization", {&x, &x, &bad}, {}, 1, 1, "com.microsoft").is_ok());
  EXPECT_FALSE(run_op("SkipSimplifiedLayerNormalization", {&x, &x, &g, &bad}, {}, 1, 1, "com.microsoft").is_ok());
  EXPECT_FALSE(run_op("RMSNormalization", {&x, &bad}, {}, 1, 23).is_ok());
  Tensor empty = Tensor::allocate(DType::kF32, {0, 4});
  auto r = run_op("LayerNormalization", {&empty, &g}, {}, 3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].shape(), (Shape{0, 4}));
  auto s = run_op("SkipSimplifiedLayerNormalization", {&empty, &empty, &g}, {}, 4, 1, "com.microsoft");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  // Rows of width 0: the statistics of an empty row are NaN, not left unwritten.
  Tensor no_width = Tensor::allocate(DType::kF32, {3, 0}), no_scale = Tensor::allocate(DType::kF32, {0});
  auto z = run_op("LayerNormalization", {&no_width, &no_scale}, {}, 3);
  ASSERT_TRUE(z.is_ok()) << z.status().to_string();
  ASSERT_EQ(z.value()[1].shape(), (Shape{3, 1}));
  for (float v : values_of<float>(z.value()[1])) EXPECT_TRUE(std::isnan(v));
  for (float v : values_of<float>(z.value()[2])) EXPECT_TRUE(std::isnan(v));
}

// ---- softmax ---------------------------------------------------------------

std::vector<double> softmax_reference(const std::vector<float>& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * n + k) * inner + i); };
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < n; ++k) max = std::max(max, double(x[at(k)]));
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(x[at(k)] - max);
      for (int64_t k = 0; k < n; ++k) y[at(k)] = log ? x[at(k)] - max - std::log(sum) : std::exp(x[at(k)] - max) / sum;
    }
  }
  return y;
}

TEST(SoftmaxOps, LastAndMiddleAxes) {
  for (bool log : {false, true}) {
    const char* op = log ? "LogSoftmax" : "Softmax";
    for (int64_t n : {1, 7, 16, 17, 129, 4096}) {
      const auto xv = random_values(3 * n * 5, 30, -20.0f, 20.0f);
      Tensor x = make_tensor<float>({3, n, 5}, xv);
      auto last = run_op(op, {&x}, {}, 1, 13);
      ASSERT_TRUE(last.is_ok()) << last.status().to_string();
      expect_all_close(last.value()[0], softmax_reference(xv, 3 * n, 5, 1, log), 1e-5, std::string(op) + " last");
      auto mid = run_op(op, {&x}, {attr_int("axis", 1)}, 1, 13);
      ASSERT_TRUE(mid.is_ok()) << mid.status().to_string();
      expect_all_close(mid.value()[0], softmax_reference(xv, 3, n, 5, log), 1e-5, std::string(op) + " axis 1");
      auto coerced = run_op(op, {&x}, {attr_int("axis", 1)}, 1, 11);
      ASSERT_TRUE(coerced.is_ok()) << coerced.status().to_string();
      expect_all_close(coerced.value()[0], softmax_reference(xv, 3, n * 5, 1, log), 1e-5, std::string(op) + " 2-D");
    }
  }
}

TEST(SoftmaxOps, WideStridedAxisSpansColumnBlocks) {
  const int64_t inner = 2048 + 33;
  const auto xv = random_values(2 * 3 * inner, 31, -5.0f, 5.0f);
  Tensor x = make_tensor<float>({2, 3, inner}, xv);
  auto r = run_op("Softmax", {&x}, {attr_int("axis", 1)}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_all_close(r.value()[0], softmax_reference(xv, 2, 3, inner, false), 1e-5, "strided");
}

TEST(SoftmaxOps, InfiniteAndNaNRows) {
  for (int64_t inner : {1, 3}) {
    const int64_t n = 17;
    std::vector<float> v(static_cast<size_t>(3 * n * inner));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 5);
    for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k * inner)] = -kInf;           // row 0: all -inf
    v[static_cast<size_t>((n + 2) * inner)] = std::nanf("");                            // row 1: one NaN
    Tensor x = make_tensor<float>({3, n, inner}, v);
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      auto r = run_op(op, {&x}, {attr_int("axis", 1)}, 1, 13);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      const float* y = r.value()[0].data_as<float>();
      for (int64_t k = 0; k < n; ++k) {
        EXPECT_TRUE(std::isnan(y[k * inner])) << op << " -inf row, inner " << inner;
        EXPECT_TRUE(std::isnan(y[(n + k) * inner])) << op << " NaN row, inner " << inner;
        EXPECT_FALSE(std::isnan(y[(2 * n + k) * inner])) << op << " finite row, inner " << inner;
      }
    }
  }
}

TEST(SoftmaxOps, HalfTypesAndZeroSize) {
  const int64_t n = 2048 + 100;
  const auto xv = random_values(2 * n, 32, -8.0f, 8.0f);
  Tensor x = Tensor::allocate(DType::kF16, {2, n});
  std::vector<float> xr;
  for (size_t i = 0; i < xv.size(); ++i) {
    x.data_as<Float16>()[i] = Float16(xv[i]);
    xr.push_back(static_cast<float>(x.data_as<Float16>()[i]));
  }
  auto r = run_op("Softmax", {&x}, {}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_all_close(r.value()[0], softmax_reference(xr, 2, n, 1, false), 2e-3, "f16 softmax");
  auto l = run_op("LogSoftmax", {&x}, {attr_int("axis", 0)}, 1, 13);
  ASSERT_TRUE(l.is_ok()) << l.status().to_string();
  expect_all_close(l.value()[0], softmax_reference(xr, 1, 2, n, true), 2e-3, "f16 logsoftmax axis 0");
  Tensor empty = Tensor::allocate(DType::kF32, {0, 5});
  auto e = run_op("Softmax", {&empty}, {attr_int("axis", 0)}, 1, 13);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
}

// ---- reductions ------------------------------------------------------------

TEST(ReduceFast, LastLeadingAndMiddleAxes) {
  const int64_t a = 3, b = 2049, c = 5;
  const auto xv = random_values(a * b * c, 33);
  Tensor x = make_tensor<float>({a, b, c}, xv);
  auto at = [&](int64_t i, int64_t j, int64_t k) { return double(xv[static_cast<size_t>((i * b + j) * c + k)]); };
  for (int64_t axis : {0, 1, 2}) {
    const int64_t dims[3] = {a, b, c};
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceMax", "ReduceMin"}) {
      Tensor axes = make_tensor<int64_t>({1}, {axis});
      auto r = run_op(op, {&x, &axes}, {attr_int("keepdims", 0)}, 1, 18);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<double> want;
      for (int64_t i = 0; i < (axis == 0 ? 1 : a); ++i) {
        for (int64_t j = 0; j < (axis == 1 ? 1 : b); ++j) {
          for (int64_t k = 0; k < (axis == 2 ? 1 : c); ++k) {
            double s = 0, sq = 0, l1 = 0, mx = -1e300, mn = 1e300;
            for (int64_t r2 = 0; r2 < dims[axis]; ++r2) {
              const double v = axis == 0 ? at(r2, j, k) : axis == 1 ? at(i, r2, k) : at(i, j, r2);
              s += v, sq += v * v, l1 += std::fabs(v), mx = std::max(mx, v), mn = std::min(mn, v);
            }
            const std::string o = op;
            want.push_back(o == "ReduceSum" ? s : o == "ReduceMean" ? s / dims[axis] : o == "ReduceSumSquare" ? sq
                           : o == "ReduceL1" ? l1 : o == "ReduceL2" ? std::sqrt(sq) : o == "ReduceMax" ? mx : mn);
          }
        }
      }
      expect_all_close(r.value()[0], want, 1e-6, std::string(op) + " axis " + std::to_string(axis));
    }
  }
  std::vector<float> nan_v = xv;
  nan_v[7] = std::nanf("");
  Tensor xn = make_tensor<float>({a, b, c}, nan_v);
  auto mx = run_op("ReduceMax", {&xn}, {attr_ints("axes", {2})}, 1, 13);
  ASSERT_TRUE(mx.is_ok()) << mx.status().to_string();
  EXPECT_TRUE(std::isnan(mx.value()[0].data_as<float>()[1]));
  EXPECT_FALSE(std::isnan(mx.value()[0].data_as<float>()[0]));
}

// ---- threads ---------------------------------------------------------------

std::vector<std::vector<uint32_t>> run_bits(int threads, const std::string& op, std::vector<const Tensor*> inputs,
                                            std::vector<ir::Attribute> attrs, size_t outputs, int opset,
                                            const std::string& domain = "") {
  threading::ScopedThreadLimit limit(threads);
  auto r = run_op(op, std::move(inputs), std::move(attrs), outputs, opset, domain);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<std::vector<uint32_t>> bits;
  if (!r.is_ok()) return bits;
  for (const Tensor& t : r.value()) {
    std::vector<uint32_t> b(static_cast<size_t>(t.numel()));
    std::memcpy(b.data(), t.data(), b.size() * sizeof(uint32_t));
    bits.push_back(std::move(b));
  }
  return bits;
}

TEST(NormThreads, OneAndTwoThreadsGiveIdenticalBits) {
  const int64_t rows = 128, h = 896;
  Tensor x = make_tensor<float>({rows, h}, random_values(rows * h, 40)), g = make_tensor<float>({h}, random_values(h, 41));
  Tensor attn = make_tensor<float>({1, 14, 64, 64}, random_values(14 * 64 * 64, 42, -10.0f, 10.0f));
  struct Case {
    std::string op, domain;
    std::vector<const Tensor*> inputs;
    std::vector<ir::Attribute> attrs;
    size_t outputs;
    int opset;
  };
  const std::vector<Case> cases = {
      {"LayerNormalization", "", {&x, &g, &g}, {}, 3, 17},
      {"SkipSimplifiedLayerNormalization", "com.microsoft", {&x, &x, &g}, {}, 4, 1},
      {"Softmax", "", {&attn}, {}, 1, 13},
      {"LogSoftmax", "", {&attn}, {attr_int("axis", 2)}, 1, 13},
      {"ReduceSum", "", {&x}, {attr_ints("axes", {0})}, 1, 11},
      {"ReduceMean", "", {&x}, {attr_ints("axes", {1})}, 1, 13},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(run_bits(1, c.op, c.inputs, c.attrs, c.outputs, c.opset, c.domain),
              run_bits(2, c.op, c.inputs, c.attrs, c.outputs, c.opset, c.domain))
        << c.op;
  }
}

}  // namespace
}  // namespace ember
