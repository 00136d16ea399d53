// f16 / bf16 MatMul: every gemm_lowp microkernel at every ISA level (operands
// against guard pages), and the MatMul op (constant and run-time B, batching),
// against a double-precision dot product of the same 16-bit inputs written here.
// ctest: every ISA level
// ctest: emulated CPUs, gtest filter *TailsAtEveryLevel*:*NanAndInfPropagate*
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/isa.h"
#include "kernels/matmul/gemm_lowp.h"
#include "threading/thread_pool.h"
#include "unit/guard_buffer.h"
#include "unit/op_test_util.h"

namespace ember {
namespace {

using kernels::GemmLowpTable;
using kernels::LowpGemmArgs;

float to_f32(bool bf16, uint16_t v) { return bf16 ? BFloat16::to_float(v) : Float16::to_float(v); }
uint16_t from_f32(bool bf16, float v) { return bf16 ? BFloat16::from_float(v) : Float16::from_float(v); }

// A named table to test: each level of available_isas(), plus the plain
// AVX-512 bf16 kernel when the avx512 table holds the vdpbf16ps one.
struct Level {
  std::string name;
  GemmLowpTable table;
};

std::vector<Level> levels() {
  std::vector<Level> out;
  for (Isa isa : available_isas()) out.push_back({std::string(isa_name(isa)), kernels::gemm_lowp_table(isa)});
  if (active_isa() == Isa::kAvx512 && cpu_features().avx512bf16) {
    GemmLowpTable t = kernels::gemm_lowp_table(Isa::kAvx2);
    kernels::fill_gemm_lowp_avx512(t);
    out.push_back({"avx512 without bf16", t});
  }
  return out;
}

// Random values in [-1, 1] as 16-bit bits; f16 also gets subnormals (exact in
// f32), bf16 none: vdpbf16ps reads bf16 subnormals as zero (gemm_lowp_avx512bf16.cpp).
std::vector<uint16_t> random_values(bool bf16, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = from_f32(bf16, dist(rng));
    if (!bf16 && i % 97 == 5) v[i] = static_cast<uint16_t>(0x0001 + i % 0x3ff);
  }
  return v;
}

// Checks c (m x n, stride ldc) against sum_k a[i,k] b[k,j] in double. Allowed
// error: one rounding to the output type plus 2^-24 sqrt(K) sum |a||b| for
// the f32 accumulation; NaN where the reference is NaN, the same infinity.
void expect_matches(bool bf16, const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, const uint16_t* c,
                    int64_t ldc, int64_t m, int64_t n, int64_t k, const std::string& what) {
  const double rounding = bf16 ? 0x1p-8 : 0x1p-11;
  int failures = 0;
  for (int64_t i = 0; i < m && failures < 5; ++i) {
    for (int64_t j = 0; j < n && failures < 5; ++j) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double p = double(to_f32(bf16, a[i * lda + kk])) * double(to_f32(bf16, b[kk * ldb + j]));
        ref += p;
        mag += std::fabs(p);
      }
      const double got = to_f32(bf16, c[i * ldc + j]);
      bool ok;
      if (std::isnan(ref)) {
        ok = std::isnan(got);
      } else if (std::isinf(ref)) {
        ok = got == ref;
      } else {
        const double acc_err = 0x1p-24 * std::sqrt(double(k)) * mag;
        ok = std::fabs(got - ref) <= rounding * (std::fabs(ref) + acc_err) + acc_err + 0x1p-25;
      }
      if (!ok) {
        ++failures;
        ADD_FAILURE() << what << ": C[" << i << "," << j << "] = " << got << ", want " << ref << " (m=" << m
                      << " n=" << n << " k=" << k << ")";
      }
    }
  }
}

