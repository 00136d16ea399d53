// com.microsoft MatMulNBits against a plain double-precision loop over the
// unpacked codes (written here, independent of the kernel's packed reader), and
// hand-computed literals.
// ctest: every ISA level
// ctest: emulated CPUs, gtest filter MatMulNBits.*:MatMulNBitsPacked.*Microkernel*:MatMulNBitsPacked.Int8*:MatMulNBitsPacked.DecodeSplitsAgreeBitForBit
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/isa.h"
#include "kernels/quant/nbits_ukernels.h"
#include "kernels/quant/nbits_weights.h"
#include "kernels/quant/quant_ops.h"
#include "runtime/session.h"
#include "threading/thread_pool.h"
#include "unit/graph_builder.h"
#include "unit/guard_buffer.h"
#include "unit/op_test_util.h"

namespace ember {
namespace {

using test::attr_int;
using test::make_tensor;
using test::run_op;
namespace quant = kernels::quant;

enum class Zp { kAbsent, kPacked, kFloat };

struct Case {
  Shape a_lead = {3};  // A is a_lead + [K]
  int64_t k = 64, n = 5, block = 32;
  int bits = 4;
  Zp zp = Zp::kAbsent;
  bool scales_2d = false;
  bool zp_2d = false;
  bool bias = false;
  DType dtype = DType::kF32;
  int accuracy_level = 0;
};

// The codes, scales and zero points of one case as plain numbers, and the
// tensors that carry them in MatMulNBits' layout.
struct Quantized {
  std::vector<int> codes;     // [n, k_blocks * block]; padding codes are random too
  std::vector<double> scales; // [n, k_blocks], values as stored (f16-rounded for f16)
  std::vector<double> zps;    // [n, k_blocks]
  std::vector<double> a, bias;
  Tensor a_t, b_t, scales_t, zp_t, bias_t;
};

// Rounds through the tensor dtype so the reference sees exactly the stored value.
double store(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::kF16) {
    t.data_as<Float16>()[i] = Float16(static_cast<float>(v));
    return static_cast<float>(t.data_as<Float16>()[i]);
  }
  t.data_as<float>()[i] = static_cast<float>(v);
  return t.data_as<float>()[i];
}

Quantized quantize(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t kb = (c.k + c.block - 1) / c.block;
  const int levels = 1 << c.bits;
  std::uniform_int_distribution<int> code(0, levels - 1);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  Quantized q;
  q.codes.resize(c.n * kb * c.block);
  for (int& v : q.codes) v = code(rng);
  q.b_t = Tensor::allocate(DType::kU8, {c.n, kb, c.block * c.bits / 8});
  uint8_t* b = q.b_t.data_as<uint8_t>();
  for (size_t i = 0; i < q.codes.size(); ++i) {
    if (c.bits == 8) {
      b[i] = static_cast<uint8_t>(q.codes[i]);
    } else {
      b[i / 2] = static_cast<uint8_t>(i % 2 == 0 ? q.codes[i] : b[i / 2] | (q.codes[i] << 4));
    }
  }
  q.scales_t = Tensor::allocate(c.dtype, c.scales_2d ? Shape{c.n, kb} : Shape{c.n * kb});
  for (int64_t i = 0; i < c.n * kb; ++i) q.scales.push_back(store(q.scales_t, i, 0.01 + 0.05 * std::fabs(unit(rng))));
  q.zps.assign(c.n * kb, levels / 2);
  if (c.zp == Zp::kPacked) {
    const int64_t row_bytes = (kb * c.bits + 7) / 8;
    q.zp_t = Tensor::allocate(DType::kU8, c.zp_2d ? Shape{c.n, row_bytes} : Shape{c.n * row_bytes});
    uint8_t* z = q.zp_t.data_as<uint8_t>();
    for (int64_t r = 0; r < c.n; ++r) {
      for (int64_t j = 0; j < kb; ++j) {
        const int v = code(rng);
        q.zps[r * kb + j] = v;
        if (c.bits == 8) z[r * row_bytes + j] = static_cast<uint8_t>(v);
        else if (j % 2 == 0) z[r * row_bytes + j / 2] = static_cast<uint8_t>(v);
        else z[r * row_bytes + j / 2] |= static_cast<uint8_t>(v << 4);
      }
    }
  } else if (c.zp == Zp::kFloat) {
    q.zp_t = Tensor::allocate(c.dtype, c.zp_2d ? Shape{c.n, kb} : Shape{c.n * kb});
    for (int64_t i = 0; i < c.n * kb; ++i) q.zps[i] = store(q.zp_t, i, levels * (0.5 + 0.3 * unit(rng)));
  }
  Shape a_shape = c.a_lead;
  a_shape.push_back(c.k);
  q.a_t = Tensor::allocate(c.dtype, a_shape);
  for (int64_t i = 0; i < q.a_t.numel(); ++i) q.a.push_back(store(q.a_t, i, unit(rng)));
  if (c.bias) {
    q.bias_t = Tensor::allocate(c.dtype, {c.n});
    for (int64_t i = 0; i < c.n; ++i) q.bias.push_back(store(q.bias_t, i, unit(rng)));
  }
  return q;
}

std::vector<ir::Attribute> attrs_of(const Case& c) {
  return {attr_int("K", c.k), attr_int("N", c.n), attr_int("bits", c.bits), attr_int("block_size", c.block),
          attr_int("accuracy_level", c.accuracy_level)};
}

Result<std::vector<Tensor>> run_nbits(const std::vector<const Tensor*>& inputs, const std::vector<ir::Attribute>& attrs) {
  return run_op("MatMulNBits", inputs, attrs, 1, 1, "com.microsoft");
}

// Like run_nbits, with every input but A given to the factory as a constant (the
// session's initializers): the path that repacks B. Reports the packed bytes.
Result<std::vector<Tensor>> run_nbits_constant(const std::vector<const Tensor*>& inputs,
                                               const std::vector<ir::Attribute>& attrs, int64_t* packed_bytes) {
  ir::Node node;
  node.name = "test_MatMulNBits";
  node.op_type = "MatMulNBits";
  node.domain = "com.microsoft";
  node.opset = 1;
  node.attributes = attrs;
  node.num_explicit_inputs = inputs.size();
  std::vector<DType> dtypes;
  std::vector<const Tensor*> constants = inputs;
  constants[0] = nullptr;
  for (const Tensor* t : inputs) dtypes.push_back(t ? t->dtype() : DType::kUndefined);
  kernels::KernelInit init{node, dtypes, constants, nullptr};
  EMBER_ASSIGN_OR_RETURN(auto kernel, kernels::create_kernel(init));
  *packed_bytes = kernel->packed_bytes();
  return kernels::evaluate(*kernel, inputs, 1);
}

// accuracy_level 4 computes with A quantized as ONNX Runtime's MLAS does
// (QuantizeARow_CompInt8): per row and block, amax = max |a|, q =
// nearbyint(a * (127 / amax)) in f32, value q * (amax / 127). Returns A with
// every element replaced by that value (products with the weights are then
// exact in double, so the reference needs no integer form).
std::vector<double> int8_activations(const Case& c, const std::vector<double>& a) {
  std::vector<double> out(a.size());
  for (size_t row = 0; row * c.k < a.size(); ++row) {
    for (int64_t k0 = 0; k0 < c.k; k0 += c.block) {
      const int64_t k1 = std::min(k0 + c.block, c.k);
      float amax = 0.0f;
      for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(static_cast<float>(a[row * c.k + k])));
      const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
      const float scale = amax / 127.0f;
      for (int64_t k = k0; k < k1; ++k) {
        const float q = std::nearbyint(static_cast<float>(a[row * c.k + k]) * inverse);
        out[row * c.k + k] = static_cast<double>(q) * scale;
      }
    }
  }
  return out;
}

