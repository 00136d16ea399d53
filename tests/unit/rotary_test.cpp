// RotaryEmbedding: the rotation microkernels at every ISA level (every operand
// against a guard page) against a double-precision rotation, and both ops (com.microsoft and ONNX opset 23)
// against hand-computed literals and an independent double-precision reference.
// ctest: every ISA level
// ctest: emulated CPUs
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/isa.h"
#include "guard_buffer.h"
#include "kernels/attention/rotary_ukernels.h"
#include "op_test_util.h"
#include "threading/thread_pool.h"

namespace ember {
namespace {

using kernels::attention::rotary_table;
using test::attr_int;
using test::make_tensor;
using test::run_op;
using test::values_of;

const char* kMs = "com.microsoft";

// |got - want| within a few float roundings of the two products' magnitudes
// (FMA and separate multiplies differ by at most that), NaN where want is NaN.
void expect_rotated(float got, double want, double mag, const std::string& where) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << where << ": got " << got << ", want NaN";
    return;
  }
  if (std::isinf(want)) {
    EXPECT_EQ(static_cast<double>(got), want) << where;
    return;
  }
  const double tol = 4.0 * std::numeric_limits<float>::epsilon() * mag + 4.0 * std::numeric_limits<float>::denorm_min();
  EXPECT_NEAR(got, want, tol) << where;
}

struct PairData {
  std::vector<float> x, cos, sin;
};

// 2 * n values of x (with specials mixed in when asked) and n angles.
PairData random_pairs(int64_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> v(-4.0f, 4.0f), angle(-3.2f, 3.2f);
  PairData d;
  for (int64_t i = 0; i < 2 * n + 2; ++i) d.x.push_back(v(rng));
  for (int64_t i = 0; i < n + 1; ++i) {
    const float a = angle(rng);
    d.cos.push_back(std::cos(a));
    d.sin.push_back(std::sin(a));
  }
  if (specials) {
    const float inf = std::numeric_limits<float>::infinity();
    const float vals[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, -0.0f, 1e-40f, -3e-39f};
    for (size_t k = 0; k < d.x.size(); k += 3) d.x[k] = vals[(k / 3) % 7];
  }
  return d;
}

const int64_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1000, 1031};

using Guarded = test::GuardedBuffer<float>;

// The first n values of `v` from `from` on, against a guard page.
Guarded guarded(const std::vector<float>& v, int64_t from, int64_t n, test::GuardAt at) {
  return Guarded(std::span(v).subspan(static_cast<size_t>(from), static_cast<size_t>(n)), at);
}

TEST(RotaryUkernel, HalfSplitMatchesDoubleAtEveryIsa) {
  for (Isa isa : available_isas()) {
    const auto& t = rotary_table(isa);
    for (int64_t n : kSizes) {
      for (test::GuardAt at : test::kBothGuards) {
        for (bool in_place : {false, true}) {
          for (bool specials : {false, true}) {
            const PairData d = random_pairs(n, static_cast<uint32_t>(n * 7 + (at == test::GuardAt::kStart)), specials);
            const Guarded x0 = guarded(d.x, 0, n, at), x1 = guarded(d.x, n, n, at);
            const Guarded cos = guarded(d.cos, 0, n, at), sin = guarded(d.sin, 0, n, at);
            Guarded y0 = in_place ? guarded(d.x, 0, n, at) : Guarded(static_cast<size_t>(n), 123.0f, at);
            Guarded y1 = in_place ? guarded(d.x, n, n, at) : Guarded(static_cast<size_t>(n), 123.0f, at);
            t.f32_rotate_half(in_place ? y0.data() : x0.data(), in_place ? y1.data() : x1.data(), cos.data(),
                              sin.data(), y0.data(), y1.data(), n);
            for (int64_t i = 0; i < n; ++i) {
              const double a = x0[i], b = x1[i], c = cos[i], s = sin[i];
              const double mag = std::fabs(a * c) + std::fabs(b * s) + std::fabs(b * c) + std::fabs(a * s);
              const std::string where = std::string(isa_name(isa)) + " n=" + std::to_string(n) + " i=" +
                                        std::to_string(i) + (in_place ? " in-place " : " ") + test::guard_name(at);
              expect_rotated(y0[i], a * c - b * s, mag, where);
              expect_rotated(y1[i], b * c + a * s, mag, where);
            }
          }
        }
      }
    }
  }
}

