// f32 GEMM: the sgemm microkernels at every ISA level (operands against guard
// pages), the driver, and the MatMul/Gemm ops on it, against a double-precision
// reference.
//
// Tolerance per element: 2^-24 * (2 sqrt(K) + 4) * (sum_k |alpha a b| + |beta c|).
// Each f32 rounding is at most 2^-24 relative; summed in any order, the errors
// of random-signed terms grow like sqrt(K) times the sum of magnitudes (Higham,
// Accuracy and Stability of Numerical Algorithms, 2nd ed., 3.1), and the
// microkernels only reorder the sum (k-chains, K blocks), so 2 sqrt(K) + 4
// leaves room for the epilogue's alpha/beta roundings.
// ctest: every ISA level
// ctest: emulated CPUs, gtest filter SgemmUkernels.*:SgemmOps.*:Sgemm.NanAndInfPropagate
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "base/isa.h"
#include "guard_buffer.h"
#include "kernels/common/shape_util.h"
#include "kernels/matmul/sgemm.h"
#include "kernels/registry.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember {
namespace {

using kernels::GemmParams;
using kernels::sgemm::SgemmTable;
using test::make_tensor;
using test::run_op;
using test::values_of;

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Expected {
  double value;
  double tolerance;
};

Expected dot_reference(const GemmParams& p, const float* a, const float* b, const float* c_before, int64_t i,
                       int64_t j) {
  double sum = 0.0, magnitude = 0.0;
  for (int64_t kk = 0; kk < p.k; ++kk) {
    const double av = p.trans_a ? a[kk * p.lda + i] : a[i * p.lda + kk];
    const double bv = p.trans_b ? b[j * p.ldb + kk] : b[kk * p.ldb + j];
    sum += av * bv;
    magnitude += std::abs(p.alpha * av * bv);
  }
  double value = p.alpha * sum;
  if (p.beta != 0.0f) {
    value += static_cast<double>(p.beta) * c_before[i * p.ldc + j];
    magnitude += std::abs(static_cast<double>(p.beta) * c_before[i * p.ldc + j]);
  }
  return {value, std::ldexp(2.0 * std::sqrt(static_cast<double>(p.k)) + 4.0, -24) * magnitude};
}

void expect_gemm_close(const GemmParams& p, const float* a, const float* b, const std::vector<float>& c_before,
                       const std::vector<float>& c, const std::string& what) {
  int failures = 0;
  for (int64_t i = 0; i < p.m && failures < 5; ++i) {
    for (int64_t j = 0; j < p.n && failures < 5; ++j) {
      const Expected e = dot_reference(p, a, b, c_before.data(), i, j);
      const float got = c[i * p.ldc + j];
      if (!(std::abs(got - e.value) <= e.tolerance)) {
        ++failures;
        ADD_FAILURE() << what << " at (" << i << "," << j << "): got " << got << " want " << e.value << " tol "
                      << e.tolerance;
      }
    }
  }
}

// rows x k of A packed k-major, a k x nr panel, into c with ldc = cols + 3; each
// operand against a guard page (c ends with the last row's cols-th element), at
// the end and then at the start.
TEST(SgemmUkernels, TileMatchesReferenceAtEveryIsa) {
  for (Isa isa : available_isas()) {
    const SgemmTable& t = kernels::sgemm::sgemm_table(isa);
    for (int64_t k : {0, 1, 2, 5, 17, 64, 257}) {
      for (int64_t rows = 1; rows <= t.mr; ++rows) {
        for (int64_t cols : {int64_t{1}, int64_t{7}, t.nr / 2 + 1, t.nr - 1, t.nr}) {
          for (bool accumulate : {false, true}) {
            const float alpha = accumulate ? 0.5f : 1.0f;
            const int64_t ldc = cols + 3;
            const std::vector<float> a0 = random_floats(rows * k + 1, 1), b0 = random_floats(k * t.nr + 1, 2);
            const std::vector<float> c0 = random_floats(rows * ldc + 1, 3);
            const std::span<const float> a = std::span(a0).subspan(1), b = std::span(b0).subspan(1);
            const std::span<const float> before = std::span(c0).subspan(1, (rows - 1) * ldc + cols);
            for (test::GuardAt at : test::kBothGuards) {
              const test::GuardedBuffer<float> ga(a, at), gb(b, at);
              test::GuardedBuffer<float> c(before, at);
              t.tile(k, ga.data(), gb.data(), c.data(), ldc, rows, cols, alpha, accumulate);
              for (int64_t r = 0; r < rows; ++r) {
                for (int64_t j = 0; j < (r + 1 < rows ? ldc : cols); ++j) {
                  const float got = c[r * ldc + j];
                  if (j >= cols) {
                    ASSERT_EQ(got, before[r * ldc + j]) << "wrote past cols at " << isa_name(isa);
                    continue;
                  }
                  double sum = 0.0, mag = 0.0;
                  for (int64_t kk = 0; kk < k; ++kk) {
                    sum += static_cast<double>(a[kk * rows + r]) * b[kk * t.nr + j];
                    mag += std::abs(static_cast<double>(a[kk * rows + r]) * b[kk * t.nr + j]);
                  }
                  const double want = (accumulate ? before[r * ldc + j] : 0.0) + alpha * sum;
                  const double tol = std::ldexp(2.0 * std::sqrt(static_cast<double>(k)) + 4.0, -24) *
                                     (mag + std::abs(before[r * ldc + j]));
                  ASSERT_NEAR(got, want, tol) << isa_name(isa) << " k " << k << " rows " << rows << " cols " << cols
                                              << " r " << r << " j " << j << " accumulate " << accumulate << " "
                                              << test::guard_name(at);
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(SgemmUkernels, GemvRowsMatchesReferenceAtEveryIsa) {
  for (Isa isa : available_isas()) {
    const SgemmTable& t = kernels::sgemm::sgemm_table(isa);
    for (int64_t k : {0, 1, 7, 33, 300}) {
      for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1000}) {
        for (bool accumulate : {false, true}) {
          const int64_t ldb = n + 5;
          const std::vector<float> a = random_floats(k + 1, 4), b = random_floats(k * ldb + 1, 5);
          const std::vector<float> y0 = random_floats(n + 2, 6);
          // B's last row ends with its n-th element, against the guard.
          const std::span<const float> a_read = std::span(a).subspan(1);
          const std::span<const float> b_read = std::span(b).subspan(1, k ? (k - 1) * ldb + n : 0);
          const std::vector<float> c_before(y0.begin() + 1, y0.end() - 1);
          for (test::GuardAt at : test::kBothGuards) {
            const test::GuardedBuffer<float> ga(a_read, at), gb(b_read, at);
            test::GuardedBuffer<float> y(c_before, at);
            t.gemv_rows(k, ga.data(), gb.data(), ldb, y.data(), n, 2.0f, accumulate);
            GemmParams p;
            p.m = 1, p.n = n, p.k = k, p.lda = k, p.ldb = ldb, p.ldc = n, p.alpha = 2.0f;
            p.beta = accumulate ? 1.0f : 0.0f;
            const std::vector<float> got(y.begin(), y.end());
            expect_gemm_close(p, a.data() + 1, b.data() + 1, c_before, got,
                              std::string(isa_name(isa)) + " gemv_rows k " + std::to_string(k) + " n " +
                                  std::to_string(n) + " " + test::guard_name(at));
          }
        }
      }
    }
  }
}

struct DriverCase {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
};

// Runs the unpacked and the prepacked driver paths at 1 and 2 threads: both
// match the reference, and the two thread counts agree bit for bit.
void check_driver(const SgemmTable& t, Isa isa, const DriverCase& dc) {
  GemmParams p;
  p.m = dc.m, p.n = dc.n, p.k = dc.k, p.trans_a = dc.trans_a, p.trans_b = dc.trans_b;
  p.lda = dc.trans_a ? dc.m : dc.k;
  p.ldb = dc.trans_b ? dc.k : dc.n;
  p.ldc = dc.n;
  p.alpha = dc.alpha, p.beta = dc.beta;
  const std::vector<float> a = random_floats(dc.m * dc.k + 1, 7), b = random_floats(dc.k * dc.n + 1, 8);
  const std::vector<float> c0 = random_floats(dc.m * dc.n, 9);
  const kernels::sgemm::PackedWeight weight(t, b.data() + 1, p.ldb, dc.trans_b, dc.k, dc.n);
  const std::string what = std::string(isa_name(isa)) + " m " + std::to_string(dc.m) + " n " + std::to_string(dc.n) +
                           " k " + std::to_string(dc.k) + " tA " + std::to_string(dc.trans_a) + " tB " +
                           std::to_string(dc.trans_b);
  std::vector<float> first;
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    std::vector<float> c = c0, packed = c0;
    kernels::sgemm::gemm(t, p, a.data() + 1, b.data() + 1, c.data());
    weight.gemm(t, p, a.data() + 1, packed.data());
    expect_gemm_close(p, a.data() + 1, b.data() + 1, c0, c, what + " unpacked");
    expect_gemm_close(p, a.data() + 1, b.data() + 1, c0, packed, what + " packed");
    if (threads == 1) {
      first = packed;
    } else {
      // memcmp of an empty vector's null data() is undefined: compare sizes first.
      ASSERT_EQ(first.size(), packed.size());
      EXPECT_TRUE(first.empty() || std::memcmp(first.data(), packed.data(), first.size() * sizeof(float)) == 0)
          << what << " 1 vs 2 threads";
    }
  }
}

TEST(Sgemm, DriverMatchesReferenceOverTileTails) {
  const std::vector<int64_t> dims = {0, 1, 2, 5, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 300};
  for (Isa isa : available_isas()) {
    const SgemmTable& t = kernels::sgemm::sgemm_table(isa);
    for (int64_t m : dims) {
      for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{65}, int64_t{129}}) {
        check_driver(t, isa, {m, n, 33, false, false, 1.0f, 0.0f});
      }
    }
    for (int64_t n : dims) check_driver(t, isa, {13, n, 31, false, false, 1.0f, 0.0f});
    for (int64_t k : dims) check_driver(t, isa, {7, 40, k, false, false, 1.0f, 1.0f});
    // A blocks (M > 144) with all of K in one block, and a long GEMV.
    check_driver(t, isa, {300, 129, 1030, false, false, 1.0f, 0.0f});
    // K blocks of an A block packed whole, panels in groups (12 and 1 of 84 rows).
    check_driver(t, isa, {150, 420, 2000, false, false, 1.0f, 0.0f});
    check_driver(t, isa, {150, 40, 2000, true, false, 0.5f, 1.0f});
    // A block too large to pack whole: K blocks packed one at a time.
    check_driver(t, isa, {140, 33, 4000, false, true, 1.0f, 0.0f});
    check_driver(t, isa, {1, 1000, 1030, false, false, 1.0f, 0.0f});
    check_driver(t, isa, {5, 70, 3100, false, false, 1.0f, 0.0f});
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        check_driver(t, isa, {1, 65, 129, ta, tb, 0.5f, 2.0f});
        check_driver(t, isa, {150, 33, 300, ta, tb, -1.5f, 0.25f});
        check_driver(t, isa, {17, 1, 5, ta, tb, 1.0f, 1.0f});
      }
    }
  }
}

TEST(Sgemm, NanAndInfPropagate) {
  for (Isa isa : available_isas()) {
    const SgemmTable& t = kernels::sgemm::sgemm_table(isa);
    for (int64_t m : {1, 20}) {
      const int64_t n = 40, k = 9;
      std::vector<float> a(m * k, 1.0f), b(k * n, 1.0f), c(m * n, std::numeric_limits<float>::quiet_NaN());
      a[0] = std::numeric_limits<float>::quiet_NaN();           // row 0 becomes NaN
      b[3 * n + 5] = std::numeric_limits<float>::infinity();     // column 5 becomes +Inf (other rows)
      GemmParams p;
      p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = n, p.ldc = n;
      const kernels::sgemm::PackedWeight weight(t, b.data(), n, false, k, n);
      weight.gemm(t, p, a.data(), c.data());  // beta 0: the NaN in C is never read
      for (int64_t j = 0; j < n; ++j) EXPECT_TRUE(std::isnan(c[j])) << isa_name(isa);
      for (int64_t i = 1; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          if (j == 5) {
            EXPECT_EQ(c[i * n + j], std::numeric_limits<float>::infinity()) << isa_name(isa);
          } else {
            EXPECT_EQ(c[i * n + j], 9.0f) << isa_name(isa);
          }
        }
      }
    }
  }
}

// What the epilogue saw: each element's count of calls covering it and its
// value at the call, which must already be final.
struct EpilogueLog {
  int64_t ldc = 0;
  const float* c = nullptr;
  int64_t panel_width = 0;
  std::vector<int> calls;
  std::vector<float> seen;
};

void log_epilogue(const void* ctx, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float* c, int64_t ldc) {
  auto& log = *static_cast<EpilogueLog*>(const_cast<void*>(ctx));
  EXPECT_EQ(ldc, log.ldc);
  EXPECT_EQ(c, log.c + row0 * ldc + col0);
  EXPECT_TRUE(cols <= log.panel_width || (row0 == 0 && col0 == 0)) << "block wider than a panel: " << cols;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      ++log.calls[(row0 + r) * ldc + col0 + j];
      log.seen[(row0 + r) * ldc + col0 + j] = c[r * ldc + j];
      c[r * ldc + j] += 1.0f;  // the epilogue may rewrite its block
    }
  }
}