void check_case(const Case& c, uint32_t seed = 1, bool constant_weights = false) {
  SCOPED_TRACE(testing::Message() << "K=" << c.k << " N=" << c.n << " block=" << c.block << " bits=" << c.bits
                                  << " zp=" << static_cast<int>(c.zp) << " dtype=" << dtype_name(c.dtype));
  Quantized q = quantize(c, seed);
  std::vector<const Tensor*> inputs = {&q.a_t, &q.b_t, &q.scales_t, c.zp == Zp::kAbsent ? nullptr : &q.zp_t};
  if (c.bias) {
    inputs.push_back(nullptr);
    inputs.push_back(&q.bias_t);
  }
  int64_t packed_bytes = 0;
  auto r = constant_weights ? run_nbits_constant(inputs, attrs_of(c), &packed_bytes) : run_nbits(inputs, attrs_of(c));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  if (constant_weights) {
    // 4-bit f32: 16-column tiles of codes, f32 scales and u8, f32 or no zero points per block.
    const int64_t kb = (c.k + c.block - 1) / c.block;
    const int64_t zp_bytes = c.zp == Zp::kFloat ? 4 : c.zp == Zp::kPacked ? 1 : 0;
    const bool packs = c.bits == 4 && c.dtype == DType::kF32;
    EXPECT_EQ(packed_bytes, packs ? (c.n + 15) / 16 * kb * 16 * (c.block / 2 + 4 + zp_bytes) : 0);
  }
  const Tensor& y = r.value()[0];
  Shape want_shape = c.a_lead;
  want_shape.push_back(c.n);
  ASSERT_EQ(y.shape(), want_shape);
  ASSERT_EQ(y.dtype(), c.dtype);
  const int64_t kb = (c.k + c.block - 1) / c.block;
  const int64_t m = shape_numel(c.a_lead);
  const bool int8 = c.accuracy_level == 4 && c.zp != Zp::kFloat;  // float zero points: f32 at every level
  const std::vector<double> a = int8 ? int8_activations(c, q.a) : q.a;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t k = 0; k < c.k; ++k) {
        const int64_t blk = j * kb + k / c.block;
        const double w = (q.codes[j * kb * c.block + k] - q.zps[blk]) * q.scales[blk];
        sum += a[i * c.k + k] * w;
        magnitude += std::fabs(a[i * c.k + k] * w);
      }
      if (c.bias) sum += q.bias[j];
      // f32 accumulation over K terms: a few ulps of the sum of magnitudes; f16
      // output adds one rounding (2^-11 relative).
      const bool f16 = c.dtype == DType::kF16;
      const double tol = 2e-6 * magnitude + (f16 ? std::fabs(sum) / 2048 + 1e-6 : 1e-7);
      const double got = f16 ? static_cast<float>(y.data_as<Float16>()[i * c.n + j]) : y.data_as<float>()[i * c.n + j];
      ASSERT_NEAR(got, sum, tol) << "row " << i << " column " << j;
    }
  }
}