bool same_bits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y || (std::isnan(a) && std::isnan(b));
}

// Every level rounds as rotary_ukernels.h states (ORT's MLAS AVX2 kernel, its
// interleaved remainder included), bit for bit.
TEST(RotaryUkernel, RoundsAsOrtAtEveryIsa) {
  const test::GuardAt at = test::GuardAt::kEnd;
  for (int64_t n : kSizes) {
    for (bool specials : {false, true}) {
      const PairData d = random_pairs(n, static_cast<uint32_t>(n * 5 + specials), specials);
      const int64_t fused = n % 8 == 0 ? n : n - n % 8 + 1;
      const Guarded x0 = guarded(d.x, 0, n, at), x1 = guarded(d.x, n, n, at), x = guarded(d.x, 0, 2 * n, at);
      const Guarded cos = guarded(d.cos, 0, n, at), sin = guarded(d.sin, 0, n, at);
      for (Isa isa : available_isas()) {
        const auto& t = rotary_table(isa);
        Guarded half0(static_cast<size_t>(n), at), half1(static_cast<size_t>(n), at);
        Guarded pairs(static_cast<size_t>(2 * n), at);
        t.f32_rotate_half(x0.data(), x1.data(), cos.data(), sin.data(), half0.data(), half1.data(), n);
        t.f32_rotate_pairs(x.data(), cos.data(), sin.data(), pairs.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          const std::string where = std::string(isa_name(isa)) + " n=" + std::to_string(n) + " i=" + std::to_string(i);
          const float c = d.cos[i], s = d.sin[i];
          float a = d.x[i], b = d.x[n + i];
          EXPECT_TRUE(same_bits(half0[i], std::fma(a, c, -(b * s)))) << "half a' " << where;
          EXPECT_TRUE(same_bits(half1[i], std::fma(a, s, b * c))) << "half b' " << where;
          a = d.x[2 * i], b = d.x[2 * i + 1];
          const volatile float ac = a * c, bs = b * s, as = a * s, bc = b * c;  // rounded, never fused
          const float even = i < fused ? std::fma(a, c, -(b * s)) : ac - bs;
          const float odd = i < fused ? std::fma(a, s, b * c) : as + bc;
          EXPECT_TRUE(same_bits(pairs[2 * i], even)) << "pairs a' " << where;
          EXPECT_TRUE(same_bits(pairs[2 * i + 1], odd)) << "pairs b' " << where;
        }
      }
    }
  }
}

TEST(RotaryUkernel, InterleavedMatchesDoubleAtEveryIsa) {
  for (Isa isa : available_isas()) {
    const auto& t = rotary_table(isa);
    for (int64_t n : kSizes) {
      for (test::GuardAt at : test::kBothGuards) {
        for (bool in_place : {false, true}) {
          for (bool specials : {false, true}) {
            const PairData d = random_pairs(n, static_cast<uint32_t>(n * 13 + (at == test::GuardAt::kStart)), specials);
            Guarded x = guarded(d.x, 0, 2 * n, at);
            const Guarded cos = guarded(d.cos, 0, n, at), sin = guarded(d.sin, 0, n, at);
            Guarded y(static_cast<size_t>(2 * n), 123.0f, at);
            float* out = in_place ? x.data() : y.data();
            t.f32_rotate_pairs(x.data(), cos.data(), sin.data(), out, n);
            for (int64_t i = 0; i < n; ++i) {
              const double a = d.x[2 * i], b = d.x[2 * i + 1];
              const double c = d.cos[i], s = d.sin[i];
              const double mag = std::fabs(a * c) + std::fabs(b * s) + std::fabs(b * c) + std::fabs(a * s);
              const std::string where = std::string(isa_name(isa)) + " pairs=" + std::to_string(n) + " i=" +
                                        std::to_string(i) + (in_place ? " in-place " : " ") + test::guard_name(at);
              expect_rotated(out[2 * i], a * c - b * s, mag, where);
              expect_rotated(out[2 * i + 1], b * c + a * s, mag, where);
            }
          }
        }
      }
    }
  }
}