// The epilogue sees every element of C once, after its last K block: run at one
// thread so the plain EXPECTs in the callback need no locking.
TEST(Sgemm, EpilogueSeesEachFinishedBlockOnce) {
  threading::ScopedThreadLimit one(1);
  for (Isa isa : available_isas()) {
    const SgemmTable& t = kernels::sgemm::sgemm_table(isa);
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 100, 300}, {13, 33, 17}, {300, 65, 600},
                           {150, 420, 2000}, {140, 33, 4000}, {7, 1, 1}, {5, 40, 0}}) {
      const std::vector<float> a = random_floats(m * k, 20), b = random_floats(k * n + 1, 21);
      const kernels::sgemm::PackedWeight weight(t, b.data(), n, false, k, n);
      GemmParams p;
      p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = n, p.ldc = n + 3;
      std::vector<float> plain(m * p.ldc, 0.0f), c(m * p.ldc, 0.0f);
      weight.gemm(t, p, a.data(), plain.data());
      EpilogueLog log{p.ldc, c.data(), t.nr, std::vector<int>(c.size(), 0), std::vector<float>(c.size(), 0.0f)};
      weight.gemm(t, p, a.data(), c.data(), {log_epilogue, &log});
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = i * p.ldc + j;
          ASSERT_EQ(log.calls[at], 1) << isa_name(isa) << " m " << m << " n " << n << " at " << i << "," << j;
          ASSERT_EQ(log.seen[at], plain[at]) << isa_name(isa) << " m " << m << " n " << n << " at " << i << "," << j;
          ASSERT_EQ(c[at], plain[at] + 1.0f) << isa_name(isa);
        }
      }
    }
  }
}