TEST(MatMulNBits, HandComputedLiteral) {
  // Codes 0..15, default zero point 8, scale 0.5: w = (k - 8) / 2 sums to -4 over
  // A = ones; the bias 1.5 makes -2.5. Codes 7, 15 pack into 0xF7.
  Tensor a = make_tensor<float>({1, 16}, std::vector<float>(16, 1.0f));
  std::vector<uint8_t> packed;
  for (int k = 0; k < 16; k += 2) packed.push_back(static_cast<uint8_t>(k | ((k + 1) << 4)));
  Tensor b = make_tensor<uint8_t>({1, 1, 8}, packed);
  Tensor scales = make_tensor<float>({1}, {0.5f});
  Tensor bias = make_tensor<float>({1}, {1.5f});
  auto r = run_nbits({&a, &b, &scales, nullptr, nullptr, &bias},
                     {attr_int("K", 16), attr_int("N", 1), attr_int("bits", 4), attr_int("block_size", 16)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(test::values_of<float>(r.value()[0]), std::vector<float>{-2.5f});
}

TEST(MatMulNBits, EightBitLiteralWithPackedZeroPoint) {
  // K=20, block 16: the second block holds 4 real codes. Codes 130, zero points
  // 128 (block 0) and 120 (block 1), scales 0.25 and 2: w = 0.5 then 20;
  // A = 1..20 gives 0.5 * 136 + 20 * 74 = 1548.
  std::vector<float> av(20);
  for (int i = 0; i < 20; ++i) av[i] = static_cast<float>(i + 1);
  Tensor a = make_tensor<float>({20}, av);
  Tensor b = make_tensor<uint8_t>({1, 2, 16}, std::vector<uint8_t>(32, 130));
  Tensor scales = make_tensor<float>({1, 2}, {0.25f, 2.0f});
  Tensor zp = make_tensor<uint8_t>({2}, {128, 120});
  auto r = run_nbits({&a, &b, &scales, &zp},
                     {attr_int("K", 20), attr_int("N", 1), attr_int("bits", 8), attr_int("block_size", 16)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].shape(), (Shape{1}));
  EXPECT_EQ(test::values_of<float>(r.value()[0]), std::vector<float>{1548.0f});
}

TEST(MatMulNBits, BitsAndBlockSizes) {
  for (int bits : {4, 8}) {
    for (int64_t block : {16, 32, 64, 128}) {
      Case c;
      c.bits = bits;
      c.block = block;
      c.k = 256;
      check_case(c);
    }
  }
}

TEST(MatMulNBits, KTailAndOddBlockCounts) {
  for (int bits : {4, 8}) {
    for (int64_t k : {40, 1, 17, 97, 300}) {
      Case c;
      c.bits = bits;
      c.k = k;
      // k_blocks 2, 1, 1, 4, 10 at block 32 and 3, 1, 2, 7, 19 at block 16: odd
      // counts leave the last packed 4-bit zero point byte half used.
      c.zp = Zp::kPacked;
      check_case(c);
      c.block = 16;
      check_case(c);
    }
  }
}

TEST(MatMulNBits, ScaleAndZeroPointLayouts) {
  for (int bits : {4, 8}) {
    for (Zp zp : {Zp::kAbsent, Zp::kPacked, Zp::kFloat}) {
      for (bool two_d : {false, true}) {
        Case c;
        c.bits = bits;
        c.k = 40;  // 2 blocks of 32, the second padded
        c.zp = zp;
        c.scales_2d = two_d;
        c.zp_2d = two_d;
        c.bias = true;
        check_case(c);
        c.k = 96;  // 3 blocks: an odd count of packed 4-bit zero points
        check_case(c);
      }
    }
  }
}

TEST(MatMulNBits, WideNCrossesColumnTiles) {
  Case c;
  c.n = 130;
  c.k = 600;
  c.block = 64;
  c.bias = true;
  c.zp = Zp::kPacked;
  check_case(c);
}

TEST(MatMulNBits, ShapesOfA) {
  for (Shape lead : {Shape{}, Shape{0}, Shape{1}, Shape{2, 3}, Shape{2, 0, 4}}) {
    Case c;
    c.a_lead = lead;
    c.n = 1;
    check_case(c);
    c.n = 7;
    c.bias = true;
    check_case(c);
  }
}

TEST(MatMulNBits, Float16) {
  for (int bits : {4, 8}) {
    for (Zp zp : {Zp::kAbsent, Zp::kPacked, Zp::kFloat}) {
      Case c;
      c.dtype = DType::kF16;
      c.bits = bits;
      c.zp = zp;
      c.k = 300;
      c.block = 32;
      c.bias = true;
      c.a_lead = {2, 3};
      check_case(c);
    }
  }
}

// Levels 0-3 compute in f32; level 4 with int8 activations (f32 with float zero
// points), on the reference and the packed path, over block sizes, K tails,
// zero-point forms and f16.
TEST(MatMulNBits, AccuracyLevels) {
  for (int level = 0; level <= 4; ++level) {
    Case c;
    c.accuracy_level = level;
    check_case(c);
    check_case(c, 2, true);
  }
  for (Zp zp : {Zp::kAbsent, Zp::kPacked, Zp::kFloat}) {
    for (int64_t block : {16, 32, 64, 128, 256}) {
      for (int64_t k : {16, 33, 129, 1000}) {
        for (int bits : {4, 8}) {
          Case c;
          c.accuracy_level = 4;
          c.zp = zp;
          c.block = block;
          c.k = k;
          c.bits = bits;
          c.n = 37;
          c.bias = true;
          check_case(c, 10);
          check_case(c, 11, true);
        }
      }
    }
  }
  Case half;
  half.accuracy_level = 4;
  half.dtype = DType::kF16;
  half.k = 300;
  check_case(half, 12);
}

// Runs a case with one input replaced or one attribute overridden and expects
// `code` with every word of `words` in the message.
void expect_error(const Case& c, size_t input, const Tensor* replacement, std::vector<ir::Attribute> attrs,
                  StatusCode code, std::vector<std::string> words) {
  Quantized q = quantize(c, 7);
  std::vector<const Tensor*> inputs = {&q.a_t, &q.b_t, &q.scales_t, nullptr, nullptr, nullptr};
  if (input < inputs.size()) inputs[input] = replacement;
  std::vector<ir::Attribute> all = attrs_of(c);
  for (ir::Attribute& a : attrs) {
    for (ir::Attribute& existing : all) {
      if (existing.name == a.name) existing = a;
    }
  }
  auto r = run_nbits(inputs, all);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  for (const std::string& w : words) EXPECT_NE(r.status().message().find(w), std::string::npos) << r.status().to_string();
}

TEST(MatMulNBits, RejectsBadShapes) {
  Case c;  // A [3, 64], N=5, block 32: k_blocks 2, blob 16
  const auto u8 = [](Shape s) { return Tensor::allocate(DType::kU8, s); };
  const auto f32 = [](Shape s) { return Tensor::allocate(DType::kF32, s); };
  const Tensor a_bad = f32({3, 63}), b_flat = u8({5, 32}), b_bad = u8({5, 2, 8}), scales_bad = f32({5, 3});
  const Tensor zp_bad = u8({10}), zp_float_bad = f32({5}), bias_bad = f32({4});
  const StatusCode kInvalid = StatusCode::kInvalidArgument;
  expect_error(c, 0, &a_bad, {}, kInvalid, {"'A'", "K=64"});
  expect_error(c, 1, &b_flat, {}, kInvalid, {"'B'", "[5,32]"});
  expect_error(c, 1, &b_bad, {}, kInvalid, {"'B'", "blob_size=16"});
  expect_error(c, 2, &scales_bad, {}, kInvalid, {"'scales'", "[10]"});
  expect_error(c, 3, &zp_bad, {}, kInvalid, {"'zero_points'", "[5]"});
  expect_error(c, 3, &zp_float_bad, {}, kInvalid, {"'zero_points'", "[10]"});
  expect_error(c, 5, &bias_bad, {}, kInvalid, {"'bias'", "N=5"});
}

TEST(MatMulNBits, RejectsBadTypesAndAttributes) {
  Case c;
  const Tensor a_i32 = Tensor::allocate(DType::kI32, {3, 64}), scales_f16 = Tensor::allocate(DType::kF16, {10});
  const Tensor zp_i8 = Tensor::allocate(DType::kI8, {5}), g_idx = Tensor::allocate(DType::kI32, {64});
  expect_error(c, 0, &a_i32, {}, StatusCode::kNotImplemented, {"'A'", "int32"});
  expect_error(c, 2, &scales_f16, {}, StatusCode::kInvalidArgument, {"'scales'", "float16"});
  expect_error(c, 3, &zp_i8, {}, StatusCode::kInvalidArgument, {"'zero_points'", "int8"});
  expect_error(c, 4, &g_idx, {}, StatusCode::kNotImplemented, {"'g_idx'"});
  expect_error(c, 2, nullptr, {}, StatusCode::kInvalidModel, {"'scales'"});
  expect_error(c, 9, nullptr, {attr_int("bits", 2)}, StatusCode::kNotImplemented, {"bits=2"});
  expect_error(c, 9, nullptr, {attr_int("block_size", 24)}, StatusCode::kInvalidArgument, {"block_size=24"});
  expect_error(c, 9, nullptr, {attr_int("block_size", 8)}, StatusCode::kInvalidArgument, {"block_size=8"});
  expect_error(c, 9, nullptr, {attr_int("accuracy_level", 5)}, StatusCode::kInvalidArgument, {"accuracy_level=5"});
  expect_error(c, 9, nullptr, {attr_int("N", 0)}, StatusCode::kInvalidArgument, {"N=0"});
}

// ---- the packed 4-bit path ----

TEST(MatMulNBitsPacked, ConstantWeightsMatchDoubleReference) {
  for (Zp zp : {Zp::kAbsent, Zp::kPacked, Zp::kFloat}) {
    for (int64_t block : {16, 32, 64, 128}) {
      for (int64_t k : {16, 17, 33, 129, 1000}) {
        for (int64_t n : {1, 17, 70}) {
          for (bool bias : {false, true}) {
            Case c;
            c.zp = zp;
            c.block = block;
            c.k = k;
            c.n = n;
            c.bias = bias;
            c.a_lead = {3};
            check_case(c, 3, true);
            c.a_lead = {1};
            check_case(c, 4, true);
          }
        }
      }
    }
  }
}

TEST(MatMulNBitsPacked, ConstantWeightsOtherPathsAndShapes) {
  for (Shape lead : {Shape{}, Shape{0}, Shape{2, 0, 4}, Shape{2, 3}}) {
    Case c;
    c.a_lead = lead;
    c.n = 33;
    c.bias = true;
    check_case(c, 5, true);
  }
  Case eight_bit;  // 8-bit and f16 keep the reference path: no packed bytes
  eight_bit.bits = 8;
  check_case(eight_bit, 6, true);
  Case half;
  half.dtype = DType::kF16;
  half.k = 300;
  check_case(half, 6, true);
}

// Both levels over the GEMV (1 row), panel (37 rows, level 0) and int8 paths:
// the same bits for 1 and 2 threads; at level 4 also the reference path's bits.
TEST(MatMulNBitsPacked, OneAndTwoThreadsAgreeBitForBit) {
  for (int level : {0, 4}) {
    Case c;
    c.accuracy_level = level;
    c.k = 896;
    c.n = 1000;
    c.zp = Zp::kPacked;
    c.bias = true;
    for (Shape lead : {Shape{1}, Shape{3}, Shape{37}}) {
      SCOPED_TRACE(testing::Message() << "accuracy_level " << level << " rows " << lead[0]);
      c.a_lead = lead;
      Quantized q = quantize(c, 9);
      std::vector<const Tensor*> inputs = {&q.a_t, &q.b_t, &q.scales_t, &q.zp_t, nullptr, &q.bias_t};
      std::vector<std::vector<float>> outs;
      for (int threads : {1, 2}) {
        threading::ScopedThreadLimit limit(threads);
        int64_t packed_bytes = 0;
        auto r = run_nbits_constant(inputs, attrs_of(c), &packed_bytes);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        outs.push_back(test::values_of<float>(r.value()[0]));
      }
      EXPECT_EQ(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)), 0);
      if (level == 4) {
        auto reference = run_nbits(inputs, attrs_of(c));
        ASSERT_TRUE(reference.is_ok());
        EXPECT_EQ(test::values_of<float>(reference.value()[0]), outs[0]) << "packed and reference paths differ";
      }
    }
  }
}