// ---- op level ----

// Position 0: identity; position 1: angles (pi/2, pi/4) as exact cos/sin pairs.
Tensor cache(bool is_cos) {
  return is_cos ? make_tensor<float>({2, 2}, {1, 1, 0, 0.5f}) : make_tensor<float>({2, 2}, {0, 0, 1, 0.5f});
}

TEST(RotaryEmbeddingOp, ContribHandComputed) {
  const Tensor x = make_tensor<float>({1, 2, 4}, {1, 2, 3, 4, 1, 2, 3, 4});
  const Tensor pos = make_tensor<int64_t>({1}, {0});
  const Tensor cos = cache(true), sin = cache(false);
  auto half = run_op("RotaryEmbedding", {&x, &pos, &cos, &sin}, {}, 1, 1, kMs);
  ASSERT_TRUE(half.is_ok()) << half.status().to_string();
  // Row 1, pairs (1,3) at pi/2 and (2,4) with cos = sin = 0.5.
  EXPECT_EQ(values_of<float>((*half)[0]), (std::vector<float>{1, 2, 3, 4, -3, -1, 1, 3}));
  auto inter = run_op("RotaryEmbedding", {&x, &pos, &cos, &sin}, {attr_int("interleaved", 1)}, 1, 1, kMs);
  ASSERT_TRUE(inter.is_ok()) << inter.status().to_string();
  // Row 1, pairs (1,2) at pi/2 and (3,4) with cos = sin = 0.5.
  EXPECT_EQ(values_of<float>((*inter)[0]), (std::vector<float>{1, 2, 3, 4, -2, 1, -0.5f, 3.5f}));
}

TEST(RotaryEmbeddingOp, ContribPositionForms) {
  const Tensor x = make_tensor<float>({1, 1, 4}, {1, 2, 3, 4});
  const Tensor cos = cache(true), sin = cache(false);
  const std::vector<float> want = {-3, -1, 1, 3};
  const Tensor scalar = make_tensor<int64_t>({}, {1});
  const Tensor vec = make_tensor<int64_t>({1}, {1});
  const Tensor table = make_tensor<int64_t>({1, 1}, {1});
  for (const Tensor* pos : {&scalar, &vec, &table}) {
    auto r = run_op("RotaryEmbedding", {&x, pos, &cos, &sin}, {}, 1, 1, kMs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(values_of<float>((*r)[0]), want) << pos->describe();
  }
}

TEST(RotaryEmbeddingOp, PartialRotaryCopiesTheRest) {
  // Two heads of 6, rotary dim 4: elements 4 and 5 of each head pass through.
  const Tensor x = make_tensor<float>({1, 1, 12}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 7, 8});
  const Tensor pos = make_tensor<int64_t>({1, 1}, {1});
  const Tensor cos = cache(true), sin = cache(false);
  const std::vector<ir::Attribute> attrs = {attr_int("num_heads", 2), attr_int("rotary_embedding_dim", 4)};
  auto r = run_op("RotaryEmbedding", {&x, &pos, &cos, &sin}, attrs, 1, 1, kMs);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>((*r)[0]), (std::vector<float>{-3, -1, 1, 3, 5, 6, -3, -1, 1, 3, 7, 8}));
}

// Independent reference: x as [B, S, N, H] (bsnh) or [B, N, S, H]; angles from
// row `cache_row(b, s)` of caches with `half` columns.
struct RefCase {
  int64_t b = 1, s = 1, n = 1, h = 8, rot = 8;
  bool interleaved = false, bnsh = false;
};