// Runs op_type with inputs marked constant where `constant` says so, as a
// session does for initializers (run_op treats every input as a run-time value).
Result<std::vector<Tensor>> run_with_constants(const std::string& op_type, std::vector<const Tensor*> inputs,
                                               std::vector<bool> constant, std::vector<ir::Attribute> attrs = {}) {
  ir::Node node;
  node.name = "test_" + op_type;
  node.op_type = op_type;
  node.opset = 17;
  node.attributes = std::move(attrs);
  std::vector<DType> dtypes;
  std::vector<const Tensor*> constants;
  for (size_t i = 0; i < inputs.size(); ++i) {
    dtypes.push_back(inputs[i] ? inputs[i]->dtype() : DType::kUndefined);
    constants.push_back(constant[i] ? inputs[i] : nullptr);
  }
  node.num_explicit_inputs = inputs.size();
  kernels::KernelInit init{node, dtypes, constants, nullptr};
  EMBER_ASSIGN_OR_RETURN(auto kernel, kernels::create_kernel(init));
  if (constant[1] && !kernel->prepacked_input(1)) return internal_error("constant B was not prepacked");
  return kernels::evaluate(*kernel, inputs, 1);
}

// numpy matmul of [..., m, k] by [..., k, n] in double, for the op-level tests.
std::vector<double> matmul_reference(const std::vector<float>& a, const std::vector<float>& b, int64_t batches,
                                     bool b_batched, int64_t m, int64_t k, int64_t n) {
  std::vector<double> y(batches * m * n, 0.0);
  for (int64_t t = 0; t < batches; ++t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          s += static_cast<double>(a[(t * m + i) * k + kk]) * b[((b_batched ? t : 0) * k + kk) * n + j];
        }
        y[(t * m + i) * n + j] = s;
      }
    }
  }
  return y;
}