// Decode (one row, accuracy_level 4) on either side of the size where the op
// stops running on one thread (kDecodeSplitBytes, 384 KiB: 44 tiles at K=896)
// and with tile counts that split unevenly: the same bits for 1 and 2 threads
// and the reference path's bits.
TEST(MatMulNBitsPacked, DecodeSplitsAgreeBitForBit) {
  for (int64_t n : {40, 687, 700, 1152}) {
    Case c;
    c.accuracy_level = 4;
    c.k = 896;
    c.n = n;
    c.bias = (n & 1) != 0;
    c.a_lead = {1};
    SCOPED_TRACE(testing::Message() << "N=" << n);
    Quantized q = quantize(c, 17);
    std::vector<const Tensor*> inputs = {&q.a_t, &q.b_t, &q.scales_t};
    if (c.bias) inputs.insert(inputs.end(), {nullptr, nullptr, &q.bias_t});
    auto reference = run_nbits(inputs, attrs_of(c));
    ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
    for (int threads : {1, 2}) {
      threading::ScopedThreadLimit limit(threads);
      int64_t packed_bytes = 0;
      auto r = run_nbits_constant(inputs, attrs_of(c), &packed_bytes);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_GT(packed_bytes, 0);
      EXPECT_EQ(test::values_of<float>(r.value()[0]), test::values_of<float>(reference.value()[0]))
          << threads << " threads";
    }
  }
}