// Runs one microkernel with A, the packed panels and C each against a guard page
// (A and C end with their last row's last element; row strides wider than the
// rows), at the end and then at the start. `a` holds A from element 1 on.
void check_kernel(const Level& level, bool bf16, int64_t m, int64_t n, int64_t k, const std::vector<uint16_t>& a,
                  const std::vector<uint16_t>& b) {
  const int64_t lda = k + 3, ldc = n + 5;
  const int64_t stride = kernels::lowp_panel_stride(bf16, k);
  std::vector<uint16_t> packed(static_cast<size_t>(((n + 15) / 16) * stride));
  kernels::pack_lowp_panels(bf16, b.data(), n, k, n, packed.data());
  const std::span<const uint16_t> a_read = std::span(a).subspan(1, static_cast<size_t>(m ? (m - 1) * lda + k : 0));
  const size_t c_len = static_cast<size_t>(m ? (m - 1) * ldc + n : 0);
  for (test::GuardAt at : test::kBothGuards) {
    const test::GuardedBuffer<uint16_t> ga(a_read, at), panels(packed, at);
    test::GuardedBuffer<uint16_t> c(c_len, 0x7e00, at);
    LowpGemmArgs args;
    args.a = ga.data();
    args.lda = lda;
    args.panels = panels.data();
    args.panel_stride = stride;
    args.c = c.data();
    args.ldc = ldc;
    args.m = m;
    args.n = n;
    args.k = k;
    (bf16 ? level.table.bf16_gemm : level.table.f16_gemm)(args);
    const std::string what = level.name + (bf16 ? " bf16 " : " f16 ") + test::guard_name(at);
    expect_matches(bf16, ga.data(), lda, b.data(), n, c.data(), ldc, m, n, k, what);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = n; j < ldc && i * ldc + j < static_cast<int64_t>(c.size()); ++j) {
        ASSERT_EQ(c[i * ldc + j], 0x7e00) << what << ": wrote past column " << n << " of row " << i;
      }
    }
  }
}

class GemmLowpKernelTest : public ::testing::TestWithParam<bool> {};

TEST_P(GemmLowpKernelTest, TailsAtEveryLevel) {
  const bool bf16 = GetParam();
  std::mt19937 rng(7);
  for (const Level& level : levels()) {
    for (int64_t m : {0, 1, 2, 3, 4, 5, 9}) {
      for (int64_t n : {0, 1, 15, 16, 17, 31, 33, 64, 65, 129}) {
        for (int64_t k : {0, 1, 15, 16, 17, 31, 33, 64, 65, 129, 257, 1031}) {
          if (m * n * k > 400000) continue;
          const int64_t lda = k + 3;
          check_kernel(level, bf16, m, n, k, random_values(bf16, static_cast<size_t>(m * lda + 1), rng),
                       random_values(bf16, static_cast<size_t>(k * n), rng));
        }
      }
    }
  }
}

TEST_P(GemmLowpKernelTest, NanAndInfPropagate) {
  const bool bf16 = GetParam();
  std::mt19937 rng(11);
  const int64_t m = 6, n = 40, k = 37, lda = k + 3;
  const uint16_t inf = bf16 ? 0x7f80 : 0x7c00, nan = bf16 ? 0x7fc0 : 0x7e00, neg_inf = bf16 ? 0xff80 : 0xfc00;
  for (const Level& level : levels()) {
    std::vector<uint16_t> a = random_values(bf16, static_cast<size_t>(m * lda + 1), rng);
    std::vector<uint16_t> b = random_values(bf16, static_cast<size_t>(k * n), rng);
    a[1 + 0 * lda + 3] = inf;       // row 0: +-Inf, NaN where B is 0
    a[1 + 2 * lda + 36] = nan;      // row 2: NaN in the odd last k
    a[1 + 4 * lda + 10] = neg_inf;  // row 4 meets +Inf in B: NaN in that column
    b[10 * n + 5] = inf;
    b[3 * n + 7] = 0;
    b[20 * n + 33] = nan;  // column 33: NaN in every row
    check_kernel(level, bf16, m, n, k, a, b);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GemmLowpKernelTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "bf16" : "f16"; });

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::allocate(dtype, shape);
  const std::vector<uint16_t> v = random_values(dtype == DType::kBF16, static_cast<size_t>(t.numel()), rng);
  if (!v.empty()) std::memcpy(t.data(), v.data(), v.size() * 2);
  return t;
}

// MatMul through the registry; with constant_b the kernel packs B at creation.
Tensor run_matmul(const Tensor& a, const Tensor& b, bool constant_b, int threads) {
  threading::ScopedThreadLimit limit(threads);
  ir::Node node;
  node.name = "mm";
  node.op_type = "MatMul";
  node.opset = 13;
  node.num_explicit_inputs = 2;
  std::vector<DType> dtypes = {a.dtype(), b.dtype()};
  std::vector<const Tensor*> constants = {nullptr, constant_b ? &b : nullptr};
  kernels::KernelInit init{node, dtypes, constants, nullptr};
  auto kernel = kernels::create_kernel(init);
  EXPECT_TRUE(kernel.is_ok()) << kernel.status().message();
  if (!kernel.is_ok()) return Tensor();
  EXPECT_EQ(kernel.value()->prepacked_input(1), constant_b);
  std::vector<const Tensor*> inputs = {&a, &b};
  auto out = kernels::evaluate(*kernel.value(), inputs, 1);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  if (!out.is_ok()) return Tensor();
  return std::move(out.value()[0]);
}