std::vector<float> reference(const RefCase& c, const std::vector<float>& x, const std::vector<float>& cos,
                             const std::vector<float>& sin, const std::vector<int64_t>& rows) {
  std::vector<float> y(x.size());
  const int64_t half = c.rot / 2;
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t s = 0; s < c.s; ++s) {
      for (int64_t n = 0; n < c.n; ++n) {
        const int64_t base = c.bnsh ? ((b * c.n + n) * c.s + s) * c.h : ((b * c.s + s) * c.n + n) * c.h;
        const int64_t row = rows[b * c.s + s];
        for (int64_t i = 0; i < c.h; ++i) y[base + i] = x[base + i];
        for (int64_t i = 0; i < half; ++i) {
          const int64_t ia = c.interleaved ? 2 * i : i, ib = c.interleaved ? 2 * i + 1 : i + half;
          const double a = x[base + ia], bb = x[base + ib];
          const double co = cos[row * half + i], si = sin[row * half + i];
          y[base + ia] = static_cast<float>(a * co - bb * si);
          y[base + ib] = static_cast<float>(bb * co + a * si);
        }
      }
    }
  }
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

Tensor as_f16(const Tensor& t) {
  Tensor out = Tensor::allocate(DType::kF16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.data_as<Float16>()[i] = Float16(t.data_as<float>()[i]);
  return out;
}

std::vector<float> f16_values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(t.data_as<Float16>()[i]);
  return v;
}

// Both ops over head sizes, partial rotary, both layouts and pairings.
TEST(RotaryEmbeddingOp, GridMatchesReference) {
  const int64_t max_pos = 40;
  for (bool onnx : {false, true}) {
    for (int64_t h : {2, 8, 64, 80, 96, 128, 256}) {
      for (int64_t rot : {h, h / 2 - (h / 2) % 2}) {
        if (rot == 0) continue;
        for (bool interleaved : {false, true}) {
          for (bool bnsh : {false, true}) {
            RefCase c{2, 3, 3, h, rot, interleaved, bnsh};
            std::mt19937 rng(static_cast<uint32_t>(h * 31 + rot + interleaved * 7 + bnsh * 3 + onnx));
            const auto xv = random_floats(static_cast<size_t>(c.b * c.s * c.n * h), rng, -2, 2);
            const auto cv = random_floats(static_cast<size_t>(max_pos * rot / 2), rng, -1, 1);
            const auto sv = random_floats(cv.size(), rng, -1, 1);
            const std::vector<int64_t> pos = {5, 0, 39, 7, 7, 12};
            const Tensor x = bnsh ? make_tensor<float>({c.b, c.n, c.s, h}, xv)
                                  : make_tensor<float>({c.b, c.s, c.n * h}, xv);
            const Tensor pt = make_tensor<int64_t>({c.b, c.s}, pos);
            const Tensor ct = make_tensor<float>({max_pos, rot / 2}, cv);
            const Tensor st = make_tensor<float>({max_pos, rot / 2}, sv);
            std::vector<ir::Attribute> attrs = {attr_int("interleaved", interleaved)};
            if (rot != h || !bnsh) attrs.push_back(attr_int("num_heads", c.n));
            if (rot != h) attrs.push_back(attr_int("rotary_embedding_dim", rot));
            auto r = onnx ? run_op("RotaryEmbedding", {&x, &ct, &st, &pt}, attrs, 1, 23)
                          : run_op("RotaryEmbedding", {&x, &pt, &ct, &st}, attrs, 1, 1, kMs);
            const std::string what = std::string(onnx ? "onnx" : "contrib") + " h=" + std::to_string(h) + " rot=" +
                                     std::to_string(rot) + (interleaved ? " interleaved" : "") + (bnsh ? " bnsh" : "");
            ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
            const auto want = reference(c, xv, cv, sv, pos);
            expect_close(values_of<float>((*r)[0]), want, 2e-6, what);
            // f16 in, f16 out: within f16 rounding of the f32-computed value.
            const Tensor x16 = as_f16(x), c16 = as_f16(ct), s16 = as_f16(st);
            auto r16 = onnx ? run_op("RotaryEmbedding", {&x16, &c16, &s16, &pt}, attrs, 1, 23)
                            : run_op("RotaryEmbedding", {&x16, &pt, &c16, &s16}, attrs, 1, 1, kMs);
            ASSERT_TRUE(r16.is_ok()) << what << " f16: " << r16.status().to_string();
            expect_close(f16_values((*r16)[0]), want, 2e-2, what + " f16");
          }
        }
      }
    }
  }
}

TEST(RotaryEmbeddingOp, ContribOffsetPositionsAndBnsh) {
  RefCase c{2, 5, 4, 64, 64, false, true};
  std::mt19937 rng(7);
  const auto xv = random_floats(static_cast<size_t>(c.b * c.s * c.n * c.h), rng, -2, 2);
  const auto cv = random_floats(static_cast<size_t>(16 * 32), rng, -1, 1), sv = random_floats(cv.size(), rng, -1, 1);
  const Tensor x = make_tensor<float>({c.b, c.n, c.s, c.h}, xv);
  const Tensor pos = make_tensor<int64_t>({1}, {11});
  const Tensor ct = make_tensor<float>({16, 32}, cv), st = make_tensor<float>({16, 32}, sv);
  auto r = run_op("RotaryEmbedding", {&x, &pos, &ct, &st}, {}, 1, 1, kMs);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const std::vector<int64_t> rows = {11, 12, 13, 14, 15, 11, 12, 13, 14, 15};
  expect_close(values_of<float>((*r)[0]), reference(c, xv, cv, sv, rows), 2e-6, "offset 11");
}

TEST(RotaryEmbeddingOp, OnnxWithoutPositionIdsUsesPerTokenCaches) {
  RefCase c{2, 3, 2, 16, 16, true, false};
  std::mt19937 rng(9);
  const auto xv = random_floats(static_cast<size_t>(c.b * c.s * c.n * c.h), rng, -2, 2);
  const auto cv = random_floats(static_cast<size_t>(c.b * c.s * 8), rng, -1, 1);
  const auto sv = random_floats(cv.size(), rng, -1, 1);
  const Tensor x = make_tensor<float>({c.b, c.s, c.n * c.h}, xv);
  const Tensor ct = make_tensor<float>({c.b, c.s, 8}, cv), st = make_tensor<float>({c.b, c.s, 8}, sv);
  auto r = run_op("RotaryEmbedding", {&x, &ct, &st}, {attr_int("interleaved", 1), attr_int("num_heads", 2)}, 1, 23);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(values_of<float>((*r)[0]), reference(c, xv, cv, sv, {0, 1, 2, 3, 4, 5}), 2e-6, "per-token caches");
}

TEST(RotaryEmbeddingOp, ZeroSizeInput) {
  const Tensor x = Tensor::allocate(DType::kF32, {0, 3, 8});
  const Tensor pos = make_tensor<int64_t>({1}, {0});
  const Tensor ct = make_tensor<float>({4, 4}, std::vector<float>(16, 1.0f)), st = ct;
  auto r = run_op("RotaryEmbedding", {&x, &pos, &ct, &st}, {}, 1, 1, kMs);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].numel(), 0);
}