void expect_values_near(const std::vector<float>& got, const std::vector<double>& want, int64_t k) {
  ASSERT_EQ(got.size(), want.size());
  const double tol = std::ldexp(2.0 * std::sqrt(static_cast<double>(k)) + 4.0, -24) * static_cast<double>(k);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(SgemmOps, MatMulConstantAndRuntimeBMatchWithBatchBroadcast) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 300, 129}, {17, 65, 33}, {64, 1030, 70}}) {
    const std::vector<float> av = random_floats(3 * m * k, 10), bv = random_floats(k * n, 11);
    Tensor a = make_tensor<float>({3, m, k}, av);
    Tensor b = make_tensor<float>({k, n}, bv);
    const std::vector<double> want = matmul_reference(av, bv, 3, false, m, k, n);
    for (bool constant : {false, true}) {
      for (int threads : {1, 2}) {
        threading::ScopedThreadLimit limit(threads);
        auto r = run_with_constants("MatMul", {&a, &b}, {false, constant});
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        EXPECT_EQ(r.value()[0].shape(), (Shape{3, m, n}));
        expect_values_near(values_of<float>(r.value()[0]), want, k);
      }
    }
  }
}

TEST(SgemmOps, MatMulBatchedBAndOneDimensionalOperands) {
  const int64_t m = 5, k = 37, n = 19;
  const std::vector<float> av = random_floats(2 * m * k, 12), bv = random_floats(2 * k * n, 13);
  Tensor a = make_tensor<float>({2, m, k}, av);
  Tensor b = make_tensor<float>({2, k, n}, bv);
  auto r = run_op("MatMul", {&a, &b});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_values_near(values_of<float>(r.value()[0]), matmul_reference(av, bv, 2, true, m, k, n), k);
  // [k] x [k, n] -> [n], both with B constant and not.
  Tensor v = make_tensor<float>({k}, std::vector<float>(av.begin(), av.begin() + k));
  Tensor b2 = make_tensor<float>({k, n}, std::vector<float>(bv.begin(), bv.begin() + k * n));
  for (bool constant : {false, true}) {
    auto rv = run_with_constants("MatMul", {&v, &b2}, {false, constant});
    ASSERT_TRUE(rv.is_ok()) << rv.status().to_string();
    EXPECT_EQ(rv.value()[0].shape(), (Shape{n}));
    expect_values_near(values_of<float>(rv.value()[0]), matmul_reference(av, bv, 1, false, 1, k, n), k);
  }
  // [m, k] x [k] -> [m].
  Tensor w = make_tensor<float>({k}, std::vector<float>(bv.begin(), bv.begin() + k));
  Tensor a2 = make_tensor<float>({m, k}, std::vector<float>(av.begin(), av.begin() + m * k));
  auto rw = run_with_constants("MatMul", {&a2, &w}, {false, true});
  ASSERT_TRUE(rw.is_ok()) << rw.status().to_string();
  EXPECT_EQ(rw.value()[0].shape(), (Shape{m}));
  expect_values_near(values_of<float>(rw.value()[0]),
                     matmul_reference(av, std::vector<float>(bv.begin(), bv.begin() + k), 1, false, m, k, 1), k);
}