// Matrices in a MatMul operand or result of rank >= 2 (1 for rank 1).
int64_t batch_count(const Shape& s) {
  int64_t count = 1;
  for (size_t d = 0; d + 2 < s.size(); ++d) count *= s[d];
  return count;
}

// numpy matmul of [.., m, k] x [.., k, n] with broadcast batches, checked matrix by matrix.
void check_op(DType dtype, Shape a_shape, Shape b_shape, Shape want_shape) {
  const bool bf16 = dtype == DType::kBF16;
  std::mt19937 rng(3);
  const Tensor a = random_tensor(dtype, a_shape, rng);
  const Tensor b = random_tensor(dtype, b_shape, rng);
  const int64_t k = a_shape.back();
  const int64_t m = a_shape.size() > 1 ? a_shape[a_shape.size() - 2] : 1;
  const int64_t n = b_shape.size() > 1 ? b_shape.back() : 1;
  for (bool constant_b : {false, true}) {
    const Tensor y = run_matmul(a, b, constant_b, 2);
    ASSERT_EQ(y.shape(), want_shape);
    const Tensor y1 = run_matmul(a, b, constant_b, 1);
    ASSERT_EQ(0, std::memcmp(y.data(), y1.data(), y.nbytes())) << "1 and 2 threads differ";
    const int64_t a_mats = batch_count(a_shape), b_mats = batch_count(b_shape), c_mats = batch_count(want_shape);
    for (int64_t t = 0; t < c_mats && m * n > 0; ++t) {
      // Batch shapes used below broadcast one side as a whole or match exactly.
      const int64_t ai = a_mats == 1 ? 0 : (a_mats == c_mats ? t : t / b_mats);
      const int64_t bi = b_mats == 1 ? 0 : (b_mats == c_mats ? t : t % b_mats);
      expect_matches(bf16, static_cast<const uint16_t*>(a.data()) + ai * m * k, k,
                     static_cast<const uint16_t*>(b.data()) + bi * k * n, n,
                     static_cast<const uint16_t*>(y.data()) + t * m * n, n, m, n, k,
                     std::string(dtype_name(dtype)) + (constant_b ? " constant B" : " run-time B"));
    }
  }
}

class MatMulLowpOpTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatMulLowpOpTest, Shapes) {
  const DType t = GetParam();
  check_op(t, {5, 33}, {33, 70}, {5, 70});
  check_op(t, {1, 2048}, {2048, 300}, {1, 300});
  check_op(t, {130, 65}, {65, 200}, {130, 200});
  check_op(t, {33}, {33, 17}, {17});
  check_op(t, {4, 33}, {33}, {4});
  check_op(t, {2, 3, 17}, {17, 9}, {2, 3, 9});          // shared B: one tall product
  check_op(t, {3, 17}, {4, 17, 9}, {4, 3, 9});          // shared A
  check_op(t, {4, 2, 17}, {4, 17, 20}, {4, 2, 20});     // batch against batch
  check_op(t, {2, 1, 3, 17}, {4, 17, 9}, {2, 4, 3, 9});  // both broadcast
  check_op(t, {0, 17}, {17, 9}, {0, 9});
  check_op(t, {3, 0}, {0, 9}, {3, 9});
  check_op(t, {3, 17}, {17, 0}, {3, 0});
  check_op(t, {2, 4100}, {4100, 19}, {2, 19});  // run-time B past the stack panel
}

TEST_P(MatMulLowpOpTest, ZeroKGivesZeros) {
  std::mt19937 rng(5);
  const Tensor a = random_tensor(GetParam(), {3, 0}, rng);
  const Tensor b = random_tensor(GetParam(), {0, 20}, rng);
  for (bool constant_b : {false, true}) {
    const Tensor y = run_matmul(a, b, constant_b, 2);
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(static_cast<const uint16_t*>(y.data())[i], 0);
  }
}

TEST_P(MatMulLowpOpTest, ThreadCountsAgreeBitwise) {
  std::mt19937 rng(9);
  for (Shape s : {Shape{1, 256, 2048}, Shape{70, 300, 500}}) {
    const Tensor a = random_tensor(GetParam(), {s[0], s[1]}, rng);
    const Tensor b = random_tensor(GetParam(), {s[1], s[2]}, rng);
    for (bool constant_b : {false, true}) {
      const Tensor y1 = run_matmul(a, b, constant_b, 1);
      const Tensor y2 = run_matmul(a, b, constant_b, 2);
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.nbytes()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MatMulLowpOpTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(info.param == DType::kBF16 ? "bf16" : "f16");
                         });

}  // namespace
}  // namespace ember