// Packed-weight memory: zeroed, 64-byte aligned, slices that never overlap,
// from a byte to more than a shared chunk (32 MiB), and each keeps its bytes
// while slices around it are freed and new ones taken.
TEST(MatMulNBitsPacked, PackedBytesZeroedAlignedDisjoint) {
  const std::vector<size_t> sizes = {0, 1, 63, 64, 65, 1000, size_t{3} << 20, 17, size_t{40} << 20, 4096};
  std::vector<quant::NBitsPackedBytes> slices;
  for (size_t size : sizes) slices.emplace_back(size);
  const auto check_zero_and_fill = [](quant::NBitsPackedBytes& b, uint8_t fill) {
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
    const uint8_t* p = static_cast<const uint8_t*>(b.data());
    EXPECT_TRUE(std::all_of(p, p + b.size(), [](uint8_t v) { return v == 0; })) << b.size() << " bytes";
    std::memset(b.data(), fill, b.size());
  };
  for (size_t i = 0; i < slices.size(); ++i) {
    EXPECT_EQ(slices[i].size(), sizes[i]);
    check_zero_and_fill(slices[i], static_cast<uint8_t>(i + 1));
  }
  for (size_t i = 0; i < slices.size(); i += 2) slices[i] = quant::NBitsPackedBytes();
  for (size_t size : {size_t{100}, size_t{5} << 20}) {
    slices.emplace_back(size);
    check_zero_and_fill(slices.back(), 0xEE);
  }
  for (size_t i = 1; i < sizes.size(); i += 2) {
    const uint8_t* p = static_cast<const uint8_t*>(slices[i].data());
    const uint8_t want = static_cast<uint8_t>(i + 1);
    EXPECT_TRUE(std::all_of(p, p + slices[i].size(), [&](uint8_t v) { return v == want; })) << "slice " << i;
  }
}

// The weights of a quantized case as the kernel's reader sees them.
quant::NBitsWeights weights_of(const Case& c, const Quantized& q) {
  quant::NBitsWeights w;
  w.bits = c.bits;
  w.n = c.n;
  w.k = c.k;
  w.block_size = c.block;
  w.k_blocks = (c.k + c.block - 1) / c.block;
  w.blob_size = c.block * c.bits / 8;
  w.packed = q.b_t.data_as<uint8_t>();
  w.scale_dtype = c.dtype;
  w.scales = q.scales_t.data();
  if (c.zp != Zp::kAbsent) {
    w.zp_dtype = q.zp_t.dtype();
    w.zero_points = q.zp_t.data();
    w.zp_row_bytes = quant::nbits_zp_row_bytes(w.k_blocks, c.bits);
  }
  return w;
}

// The packed tiles, copied against a guard page.
test::GuardedBuffer<uint8_t> guarded_tiles(const quant::NBitsPacked& packed, test::GuardAt at) {
  return test::GuardedBuffer<uint8_t>({static_cast<const uint8_t*>(packed.bytes.data()), packed.bytes.size()}, at);
}

// Every ISA's microkernel against the reference loop nbits_dot_f32_ref. Both sum
// K f32 terms, in different orders (the microkernel per block, in even/odd
// chains), so they are not bit-equal; random-sign terms make a typical output
// sqrt(K) * rms(term), and rounding errors of u = 6e-8 per addition random-walk
// to far below 1e-5 of that, the tolerance used.
void check_microkernel(const Case& c, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "K=" << c.k << " N=" << c.n << " block=" << c.block
                                  << " zp=" << static_cast<int>(c.zp) << " bias=" << c.bias);
  Quantized q = quantize(c, seed);
  const quant::NBitsWeights w = weights_of(c, q);
  const quant::NBitsPacked packed = quant::nbits_pack_q4(w);
  std::vector<float> a(c.k + 1), bias(c.n + 1), want(c.n, 0.0f), tol(c.n);
  std::copy(q.a.begin(), q.a.begin() + c.k, a.begin() + 1);
  for (int64_t k0 = 0; k0 < c.k; k0 += quant::kNBitsKChunk) {
    quant::nbits_dot_f32_ref(w, a.data() + 1 + k0, k0, std::min(c.k, k0 + quant::kNBitsKChunk), 0, c.n, want.data());
  }
  std::vector<float> row(c.k);
  for (int64_t j = 0; j < c.n; ++j) {
    quant::nbits_dequantize_row(w, j, 0, c.k, row.data());
    double squares = 0;
    for (int64_t k = 0; k < c.k; ++k) squares += double(a[k + 1]) * row[k] * double(a[k + 1]) * row[k];
    tol[j] = 1e-5 * std::sqrt(squares) + 1e-30;  // sqrt(K) * rms = sqrt(sum of squares)
    if (c.bias) {
      bias[j + 1] = static_cast<float>(q.bias[j]);
      want[j] += bias[j + 1];
    }
  }
  // A, the bias, the tiles and y against guard pages.
  const std::span<const float> a_values = std::span(a).subspan(1), bias_values = std::span(bias).subspan(1);
  for (test::GuardAt at : test::kBothGuards) {
    const test::GuardedBuffer<float> ga(a_values, at), gbias(bias_values, at);
    const test::GuardedBuffer<uint8_t> tiles = guarded_tiles(packed, at);
    for (Isa isa : available_isas()) {
      test::GuardedBuffer<float> y(static_cast<size_t>(c.n), -1.0f, at);
      quant::nbits_table(isa).f32_q4_gemv(ga.data(), tiles.data(), packed.geometry, c.n,
                                          c.bias ? gbias.data() : nullptr, y.data());
      for (int64_t j = 0; j < c.n; ++j) {
        ASSERT_NEAR(y[j], want[j], tol[j]) << isa_name(isa) << " column " << j << " " << test::guard_name(at);
      }
    }
  }
}

TEST(MatMulNBitsPacked, MicrokernelEveryIsaMatchesReferenceLoop) {
  uint32_t seed = 20;
  for (Zp zp : {Zp::kAbsent, Zp::kPacked, Zp::kFloat}) {
    for (int64_t block : {16, 32, 64, 128}) {
      for (int64_t k : {16, 17, 31, 33, 63, 64, 65, 127, 129, 1000, 4096}) {
        for (int64_t n : {1, 15, 16, 17, 33, 63, 64, 65, 129}) {
          Case c;
          c.zp = zp;
          c.block = block;
          c.k = k;
          c.n = n;
          c.bias = (n & 1) != 0;
          check_microkernel(c, ++seed);
        }
      }
    }
  }
  Case wide;  // a Qwen2.5-0.5B FFN shape: 304 tiles
  wide.k = 896;
  wide.n = 4864;
  wide.zp = Zp::kPacked;
  check_microkernel(wide, 99);
}

TEST(MatMulNBitsPacked, MicrokernelPropagatesNanAndInf) {
  Case c;
  c.k = 100;
  c.n = 20;
  Quantized q = quantize(c, 11);
  const quant::NBitsPacked packed = quant::nbits_pack_q4(weights_of(c, q));
  const test::GuardedBuffer<uint8_t> tiles = guarded_tiles(packed, test::GuardAt::kEnd);
  for (float special : {NAN, INFINITY}) {
    std::vector<float> values(q.a.begin(), q.a.end());
    values.resize(c.k);
    values[37] = special;  // an odd k: the high-nibble chain
    const test::GuardedBuffer<float> a(values, test::GuardAt::kEnd);
    for (Isa isa : available_isas()) {
      test::GuardedBuffer<float> y(static_cast<size_t>(c.n));
      quant::nbits_table(isa).f32_q4_gemv(a.data(), tiles.data(), packed.geometry, c.n, nullptr, y.data());
      const int64_t blocks = (c.k + c.block - 1) / c.block;
      for (int64_t j = 0; j < c.n; ++j) {
        const double w = (q.codes[j * blocks * c.block + 37] - 8) * q.scales[j * blocks + 37 / c.block];
        // Inf times a zero weight is NaN; times a nonzero weight an infinity that no finite term cancels.
        if (std::isnan(special) || w == 0) {
          EXPECT_TRUE(std::isnan(y[j])) << isa_name(isa) << " column " << j;
        } else {
          EXPECT_EQ(y[j], w > 0 ? INFINITY : -INFINITY) << isa_name(isa) << " column " << j;
        }
      }
    }
  }
}


// accuracy_level 4 microkernels: the quantizer and the int8 x 4-bit kernel of
// every ISA give the bits of the reference loop nbits_dot_q8_ref over the file
// layout (same integer sums, same float operations in the same order).
void check_int8_microkernels(const Case& c, const Quantized& q) {
  const int64_t rows = c.a_lead[0], k = c.k, n = c.n;
  const quant::NBitsWeights w = weights_of(c, q);
  const quant::NBitsPacked packed = quant::nbits_pack_q4(w);
  const quant::NBitsPackedGeometry& g = packed.geometry;
  const int64_t padded = g.k_blocks * g.block_size;
  std::vector<float> a(q.a.begin(), q.a.end()), bias(q.bias.begin(), q.bias.end());
  std::vector<int8_t> q_ref(rows * padded);
  std::vector<float> s_ref(rows * g.k_blocks);
  std::vector<int32_t> sum_ref(rows * g.k_blocks);
  quant::nbits_table(Isa::kScalar).quantize_rows_q8(a.data(), k, rows, g, q_ref.data(), s_ref.data(), sum_ref.data());
  std::vector<float> want(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) want[r * n + j] = c.bias ? bias[j] : 0.0f;
    quant::nbits_dot_q8_ref(w, q_ref.data() + r * padded, s_ref.data() + r * g.k_blocks,
                            sum_ref.data() + r * g.k_blocks, 0, n, want.data() + r * n);
  }
  // Every operand against guard pages; y has a row stride past N, a sentinel
  // after each row but the last, and the guard after that.
  for (test::GuardAt at : test::kBothGuards) {
    const test::GuardedBuffer<float> ga(a, at), gbias(bias, at);
    const test::GuardedBuffer<uint8_t> tiles = guarded_tiles(packed, at);
    for (Isa isa : available_isas()) {
      SCOPED_TRACE(testing::Message() << isa_name(isa) << " K=" << k << " N=" << n << " block=" << c.block
                                      << " rows=" << rows << " zp=" << static_cast<int>(c.zp) << " "
                                      << test::guard_name(at));
      const quant::NBitsTable& t = quant::nbits_table(isa);
      test::GuardedBuffer<int8_t> qa(static_cast<size_t>(rows * padded), 99, at);
      test::GuardedBuffer<float> sa(static_cast<size_t>(rows * g.k_blocks), at);
      test::GuardedBuffer<int32_t> suma(static_cast<size_t>(rows * g.k_blocks), at);
      t.quantize_rows_q8(ga.data(), k, rows, g, qa.data(), sa.data(), suma.data());
      ASSERT_EQ(std::vector<int8_t>(qa.begin(), qa.end()), q_ref);
      ASSERT_EQ(std::memcmp(sa.data(), s_ref.data(), sa.size() * sizeof(float)), 0);
      ASSERT_EQ(std::vector<int32_t>(suma.begin(), suma.end()), sum_ref);
      test::GuardedBuffer<float> y(static_cast<size_t>(rows * (n + 1) - 1), -7.0f, at);
      t.q8_q4_gemm({qa.data(), sa.data(), suma.data()}, rows, tiles.data(), g, n, c.bias ? gbias.data() : nullptr,
                   y.data(), n + 1);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(std::memcmp(y.data() + r * (n + 1), want.data() + r * n, n * sizeof(float)), 0) << "row " << r;
        if (r + 1 < rows) {
          ASSERT_EQ(y[r * (n + 1) + n], -7.0f);
        }
      }
    }
  }
}

Case int8_case(Zp zp, int64_t block, int64_t k, int64_t n, int64_t rows) {
  Case c;
  c.zp = zp;
  c.block = block;
  c.k = k;
  c.n = n;
  c.a_lead = {rows};
  c.bias = (n & 1) != 0;
  return c;
}

// Row counts around the 4-row register block and column tails.
TEST(MatMulNBitsPacked, Int8MicrokernelsEveryIsaBitExact) {
  uint32_t seed = 40;
  for (Zp zp : {Zp::kAbsent, Zp::kPacked, Zp::kFloat}) {
    for (int64_t block : {16, 32, 64, 256}) {
      for (int64_t k : {16, 17, 33, 200, 1000}) {
        for (int64_t n : {1, 15, 16, 17, 64, 65, 129}) {
          for (int64_t rows : {1, 3, 4, 5, 9}) {
            const Case c = int8_case(zp, block, k, n, rows);
            check_int8_microkernels(c, quantize(c, ++seed));
          }
        }
      }
    }
  }
}

// The largest integer sums: every code 15 and every activation equal (all int8
// codes 127), so each octet's products reach their bound (kernels that sum in
// int16 before widening must widen in time).
TEST(MatMulNBitsPacked, Int8MicrokernelsLargestSumsBitExact) {
  uint32_t seed = 90;
  for (int64_t block : {16, 32, 64, 256}) {
    for (int64_t k : {256, 1000}) {
      for (int64_t rows : {1, 5}) {
        const Case c = int8_case(Zp::kPacked, block, k, 17, rows);
        Quantized q = quantize(c, ++seed);
        std::fill(q.a.begin(), q.a.end(), 0.75);
        for (int64_t i = 0; i < q.a_t.numel(); ++i) q.a_t.data_as<float>()[i] = 0.75f;
        std::fill(q.codes.begin(), q.codes.end(), 15);
        std::fill(q.b_t.data_as<uint8_t>(), q.b_t.data_as<uint8_t>() + q.b_t.numel(), uint8_t{0xFF});
        check_int8_microkernels(c, q);
      }
    }
  }
}

// A block of denormals overflows 127 / amax: every level writes zero codes and
// a zero sum for it (ORT's int8 conversion gives 0 there too), the same bits.
TEST(MatMulNBitsPacked, Int8QuantizerDenormalBlockIsZero) {
  quant::NBitsPackedGeometry g;
  g.k = 70;  // blocks of 32: the last one partial
  g.block_size = 32;
  g.k_blocks = 3;
  test::GuardedBuffer<float> a(static_cast<size_t>(g.k));
  for (int64_t i = 0; i < g.k; ++i) a[i] = i < 32 ? 0.25f - 0.01f * i : 1e-38f * static_cast<float>(i % 5 - 2);
  for (Isa isa : available_isas()) {
    test::GuardedBuffer<int8_t> q(96, 99, test::GuardAt::kEnd);
    test::GuardedBuffer<float> scales(3);
    test::GuardedBuffer<int32_t> sums(3, 99, test::GuardAt::kEnd);
    quant::nbits_table(isa).quantize_rows_q8(a.data(), g.k, 1, g, q.data(), scales.data(), sums.data());
    for (int64_t i = 32; i < 96; ++i) ASSERT_EQ(q[i], 0) << isa_name(isa) << " k " << i;
    EXPECT_EQ(sums[1], 0) << isa_name(isa);
    EXPECT_EQ(sums[2], 0) << isa_name(isa);
    EXPECT_EQ(scales[1], 2e-38f / 127.0f) << isa_name(isa);
    EXPECT_EQ(q[0], 127) << isa_name(isa);
  }
}

// A NaN or infinity in a block of A gives that block a NaN scale, so every
// output of its row is NaN and other rows are untouched.
TEST(MatMulNBitsPacked, Int8ActivationsNonFiniteRowIsNan) {
  for (float special : {NAN, INFINITY, -INFINITY}) {
    for (bool constant : {false, true}) {
      Case c;
      c.accuracy_level = 4;
      c.k = 100;
      c.n = 20;
      c.a_lead = {2};
      Quantized q = quantize(c, 13);
      q.a_t.data_as<float>()[c.k + 37] = special;
      std::vector<const Tensor*> inputs = {&q.a_t, &q.b_t, &q.scales_t};
      int64_t packed_bytes = 0;
      auto r = constant ? run_nbits_constant(inputs, attrs_of(c), &packed_bytes) : run_nbits(inputs, attrs_of(c));
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      const float* y = r.value()[0].data_as<float>();
      for (int64_t j = 0; j < c.n; ++j) {
        EXPECT_TRUE(std::isfinite(y[j])) << "row 0 column " << j;
        EXPECT_TRUE(std::isnan(y[c.n + j])) << "row 1 column " << j;
      }
    }
  }
}


