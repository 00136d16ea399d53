// com.microsoft MatMulNBits: Ember's output against ONNX Runtime's on random
// weights, one single-node model per case, weights as initializers.
// ctest: every ISA level
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

enum class Zp { kAbsent, kPacked, kFloat };

struct Param {
  int bits = 4;
  int accuracy_level = 0;
  int64_t m = 1, k = 64, n = 16, block = 32;
  Zp zp = Zp::kAbsent;
  bool bias = false;
  DType dtype = DType::kF32;
};

std::string describe(const Param& p) {
  const char* zp = p.zp == Zp::kAbsent ? "" : p.zp == Zp::kPacked ? "_zpu8" : "_zpfloat";
  return "b" + std::to_string(p.bits) + "_acc" + std::to_string(p.accuracy_level) + "_M" + std::to_string(p.m) + "_K" +
         std::to_string(p.k) + "_N" + std::to_string(p.n) + "_blk" + std::to_string(p.block) + zp +
         (p.bias ? "_bias" : "") + (p.dtype == DType::kF16 ? "_f16" : "");
}

std::string param_name(const testing::TestParamInfo<Param>& info) { return describe(info.param); }

// How gtest prints a case (instead of the struct's raw bytes).
void PrintTo(const Param& p, std::ostream* os) { *os << describe(p); }

void fill_float(Tensor& t, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kF16) t.data_as<Float16>()[i] = Float16(dist(rng));
    else t.data_as<float>()[i] = dist(rng);
  }
}

void fill_bytes(Tensor& t, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
}

struct Model {
  std::string bytes;
  Tensor a;
};

// Random codes (every byte value, so both nibbles vary), scales in [0.01, 0.06]
// and A in [-1, 1]: outputs of order sqrt(K) * 0.1.
Model build_model(const Param& p) {
  std::mt19937 rng(static_cast<uint32_t>(p.m * 1000003 + p.k * 101 + p.n * 7 + p.bits + p.block));
  const int64_t kb = (p.k + p.block - 1) / p.block;
  ModelBuilder mb(17);
  mb.set_opset("com.microsoft", 1);
  mb.add_input("A", p.dtype, {p.m, p.k});
  mb.add_output("Y", p.dtype, {p.m, p.n});
  Tensor b = Tensor::allocate(DType::kU8, {p.n, kb, p.block * p.bits / 8});
  fill_bytes(b, rng);
  mb.add_initializer("B", b);
  Tensor scales = Tensor::allocate(p.dtype, {p.n * kb});
  fill_float(scales, rng, 0.01f, 0.06f);
  mb.add_initializer("scales", scales);
  std::vector<std::string> inputs = {"A", "B", "scales"};
  if (p.zp == Zp::kPacked) {
    Tensor zp = Tensor::allocate(DType::kU8, {p.n * ((kb * p.bits + 7) / 8)});
    fill_bytes(zp, rng);
    mb.add_initializer("zero_points", zp);
  } else if (p.zp == Zp::kFloat) {
    const float levels = static_cast<float>(1 << p.bits);
    Tensor zp = Tensor::allocate(p.dtype, {p.n, kb});
    fill_float(zp, rng, 0.25f * levels, 0.75f * levels);
    mb.add_initializer("zero_points", zp);
  }
  inputs.push_back(p.zp == Zp::kAbsent ? "" : "zero_points");
  if (p.bias) {
    Tensor bias = Tensor::allocate(p.dtype, {p.n});
    fill_float(bias, rng, -1.0f, 1.0f);
    mb.add_initializer("bias", bias);
    inputs.push_back("");
    inputs.push_back("bias");
  }
  mb.add_node("MatMulNBits", inputs, {"Y"},
              {attr_int("K", p.k), attr_int("N", p.n), attr_int("bits", p.bits), attr_int("block_size", p.block),
               attr_int("accuracy_level", p.accuracy_level)},
              "com.microsoft");
  Model model{mb.serialize(), Tensor::allocate(p.dtype, {p.m, p.k})};
  fill_float(model.a, rng, -1.0f, 1.0f);
  return model;
}

double rms(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.dtype() == DType::kF16 ? static_cast<float>(t.data_as<Float16>()[i]) : t.data_as<float>()[i];
    sum += v * v;
  }
  return t.numel() ? std::sqrt(sum / static_cast<double>(t.numel())) : 0.0;
}

// Tolerances, with the largest error seen over this suite's cases (ORT 1.30):
// - level 0, f32: both sides dequantize to f32 and sum in f32 in different
//   orders (ORT by blocks, Ember by K chunks of 256); seen 4.3e-6 * rms(Y) at
//   K=4096, so atol 5e-5 * rms(Y) (~10x headroom). A wrong code, zero point or
//   scale moves an output by ~1e-2 * rms(Y) or more.
// - level 0, f16: seen exact (both compute in f32 and round once).
// - level 4 with integer (or absent) zero points: both quantize A to int8 per
//   block with the same formula and sum exact int32 products, so only the f32
//   sum over blocks differs in order; seen 1.8e-6 * rms(Y), so the level-0
//   tolerance. (The int8 quantization itself moves outputs by ~0.4% of rms(Y):
//   a different rounding of A would fail this by far.) With float zero points
//   ORT computes in f32 at level 4 too, and so does Ember.
// - level 4 on a host where ORT computes it in f32 (x86 without AVX2,
//   ortref::ort_quantizes_activations_here): Ember's int8 rounding of A shows
//   whole, ~0.4% of rms(Y); atol 2e-2 * rms(Y). The int8 path itself is held bit
//   for bit to its reference by the unit tests (matmul_nbits_test.cpp).
Tolerance tolerance_for(const Param& p, const Tensor& want) {
  const double scale = rms(want);
  const bool int8 = p.accuracy_level == 4 && p.zp != Zp::kFloat;
  if (int8 && !ort_quantizes_activations_here()) return {1e-5, 2e-2 * scale};
  if (p.accuracy_level == 4) return {1e-5, 5e-5 * scale};
  if (p.dtype == DType::kF16) return {2e-3, 2e-3 * scale};
  return {1e-5, 5e-5 * scale};
}

class MatMulNBitsOrt : public testing::TestWithParam<Param> {};

TEST_P(MatMulNBitsOrt, MatchesOnnxRuntime) {
  const Param& p = GetParam();
  const Model model = build_model(p);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(model.bytes.data()), model.bytes.size());
  auto ort = OrtSession::load_from_bytes(bytes);
  if (!ort.is_ok() && ort.status().message().find("implementation") != std::string::npos) {
    GTEST_SKIP() << "ONNX Runtime has no CPU kernel for this combination: " << ort.status().to_string();
  }
  ASSERT_TRUE(ort.is_ok()) << ort.status().to_string();
  auto ember = runtime::Session::load_from_bytes(bytes);
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  const std::vector<OrtInput> ort_inputs = {{"A", &model.a}};
  const std::vector<runtime::NamedInput> ember_inputs = {{"A", &model.a}};
  auto want = (*ort)->run(ort_inputs);
  if (!want.is_ok() && want.status().message().find("supported") != std::string::npos) {
    GTEST_SKIP() << "ONNX Runtime refuses this combination: " << want.status().to_string();
  }
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = (*ember)->run(ember_inputs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  const Status s = compare((*got)[0], (*want)[0], tolerance_for(p, (*want)[0]));
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

std::vector<Param> grid() {
  std::vector<Param> out;
  const struct { int64_t k, block; } ks[] = {{64, 32}, {96, 64}, {4096, 32}};
  for (int bits : {4, 8}) {
    for (int level : {0, 4}) {
      for (int64_t m : {1, 5}) {
        for (auto [k, block] : ks) {
          for (int64_t n : {16, 33}) out.push_back({bits, level, m, k, n, block});
        }
      }
    }
  }
  return out;
}

std::vector<Param> layouts() {
  std::vector<Param> out;
  for (int bits : {4, 8}) {
    for (int level : {0, 4}) {
      for (Zp zp : {Zp::kPacked, Zp::kFloat}) {
        // K=96 with block 32: 3 blocks, an odd count of packed 4-bit zero points.
        out.push_back({bits, level, 5, 96, 33, 32, zp, true});
        out.push_back({bits, level, 1, 200, 16, 16, zp, true});
      }
    }
    for (Zp zp : {Zp::kAbsent, Zp::kPacked}) {
      out.push_back({bits, 0, 5, 96, 33, 64, zp, true, DType::kF16});
      out.push_back({bits, 4, 1, 4096, 16, 32, zp, false, DType::kF16});
    }
    out.push_back({bits, 0, 3, 256, 16, 128, Zp::kAbsent, true});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, MatMulNBitsOrt, testing::ValuesIn(grid()), param_name);
INSTANTIATE_TEST_SUITE_P(Layouts, MatMulNBitsOrt, testing::ValuesIn(layouts()), param_name);

}  // namespace
}  // namespace ember::ortref