TEST(SgemmOps, MatMulZeroSizes) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{0, 4, 3}, {2, 4, 0}, {2, 0, 3}, {1, 0, 3}}) {
    Tensor a = make_tensor<float>({m, k}, std::vector<float>(m * k, 1.0f));
    Tensor b = make_tensor<float>({k, n}, std::vector<float>(k * n, 1.0f));
    for (bool constant : {false, true}) {
      auto r = run_with_constants("MatMul", {&a, &b}, {false, constant});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_EQ(r.value()[0].shape(), (Shape{m, n}));
      for (float x : values_of<float>(r.value()[0])) EXPECT_EQ(x, 0.0f);
    }
  }
}

TEST(SgemmOps, GemmBroadcastsCWithTransposesAndScales) {
  const int64_t m = 19, k = 45, n = 37;
  const std::vector<float> av = random_floats(m * k, 14), bv = random_floats(k * n, 15);
  const std::vector<Shape> c_shapes = {{n}, {1, n}, {m, 1}, {}, {1}, {m, n}};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (const Shape& cs : c_shapes) {
        const std::vector<float> cv = random_floats(static_cast<size_t>(shape_numel(cs)), 16);
        Tensor a = make_tensor<float>(ta ? Shape{k, m} : Shape{m, k}, av);
        Tensor b = make_tensor<float>(tb ? Shape{n, k} : Shape{k, n}, bv);
        Tensor c = make_tensor<float>(cs, cv);
        std::vector<double> want(m * n);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (int64_t kk = 0; kk < k; ++kk) {
              s += static_cast<double>(ta ? av[kk * m + i] : av[i * k + kk]) * (tb ? bv[j * k + kk] : bv[kk * n + j]);
            }
            const Shape st = kernels::broadcast_strides(cs, Shape{m, n});
            want[i * n + j] = 0.75 * s - 2.0 * cv[i * st[0] + j * st[1]];
          }
        }
        for (bool constant : {false, true}) {
          auto r = run_with_constants("Gemm", {&a, &b, &c}, {false, constant, false},
                                      {test::attr_int("transA", ta), test::attr_int("transB", tb),
                                       test::attr_float("alpha", 0.75f), test::attr_float("beta", -2.0f)});
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          expect_values_near(values_of<float>(r.value()[0]), want, 2 * k);
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember
