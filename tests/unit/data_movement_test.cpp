// Data movement (Transpose, Slice, Concat, Split, Gather, Expand) and Cast against
// naive index-walk references written here, at every ISA level, over sizes around
// the 8x8 / 16x16 register tiles and the 64x64 blocks, for 1-, 2-, 4- and 8-byte
// elements; 1 and 2 threads must give identical bytes.
// ctest: every ISA level
// ctest: emulated CPUs
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "base/isa.h"
#include "kernels/tensor/transpose_ukernels.h"
#include "threading/thread_pool.h"
#include "unit/op_test_util.h"

namespace ember::test {
namespace {

using kernels::tensor_ops::TransposeFn;
using kernels::tensor_ops::transpose_table;

constexpr DType kDTypeOfSize[] = {DType::kUndefined, DType::kU8, DType::kI16, DType::kUndefined, DType::kF32,
                                  DType::kUndefined, DType::kUndefined, DType::kUndefined, DType::kI64};

// Every byte distinct-ish, so a misplaced element never compares equal by luck.
void fill_bytes(Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  auto* p = static_cast<uint8_t*>(t.data());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(rng());
}

Tensor random_tensor(DType dt, Shape shape, uint32_t seed) {
  Tensor t = Tensor::allocate(dt, std::move(shape));
  fill_bytes(t, seed);
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

Tensor run_ok(const std::string& op, std::vector<const Tensor*> inputs, std::vector<ir::Attribute> attrs = {},
              size_t num_outputs = 1, size_t k = 0) {
  auto r = run_op(op, std::move(inputs), std::move(attrs), num_outputs, 18);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return Tensor();
  return std::move(r.value()[k]);
}

Tensor i64s(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return make_tensor<int64_t>({n}, std::move(v));
}

// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Calls fn(out_linear, index) for every index of `shape`.
template <typename Fn>
void for_each_index(const Shape& shape, Fn&& fn) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(k, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// --- transpose microkernels -------------------------------------------------

TEST(TransposeUkernel, AllIsasSizesAndStrides) {
  const int64_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 129};
  for (Isa isa : available_isas()) {
    const auto& t = transpose_table(isa);
    for (size_t esize : {1, 2, 4, 8}) {
      TransposeFn fn = esize == 1 ? t.x8 : esize == 2 ? t.x16 : esize == 4 ? t.x32 : t.x64;
      for (int64_t rows : sizes) {
        for (int64_t cols : sizes) {
          // Padded strides and a one-element offset: unaligned rows, and the padding
          // must stay untouched.
          const int64_t ss = cols + 3;
          const int64_t ds = rows + 5;
          std::vector<uint8_t> src(static_cast<size_t>((rows * ss + 1) * esize));
          std::vector<uint8_t> dst(static_cast<size_t>((cols * ds + 1) * esize), 0xA5);
          std::mt19937 rng(static_cast<uint32_t>(rows * 1000 + cols));
          for (auto& b : src) b = static_cast<uint8_t>(rng());
          std::vector<uint8_t> want = dst;
          const uint8_t* s = src.data() + esize;
          for (int64_t i = 0; i < rows; ++i) {
            for (int64_t j = 0; j < cols; ++j) {
              std::memcpy(want.data() + esize + (j * ds + i) * esize, s + (i * ss + j) * esize, esize);
            }
          }
          fn(s, ss, dst.data() + esize, ds, rows, cols);
          ASSERT_EQ(dst, want) << isa_name(isa) << " esize " << esize << " " << rows << "x" << cols;
        }
      }
    }
  }
}

// --- Transpose op ---------------------------------------------------------

Tensor transpose_reference(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out_shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out_shape[i] = x.dim(perm[i]);
  Tensor y = Tensor::allocate(x.dtype(), out_shape);
  const auto in_strides = strides_of(x.shape());
  const size_t esize = dtype_size(x.dtype());
  for_each_index(out_shape, [&](int64_t k, const std::vector<int64_t>& idx) {
    int64_t src = 0;
    for (size_t i = 0; i < perm.size(); ++i) src += idx[i] * in_strides[static_cast<size_t>(perm[i])];
    std::memcpy(static_cast<uint8_t*>(y.data()) + k * esize, static_cast<const uint8_t*>(x.data()) + src * esize,
                esize);
  });
  return y;
}

void check_transpose(const Shape& shape, const std::vector<int64_t>& perm, uint32_t seed) {
  for (size_t esize : {1, 2, 4, 8}) {
    Tensor x = random_tensor(kDTypeOfSize[esize], shape, seed);
    Tensor want = transpose_reference(x, perm);
    Tensor got = run_ok("Transpose", {&x}, {attr_ints("perm", perm)});
    ASSERT_TRUE(same_bytes(got, want)) << "shape " << shape_to_string(shape) << " perm "
                                       << shape_to_string(Shape(perm.begin(), perm.end())) << " esize " << esize;
  }
}

TEST(TransposeOp, EveryPermutationOfRanks1To4) {
  const int64_t dims[] = {1, 7, 8, 9, 15, 16, 17, 33};
  uint32_t seed = 1;
  for (size_t rank = 1; rank <= 4; ++rank) {
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (int trial = 0; trial < (rank <= 2 ? 24 : 4); ++trial) {
        Shape shape(rank);
        for (size_t d = 0; d < rank; ++d) shape[d] = dims[(seed * 7 + d * 3 + static_cast<size_t>(trial)) % 8];
        if (rank == 4) shape[seed % 4] = 1;  // keeps the case small and exercises dropped dims
        ++seed;
        check_transpose(shape, perm, seed);
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(TransposeOp, RandomPermutationsOfRanks5And6) {
  std::mt19937 rng(7);
  const int64_t dims[] = {1, 2, 3, 7, 8, 9};
  for (int trial = 0; trial < 60; ++trial) {
    const size_t rank = trial % 2 == 0 ? 5 : 6;
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Shape shape(rank);
    for (auto& d : shape) d = dims[rng() % 6];
    check_transpose(shape, perm, static_cast<uint32_t>(trial));
  }
}

TEST(TransposeOp, LargeTilesAndAttentionShapes) {
  check_transpose({129, 65}, {1, 0}, 1);
  check_transpose({2, 64, 100}, {0, 2, 1}, 2);
  check_transpose({1, 33, 4, 17}, {0, 2, 1, 3}, 3);
  check_transpose({1, 33, 4, 17}, {0, 2, 3, 1}, 4);
  check_transpose({3, 17, 5, 16}, {3, 1, 0, 2}, 5);
}

TEST(TransposeOp, ZeroSize) {
  Tensor x = Tensor::allocate(DType::kF32, {0, 16, 9});
  Tensor y = run_ok("Transpose", {&x}, {attr_ints("perm", {2, 0, 1})});
  EXPECT_EQ(y.shape(), (Shape{9, 0, 16}));
}

// --- Slice ----------------------------------------------------------------

TEST(SliceOp, StepsAndNegativeStepsAgainstReference) {
  struct Case {
    Shape shape;
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const Case cases[] = {
      {{17, 33}, {1, 0}, {16, 33}, {0, 1}, {1, 1}},
      {{17, 33}, {-1, 2}, {-100, 30}, {0, 1}, {-2, 3}},
      {{9, 8, 15}, {0, 14}, {9, -100}, {0, 2}, {4, -1}},
      {{2, 3, 65}, {1, 64}, {3, 0}, {1, 2}, {1, -7}},
      {{4, 5, 6, 7}, {3, 1}, {0, 100}, {-1, 1}, {-1, 2}},
      {{8, 8}, {5}, {5}, {1}, {1}},
  };
  for (const Case& c : cases) {
    for (size_t esize : {1, 2, 4, 8}) {
      Tensor x = random_tensor(kDTypeOfSize[esize], c.shape, 3);
      Tensor starts = i64s(c.starts), ends = i64s(c.ends), axes = i64s(c.axes), steps = i64s(c.steps);
      Tensor got = run_ok("Slice", {&x, &starts, &ends, &axes, &steps});
      // Reference: per axis, the list of source indices the slice visits.
      std::vector<std::vector<int64_t>> picks(c.shape.size());
      for (size_t d = 0; d < c.shape.size(); ++d) {
        for (int64_t i = 0; i < c.shape[d]; ++i) picks[d].push_back(i);
      }
      for (size_t k = 0; k < c.axes.size(); ++k) {
        const int64_t dim = c.shape[static_cast<size_t>(c.axes[k] < 0 ? c.axes[k] + x.rank() : c.axes[k])];
        auto& p = picks[static_cast<size_t>(c.axes[k] < 0 ? c.axes[k] + x.rank() : c.axes[k])];
        p.clear();
        int64_t s = c.starts[k] < 0 ? c.starts[k] + dim : c.starts[k];
        int64_t e = c.ends[k] < 0 ? c.ends[k] + dim : c.ends[k];
        if (c.steps[k] > 0) {
          s = std::clamp<int64_t>(s, 0, dim);
          e = std::clamp<int64_t>(e, 0, dim);
          for (int64_t i = s; i < e; i += c.steps[k]) p.push_back(i);
        } else {
          s = std::clamp<int64_t>(s, 0, dim - 1);
          e = std::clamp<int64_t>(e, -1, dim - 1);
          for (int64_t i = s; i > e; i += c.steps[k]) p.push_back(i);
        }
      }
      Shape out_shape(c.shape.size());
      for (size_t d = 0; d < out_shape.size(); ++d) out_shape[d] = static_cast<int64_t>(picks[d].size());
      Tensor want = Tensor::allocate(x.dtype(), out_shape);
      const auto st = strides_of(c.shape);
      for_each_index(out_shape, [&](int64_t k, const std::vector<int64_t>& idx) {
        int64_t src = 0;
        for (size_t d = 0; d < idx.size(); ++d) src += picks[d][static_cast<size_t>(idx[d])] * st[d];
        std::memcpy(static_cast<uint8_t*>(want.data()) + k * esize,
                    static_cast<const uint8_t*>(x.data()) + src * esize, esize);
      });
      ASSERT_TRUE(same_bytes(got, want)) << shape_to_string(c.shape) << " esize " << esize;
    }
  }
}

// --- Concat / Split -------------------------------------------------------

TEST(ConcatSplitOp, EveryAxisAgainstReference) {
  const Shape base = {3, 7, 9, 2};
  const int64_t parts[] = {1, 8, 0, 17};
  for (size_t esize : {1, 2, 4, 8}) {
    for (int64_t axis = 0; axis < 4; ++axis) {
      std::vector<Tensor> ins;
      for (int k = 0; k < 4; ++k) {
        Shape s = base;
        s[static_cast<size_t>(axis)] = parts[k];
        ins.push_back(random_tensor(kDTypeOfSize[esize], s, static_cast<uint32_t>(k + 10 * axis)));
      }
      std::vector<const Tensor*> ptrs;
      for (const Tensor& t : ins) ptrs.push_back(&t);
      Tensor got = run_ok("Concat", ptrs, {attr_int("axis", axis - (esize == 2 ? 4 : 0))});
      Shape out_shape = base;
      out_shape[static_cast<size_t>(axis)] = 26;
      ASSERT_EQ(got.shape(), out_shape);
      Tensor want = Tensor::allocate(got.dtype(), out_shape);
      for_each_index(out_shape, [&](int64_t k, const std::vector<int64_t>& idx) {
        int64_t a = idx[static_cast<size_t>(axis)];
        size_t part = 0;
        while (a >= parts[part]) a -= parts[part++];
        std::vector<int64_t> in_idx = idx;
        in_idx[static_cast<size_t>(axis)] = a;
        const auto st = strides_of(ins[part].shape());
        int64_t src = 0;
        for (size_t d = 0; d < 4; ++d) src += in_idx[d] * st[d];
        std::memcpy(static_cast<uint8_t*>(want.data()) + k * esize,
                    static_cast<const uint8_t*>(ins[part].data()) + src * esize, esize);
      });
      ASSERT_TRUE(same_bytes(got, want)) << "axis " << axis << " esize " << esize;
      Tensor split = i64s({parts[0], parts[1], parts[2], parts[3]});
      auto r = run_op("Split", {&got, &split}, {attr_int("axis", axis)}, 4, 18);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      for (size_t k = 0; k < 4; ++k) EXPECT_TRUE(same_bytes(r.value()[k], ins[k])) << "split part " << k;
    }
  }
}

// --- Gather ---------------------------------------------------------------

TEST(GatherOp, EveryAxisWithNegativeIndices) {
  const Shape shape = {5, 9, 3, 17};
  for (size_t esize : {1, 2, 4, 8}) {
    Tensor x = random_tensor(kDTypeOfSize[esize], shape, 5);
    for (int64_t axis = 0; axis < 4; ++axis) {
      const int64_t dim = shape[static_cast<size_t>(axis)];
      Tensor idx = make_tensor<int32_t>({2, 3}, {0, -1, static_cast<int32_t>(dim - 1), 1 % static_cast<int32_t>(dim),
                                                 static_cast<int32_t>(-dim), 0});
      Tensor got = run_ok("Gather", {&x, &idx}, {attr_int("axis", axis)});
      Shape out_shape;
      for (int64_t d = 0; d < axis; ++d) out_shape.push_back(shape[static_cast<size_t>(d)]);
      out_shape.push_back(2);
      out_shape.push_back(3);
      for (int64_t d = axis + 1; d < 4; ++d) out_shape.push_back(shape[static_cast<size_t>(d)]);
      Tensor want = Tensor::allocate(x.dtype(), out_shape);
      const auto st = strides_of(shape);
      for_each_index(out_shape, [&](int64_t k, const std::vector<int64_t>& o) {
        std::vector<int64_t> in_idx;
        for (int64_t d = 0; d < axis; ++d) in_idx.push_back(o[static_cast<size_t>(d)]);
        int64_t i = idx.data_as<int32_t>()[o[static_cast<size_t>(axis)] * 3 + o[static_cast<size_t>(axis) + 1]];
        in_idx.push_back(i < 0 ? i + dim : i);
        for (size_t d = static_cast<size_t>(axis) + 2; d < o.size(); ++d) in_idx.push_back(o[d]);
        int64_t src = 0;
        for (size_t d = 0; d < 4; ++d) src += in_idx[d] * st[d];
        std::memcpy(static_cast<uint8_t*>(want.data()) + k * esize,
                    static_cast<const uint8_t*>(x.data()) + src * esize, esize);
      });
      ASSERT_TRUE(same_bytes(got, want)) << "axis " << axis << " esize " << esize;
    }
  }
  Tensor x = random_tensor(DType::kF32, {4, 3}, 1);
  Tensor bad = i64s({0, 4});
  auto r = run_op("Gather", {&x, &bad}, {attr_int("axis", 0)}, 1, 18);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("4"), std::string::npos) << r.status().message();
}

// --- Expand ---------------------------------------------------------------

TEST(ExpandOp, RowsAndColumnsBroadcast) {
  for (size_t esize : {1, 2, 4, 8}) {
    for (const auto& [in_shape, to] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{3, 1}, {3, 1000}}, {{1000}, {3, 1000}}, {{1, 7, 1}, {5, 7, 9}}, {{1}, {0, 4}}}) {
      Tensor x = random_tensor(kDTypeOfSize[esize], in_shape, 9);
      Tensor shape = i64s(to);
      Tensor got = run_ok("Expand", {&x, &shape});
      Shape out_shape(to.begin(), to.end());
      ASSERT_EQ(got.shape(), out_shape);
      Tensor want = Tensor::allocate(x.dtype(), out_shape);
      const auto st = strides_of(in_shape);
      const size_t off = out_shape.size() - in_shape.size();
      for_each_index(out_shape, [&](int64_t k, const std::vector<int64_t>& o) {
        int64_t src = 0;
        for (size_t d = 0; d < in_shape.size(); ++d) src += (in_shape[d] == 1 ? 0 : o[d + off]) * st[d];
        std::memcpy(static_cast<uint8_t*>(want.data()) + k * esize,
                    static_cast<const uint8_t*>(x.data()) + src * esize, esize);
      });
      ASSERT_TRUE(same_bytes(got, want)) << shape_to_string(in_shape) << " esize " << esize;
    }
  }
}

// --- Cast -----------------------------------------------------------------

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Values for the 16-bit casts: specials, f16 and bf16 ties (numpy:
// np.float16(1 + 2**-11) == 1.0, np.float16(1 + 3 * 2**-11) == 1 + 2**-9,
// np.float16(65520.0) == inf, np.float16(2**-25) == 0, np.float16(2**-25 * 1.5) ==
// 2**-24), and f32 denormals.
std::vector<float> cast_values() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                          1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65520.0f, 65519.0f, 0x1p-24f, 0x1p-25f,
                          1.5f * 0x1p-25f, 0x1p-14f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1e-40f, -1e-45f,
                          std::numeric_limits<float>::max(), 3.14159265f, -2.71828f};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
  while (v.size() < 1031) v.push_back(u(rng) * (v.size() % 3 == 0 ? 1e-6f : 1.0f));
  return v;
}

TEST(CastOp, F32ToF16AndBf16AndBack) {
  std::vector<float> v = cast_values();
  const auto n = static_cast<int64_t>(v.size());
  Tensor x = make_tensor<float>({n}, v);
  Tensor h = run_ok("Cast", {&x}, {attr_int("to", static_cast<int64_t>(DType::kF16))});
  Tensor b = run_ok("Cast", {&x}, {attr_int("to", static_cast<int64_t>(DType::kBF16))});
  for (int64_t i = 0; i < n; ++i) {
    const float f = v[static_cast<size_t>(i)];
    const uint16_t hb = h.data_as<uint16_t>()[i];
    const uint16_t bb = b.data_as<uint16_t>()[i];
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Float16::to_float(hb)));
      EXPECT_TRUE(std::isnan(BFloat16::to_float(bb)));
      continue;
    }
    EXPECT_EQ(hb, Float16::from_float(f)) << f;
    EXPECT_EQ(bb, BFloat16::from_float(f)) << f;
  }
  EXPECT_EQ(Float16::to_float(h.data_as<uint16_t>()[7]), 1.0f);
  EXPECT_EQ(Float16::to_float(h.data_as<uint16_t>()[8]), 1.0f + 0x1p-9f);
  EXPECT_TRUE(std::isinf(Float16::to_float(h.data_as<uint16_t>()[10])));
  EXPECT_EQ(Float16::to_float(h.data_as<uint16_t>()[13]), 0.0f);
  EXPECT_EQ(Float16::to_float(h.data_as<uint16_t>()[14]), 0x1p-24f);
  EXPECT_EQ(BFloat16::to_float(b.data_as<uint16_t>()[16]), 1.0f);
  EXPECT_EQ(BFloat16::to_float(b.data_as<uint16_t>()[17]), 1.0f + 0x1p-6f);
  EXPECT_EQ(h.data_as<uint16_t>()[1], 0x8000);
  // Back to f32: exact for every 16-bit value.
  Tensor hf = run_ok("Cast", {&h}, {attr_int("to", static_cast<int64_t>(DType::kF32))});
  Tensor bf = run_ok("Cast", {&b}, {attr_int("to", static_cast<int64_t>(DType::kF32))});
  for (int64_t i = 0; i < n; ++i) {
    const float hw = Float16::to_float(h.data_as<uint16_t>()[i]);
    const float bw = BFloat16::to_float(b.data_as<uint16_t>()[i]);
    EXPECT_TRUE(std::isnan(hw) ? std::isnan(hf.data_as<float>()[i]) : f32_bits(hw) == f32_bits(hf.data_as<float>()[i]));
    EXPECT_TRUE(std::isnan(bw) ? std::isnan(bf.data_as<float>()[i]) : f32_bits(bw) == f32_bits(bf.data_as<float>()[i]));
  }
}

TEST(CastOp, F16ToBf16ViaF32EveryValue) {
  Tensor h = Tensor::allocate(DType::kF16, {65536});
  for (int64_t i = 0; i < 65536; ++i) h.data_as<uint16_t>()[i] = static_cast<uint16_t>(i);
  Tensor b = run_ok("Cast", {&h}, {attr_int("to", static_cast<int64_t>(DType::kBF16))});
  Tensor back = run_ok("Cast", {&b}, {attr_int("to", static_cast<int64_t>(DType::kF16))});
  for (int64_t i = 0; i < 65536; ++i) {
    const float f = Float16::to_float(static_cast<uint16_t>(i));
    const uint16_t bb = b.data_as<uint16_t>()[i];
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(BFloat16::to_float(bb))) << i;
      ASSERT_TRUE(std::isnan(Float16::to_float(back.data_as<uint16_t>()[i]))) << i;
      continue;
    }
    ASSERT_EQ(bb, BFloat16::from_float(f)) << i;
    ASSERT_EQ(back.data_as<uint16_t>()[i], Float16::from_float(BFloat16::to_float(bb))) << i;
  }
}

TEST(CastOp, IntegersSaturateAndNanIsZero) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = make_tensor<float>({6}, {1.9f, -1.9f, std::numeric_limits<float>::quiet_NaN(), inf, -inf, 3e9f});
  Tensor i64 = run_ok("Cast", {&x}, {attr_int("to", static_cast<int64_t>(DType::kI64))});
  EXPECT_EQ(values_of<int64_t>(i64), (std::vector<int64_t>{1, -1, 0, std::numeric_limits<int64_t>::max(),
                                                           std::numeric_limits<int64_t>::min(), 3000000000}));
  Tensor b = run_ok("Cast", {&x}, {attr_int("to", static_cast<int64_t>(DType::kBool))});
  EXPECT_EQ(values_of<bool>(b), (std::vector<bool>{true, true, true, true, true, true}));
  Tensor same = run_ok("Cast", {&x}, {attr_int("to", static_cast<int64_t>(DType::kF32))});
  EXPECT_TRUE(same_bytes(same, x));
  Tensor empty = Tensor::allocate(DType::kF32, {0, 3});
  EXPECT_EQ(run_ok("Cast", {&empty}, {attr_int("to", static_cast<int64_t>(DType::kF16))}).shape(), (Shape{0, 3}));
  auto r = run_op("Cast", {&x}, {attr_int("to", 14)}, 1, 18);  // TensorProto.COMPLEX64: not supported
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotImplemented) << r.status().to_string();
}

// --- threads ----------------------------------------------------------------

TEST(DataMovementThreads, OneAndTwoThreadsIdentical) {
  Tensor x = random_tensor(DType::kF32, {300, 1000}, 11);
  Tensor x4 = random_tensor(DType::kF16, {2, 130, 16, 70}, 12);
  Tensor table = random_tensor(DType::kF32, {500, 300}, 13);
  Tensor idx = make_tensor<int64_t>({4, 100}, std::vector<int64_t>(400, -3));
  for (int64_t i = 0; i < 400; ++i) idx.data_as<int64_t>()[i] = (i * 37) % 500 - 250;
  Tensor starts = i64s({1, 999}), ends = i64s({299, 0}), axes = i64s({0, 1}), steps = i64s({1, -2});
  Tensor shape = i64s({300, 300, 1000});
  Tensor x1 = random_tensor(DType::kF32, {1, 1000}, 14);
  auto run_all = [&]() {
    std::vector<Tensor> out;
    out.push_back(run_ok("Transpose", {&x}, {attr_ints("perm", {1, 0})}));
    out.push_back(run_ok("Transpose", {&x4}, {attr_ints("perm", {0, 2, 3, 1})}));
    out.push_back(run_ok("Transpose", {&x4}, {attr_ints("perm", {0, 2, 1, 3})}));
    out.push_back(run_ok("Concat", {&x, &x}, {attr_int("axis", 1)}));
    out.push_back(run_ok("Split", {&x}, {attr_int("axis", 1), attr_int("num_outputs", 3)}, 3, 2));
    out.push_back(run_ok("Gather", {&table, &idx}, {attr_int("axis", 0)}));
    out.push_back(run_ok("Gather", {&table, &idx}, {attr_int("axis", 1)}));
    out.push_back(run_ok("Slice", {&x, &starts, &ends, &axes, &steps}));
    out.push_back(run_ok("Expand", {&x1, &shape}));
    out.push_back(run_ok("Cast", {&x}, {attr_int("to", static_cast<int64_t>(DType::kF16))}));
    out.push_back(run_ok("Cast", {&x4}, {attr_int("to", static_cast<int64_t>(DType::kBF16))}));
    return out;
  };
  std::vector<Tensor> one, two;
  {
    threading::ScopedThreadLimit limit(1);
    one = run_all();
  }
  {
    threading::ScopedThreadLimit limit(2);
    two = run_all();
  }
  ASSERT_EQ(one.size(), two.size());
  for (size_t k = 0; k < one.size(); ++k) EXPECT_TRUE(same_bytes(one[k], two[k])) << "output " << k;
  EXPECT_TRUE(same_bytes(one[0], transpose_reference(x, {1, 0})));
  EXPECT_TRUE(same_bytes(one[1], transpose_reference(x4, {0, 2, 3, 1})));
}

}  // namespace
}  // namespace ember::test