TEST(RotaryEmbeddingOp, OneAndTwoThreadsBitIdentical) {
  RefCase c{2, 64, 14, 64, 64, false, false};
  std::mt19937 rng(3);
  const auto xv = random_floats(static_cast<size_t>(c.b * c.s * c.n * c.h), rng, -2, 2);
  const auto cv = random_floats(static_cast<size_t>(128 * 32), rng, -1, 1), sv = random_floats(cv.size(), rng, -1, 1);
  const Tensor x = make_tensor<float>({c.b, c.s, c.n * c.h}, xv);
  const Tensor pos = make_tensor<int64_t>({}, {3});
  const Tensor ct = make_tensor<float>({128, 32}, cv), st = make_tensor<float>({128, 32}, sv);
  std::vector<float> out[2];
  for (int threads : {1, 2}) {
    threading::ScopedThreadLimit limit(threads);
    auto r = run_op("RotaryEmbedding", {&x, &pos, &ct, &st}, {}, 1, 1, kMs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    out[threads - 1] = values_of<float>((*r)[0]);
  }
  EXPECT_EQ(out[0], out[1]);
}

void expect_error(const Result<std::vector<Tensor>>& r, const std::string& needle) {
  ASSERT_FALSE(r.is_ok()) << "expected an error mentioning " << needle;
  EXPECT_NE(r.status().to_string().find(needle), std::string::npos) << r.status().to_string();
}

TEST(RotaryEmbeddingOp, ErrorsNameTheInput) {
  const Tensor x = make_tensor<float>({1, 2, 4}, std::vector<float>(8, 1.0f));
  const Tensor cos = cache(true), sin = cache(false);
  const Tensor far = make_tensor<int64_t>({1, 2}, {0, 2});
  expect_error(run_op("RotaryEmbedding", {&x, &far, &cos, &sin}, {}, 1, 1, kMs), "position_ids' value 2");
  const Tensor negative = make_tensor<int64_t>({1, 2}, {-1, 0});
  expect_error(run_op("RotaryEmbedding", {&x, &negative, &cos, &sin}, {}, 1, 1, kMs), "position_ids' value -1");
  const Tensor offset = make_tensor<int64_t>({1}, {1});
  expect_error(run_op("RotaryEmbedding", {&x, &offset, &cos, &sin}, {}, 1, 1, kMs), "position_ids' offset 1");
  const Tensor bad_pos = make_tensor<int64_t>({2, 1}, {0, 0});
  expect_error(run_op("RotaryEmbedding", {&x, &bad_pos, &cos, &sin}, {}, 1, 1, kMs), "position_ids");
  const Tensor x2 = make_tensor<float>({8}, std::vector<float>(8, 1.0f));
  expect_error(run_op("RotaryEmbedding", {&x2, &offset, &cos, &sin}, {}, 1, 1, kMs), "input 'input'");
  const Tensor short_cos = make_tensor<float>({2, 1}, {1, 1});
  expect_error(run_op("RotaryEmbedding", {&x, &offset, &short_cos, &short_cos}, {attr_int("num_heads", 1),
                                                                               attr_int("rotary_embedding_dim", 4)},
                      1, 1, kMs),
               "cos_cache");
  expect_error(run_op("RotaryEmbedding", {&x, &offset, &cos, &short_cos}, {}, 1, 1, kMs), "sin_cache");
  expect_error(run_op("RotaryEmbedding", {&x, &offset, &cos, &sin}, {attr_int("rotary_embedding_dim", 4)}, 1, 1, kMs),
               "num_heads");
  const Tensor x6 = make_tensor<float>({1, 1, 6}, std::vector<float>(6, 1.0f));
  expect_error(run_op("RotaryEmbedding", {&x6, &offset, &cos, &sin}, {}, 1, 1, kMs), "hidden size 6");
  const Tensor pos32 = make_tensor<int32_t>({1}, {0});
  expect_error(run_op("RotaryEmbedding", {&x, &pos32, &cos, &sin}, {}, 1, 1, kMs), "position_ids' is int32");
  // ONNX: 3-D input without num_heads; caches of the wrong rank for the form.
  const Tensor table = make_tensor<int64_t>({1, 2}, {0, 1});
  expect_error(run_op("RotaryEmbedding", {&x, &cos, &sin, &table}, {}, 1, 23), "num_heads is required");
  expect_error(run_op("RotaryEmbedding", {&x, &cos, &sin}, {attr_int("num_heads", 1)}, 1, 23), "without position_ids");
  expect_error(run_op("RotaryEmbedding", {&x, &cos, &sin, &far}, {attr_int("num_heads", 1)}, 1, 23),
               "position_ids' value 2");
}

}  // namespace
}  // namespace ember