// A session whose MatMulNBits prepacks B and scales drops their data once the
// kernel exists (the stats count both sides), and still computes the
// reference path's bits; a constant another node also reads keeps its data.
TEST(MatMulNBitsSession, PrepackedInitializersAreReleased) {
  Case c;
  c.accuracy_level = 4;
  c.k = 96;
  c.n = 40;
  c.a_lead = {2};
  Quantized q = quantize(c, 15);
  auto reference = run_nbits({&q.a_t, &q.b_t, &q.scales_t}, attrs_of(c));
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  for (bool b_shared : {false, true}) {
    SCOPED_TRACE(b_shared ? "B also read by Identity" : "B read by MatMulNBits only");
    std::shared_ptr<ir::Graph> g;
    {  // the session must hold the only reference for constants to be released
      test::GraphBuilder gb(21);
      gb.input("a", DType::kF32, {2, c.k}).constant("b", q.b_t.clone()).constant("scales", q.scales_t.clone());
      gb.node("MatMulNBits", {"a", "b", "scales"}, {"y"}, attrs_of(c)).output("y");
      if (b_shared) gb.node("Identity", {"b"}, {"b_copy"}).output("b_copy");
      gb.raw()->opsets["com.microsoft"] = 1;
      gb.raw()->nodes[0].domain = "com.microsoft";
      gb.raw()->nodes[0].opset = 1;
      g = gb.build();
    }
    auto session = runtime::Session::create(std::move(g), {.optimize = false});
    ASSERT_TRUE(session.is_ok()) << session.status().to_string();
    const runtime::ExecutorStats stats = (*session)->stats();
    const int64_t kb = (c.k + c.block - 1) / c.block;
    EXPECT_EQ(stats.packed_bytes, static_cast<size_t>((c.n + 15) / 16 * kb * (c.block / 2 * 16 + 64)));
    const size_t released = q.scales_t.nbytes() + (b_shared ? 0 : q.b_t.nbytes());
    EXPECT_EQ(stats.released_bytes, released);
    const ir::Graph& graph = (*session)->graph();
    EXPECT_EQ(graph.value(graph.find_value("b")).constant->data() == nullptr, !b_shared);
    EXPECT_EQ(graph.value(graph.find_value("scales")).constant->data(), nullptr);
    const runtime::NamedInput in[] = {{"a", &q.a_t}};
    auto out = (*session)->run(in);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(test::values_of<float>((*out)[0]), test::values_of<float>(reference.value()[0]));
    if (b_shared) EXPECT_EQ(test::values_of<uint8_t>((*out)[1]), test::values_of<uint8_t>(q.b_t));
  }
  // A graph the caller still holds is not released from: a second session on it works.
  test::GraphBuilder gb(21);
  gb.input("a", DType::kF32, {2, c.k}).constant("b", q.b_t.clone()).constant("scales", q.scales_t.clone());
  gb.node("MatMulNBits", {"a", "b", "scales"}, {"y"}, attrs_of(c)).output("y");
  gb.raw()->opsets["com.microsoft"] = 1;
  gb.raw()->nodes[0].domain = "com.microsoft";
  gb.raw()->nodes[0].opset = 1;
  std::shared_ptr<ir::Graph> shared = gb.build();
  for (int i = 0; i < 2; ++i) {
    auto session = runtime::Session::create(shared, {.optimize = false});
    ASSERT_TRUE(session.is_ok()) << session.status().to_string();
    EXPECT_EQ((*session)->stats().released_bytes, 0u);
    const runtime::NamedInput in[] = {{"a", &q.a_t}};
    auto out = (*session)->run(in);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(test::values_of<float>((*out)[0]), test::values_of<float>(reference.value()[0]));
  }
}


// The prefill kernel of every ISA against the reference loop, over row counts
// around its 6-row block, column groups of 64 with tails, K across several
// 128-step panels with tails, and every block size (256 makes its own panel).
// The tolerance is check_microkernel's, sqrt(K) * rms(term) * 1e-5, plus the
// random walk of K roundings of the running sum (each up to half an ulp of the
// result): 4 * 2^-24 * sqrt(K) * |y|.
TEST(MatMulNBitsPacked, PrefillKernelEveryIsaMatchesReferenceLoop) {
  uint32_t seed = 60;
  for (Zp zp : {Zp::kAbsent, Zp::kPacked, Zp::kFloat}) {
    for (int64_t block : {16, 32, 128, 256}) {
      for (int64_t k : {16, 33, 129, 300, 1000}) {
        for (int64_t n : {1, 17, 64, 65, 150}) {
          for (int64_t rows : {1, 5, 6, 7, 13}) {
            Case c;
            c.zp = zp;
            c.block = block;
            c.k = k;
            c.n = n;
            c.bias = (n & 1) != 0;
            Quantized q = quantize(c, ++seed);
            const quant::NBitsWeights w = weights_of(c, q);
            const quant::NBitsPacked packed = quant::nbits_pack_q4(w);
            std::mt19937 rng(seed);
            std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
            const int64_t lda = k + 3;  // a row stride past K
            std::vector<float> a(rows * lda), bias(n);
            for (float& v : a) v = unit(rng);
            for (int64_t j = 0; j < n; ++j) bias[j] = c.bias ? static_cast<float>(q.bias[j]) : 0.0f;
            std::vector<float> want(rows * n, 0.0f), tol(rows * n), dequantized(k);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t k0 = 0; k0 < k; k0 += quant::kNBitsKChunk) {
                quant::nbits_dot_f32_ref(w, a.data() + r * lda + k0, k0, std::min(k, k0 + quant::kNBitsKChunk), 0, n,
                                         want.data() + r * n);
              }
              for (int64_t j = 0; j < n; ++j) {
                quant::nbits_dequantize_row(w, j, 0, k, dequantized.data());
                double squares = 0;
                for (int64_t i = 0; i < k; ++i) squares += std::pow(double(a[r * lda + i]) * dequantized[i], 2);
                want[r * n + j] += bias[j];
                tol[r * n + j] = 1e-5 * std::sqrt(squares) + 4 * std::ldexp(1.0, -24) * std::sqrt(double(k)) *
                                                                   std::fabs(want[r * n + j]) + 1e-30;
              }
            }
            // A, the bias, the tiles and y against guard pages: A and y end with
            // their last row's last element (y has a sentinel after the others).
            const std::span<const float> a_read = std::span(a).first(static_cast<size_t>((rows - 1) * lda + k));
            for (test::GuardAt at : test::kBothGuards) {
              const test::GuardedBuffer<float> ga(a_read, at), gbias(bias, at);
              const test::GuardedBuffer<uint8_t> tiles = guarded_tiles(packed, at);
              for (Isa isa : available_isas()) {
                SCOPED_TRACE(testing::Message() << isa_name(isa) << " K=" << k << " N=" << n << " block=" << block
                                                << " rows=" << rows << " zp=" << static_cast<int>(zp) << " "
                                                << test::guard_name(at));
                test::GuardedBuffer<float> y(static_cast<size_t>(rows * (n + 1) - 1), -7.0f, at);
                quant::nbits_table(isa).f32_q4_gemm(ga.data(), lda, rows, tiles.data(), packed.geometry, n,
                                                    c.bias ? gbias.data() : nullptr, y.data(), n + 1);
                for (int64_t r = 0; r < rows; ++r) {
                  for (int64_t j = 0; j < n; ++j) {
                    ASSERT_NEAR(y[r * (n + 1) + j], want[r * n + j], tol[r * n + j]) << "row " << r << " column " << j;
                  }
                  if (r + 1 < rows) {
                    ASSERT_EQ(y[r * (n + 1) + n], -7.0f);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember
