// Integer GEMM and quantization ops against ONNX Runtime, one single-node model
// per case: every output must match bit for bit (integers, and f32 / f16 from
// DequantizeLinear, which both sides compute as float(x - zp) * scale).
//
// ORT is the oracle only where its own result is exact on this host. Its u8 x s8
// GEMM on x86 without VNNI (AVX2, and AVX-512 before VNNI) adds pairs of u8 * s8
// products in int16 with saturation (VPMADDUBSW), so its int32 sums are off there
// (-869836 for -871221, measured on an AVX2 Zen 2). A u8 x s8 case is therefore
// always checked against ORT on the same model with B moved to u8 (b + 128 and
// b_zp + 128 give the same differences b - b_zp), which ORT sums exactly on every
// host, and against ORT's own u8 x s8 path only on hosts with VNNI.
// ctest: every ISA level
// ctest: emulated CPUs
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

Tensor random_ints(DType dtype, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t = Tensor::allocate(dtype, Shape(dims.begin(), dims.end()));
  std::uniform_int_distribution<int> byte(0, 255);
  auto* p = static_cast<uint8_t*>(t.data());
  for (size_t i = 0; i < static_cast<size_t>(t.numel()) * dtype_size(dtype); ++i) p[i] = static_cast<uint8_t>(byte(rng));
  return t;
}

Tensor floats(std::vector<int64_t> dims, std::mt19937& rng, float lo, float hi, DType dtype = DType::kF32) {
  Tensor t = Tensor::allocate(dtype, Shape(dims.begin(), dims.end()));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::kF16) t.data_as<Float16>()[i] = Float16(dist(rng));
    else t.data_as<float>()[i] = dist(rng);
  }
  return t;
}

Tensor scalar_f32(float v) {
  Tensor t = Tensor::allocate(DType::kF32, Shape{});
  *t.data_as<float>() = v;
  return t;
}

// Runs `mb` on Ember and `oracle` (default: the same model) on ORT with input
// "x" and expects identical outputs.
void expect_same_as_ort(const ModelBuilder& mb, const Tensor& x, const ModelBuilder* oracle = nullptr) {
  const std::string bytes = mb.serialize();
  const std::string oracle_bytes = oracle ? oracle->serialize() : bytes;
  std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  auto ort = OrtSession::load_from_bytes(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(oracle_bytes.data()), oracle_bytes.size()));
  if (!ort.is_ok() && ort.status().message().find("implementation") != std::string::npos) {
    GTEST_SKIP() << "ONNX Runtime has no CPU kernel for this combination: " << ort.status().to_string();
  }
  ASSERT_TRUE(ort.is_ok()) << ort.status().to_string();
  auto ember = runtime::Session::load_from_bytes(span);
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  const std::vector<OrtInput> ort_inputs = {{"x", &x}};
  const std::vector<runtime::NamedInput> ember_inputs = {{"x", &x}};
  auto want = (*ort)->run(ort_inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = (*ember)->run(ember_inputs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    const Status s = compare((*got)[i], (*want)[i], Tolerance{0.0, 0.0});
    EXPECT_TRUE(s.is_ok()) << "output " << i << (oracle ? " (against ORT with B as u8)" : "") << ": " << s.to_string();
  }
}

bool ort_u8s8_exact_here() { return cpu_features().avx512vnni || cpu_features().avx_vnni; }

Tensor shifted_to_u8(const Tensor& s8) {
  Tensor u8 = Tensor::allocate(DType::kU8, s8.shape());
  for (int64_t i = 0; i < s8.numel(); ++i) u8.data_as<uint8_t>()[i] = static_cast<uint8_t>(s8.data_as<int8_t>()[i] + 128);
  return u8;
}

struct GemmCase {
  int opset;
  DType a, b, y;
  std::vector<int64_t> a_dims;  // [..., M, K]
  int64_t n;
  bool per_column;
};

std::string describe(const GemmCase& c) {
  std::string s = fmt::format("op{}_{}x{}_{}", c.opset, dtype_name(c.a), dtype_name(c.b), dtype_name(c.y));
  for (int64_t d : c.a_dims) s += fmt::format("_{}", d);
  return s + fmt::format("_N{}{}", c.n, c.per_column ? "_percol" : "");
}

// `model(b, b_zp)` builds the case's model around B and its zero point.
template <class Model>
void expect_gemm_as_ort(const GemmCase& c, const Model& model, const Tensor& b, const Tensor& b_zp, const Tensor& x) {
  const ModelBuilder mb = model(b, b_zp);
  const bool u8s8 = c.a == DType::kU8 && c.b == DType::kI8;
  if (u8s8) {
    const ModelBuilder exact = model(shifted_to_u8(b), shifted_to_u8(b_zp));
    expect_same_as_ort(mb, x, &exact);
  }
  if (!u8s8 || ort_u8s8_exact_here()) expect_same_as_ort(mb, x);
}

class QLinearMatMulOrt : public testing::TestWithParam<GemmCase> {};

// B is an initializer: Ember's packed path (the unit tests hold the reference
// path to it). The scales spread the outputs over the whole output range, with
// some saturation at both ends.
TEST_P(QLinearMatMulOrt, BitExact) {
  const GemmCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.n * 31 + c.a_dims.back() * 7 + c.opset));
  const int64_t k = c.a_dims.back();
  const std::vector<int64_t> per = c.per_column ? std::vector<int64_t>{c.n} : std::vector<int64_t>{};
  const Tensor a_zp = random_ints(c.a, {}, rng);
  const Tensor b = random_ints(c.b, {k, c.n}, rng);
  const Tensor b_scale = floats(per, rng, 0.004f, 0.012f);
  const Tensor b_zp = random_ints(c.b, per, rng);
  const Tensor y_zp = random_ints(c.y, {}, rng);
  auto model = [&](const Tensor& b_values, const Tensor& b_zero_point) {
    ModelBuilder mb(c.opset);
    mb.add_input("x", c.a, c.a_dims);
    mb.add_output_unshaped("y", c.y);
    mb.add_initializer("a_scale", scalar_f32(0.02f));
    mb.add_initializer("a_zp", a_zp);
    mb.add_initializer("b", b_values);
    mb.add_initializer("b_scale", b_scale);
    mb.add_initializer("b_zp", b_zero_point);
    mb.add_initializer("y_scale", scalar_f32(0.02f * 0.008f * 40.0f * std::sqrt(static_cast<float>(k))));
    mb.add_initializer("y_zp", y_zp);
    mb.add_node("QLinearMatMul", {"x", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"}, {"y"});
    return mb;
  };
  expect_gemm_as_ort(c, model, b, b_zp, random_ints(c.a, c.a_dims, rng));
}

std::vector<GemmCase> qlinear_cases() {
  std::vector<GemmCase> out;
  const struct { DType a, b, y; } types[] = {{DType::kU8, DType::kU8, DType::kU8},
                                             {DType::kU8, DType::kI8, DType::kU8},
                                             {DType::kI8, DType::kI8, DType::kI8}};
  for (int opset : {10, 21}) {
    for (auto t : types) {
      for (bool per_column : {false, true}) {
        out.push_back({opset, t.a, t.b, t.y, {1, 300}, 70, per_column});
        out.push_back({opset, t.a, t.b, t.y, {67, 33}, 17, per_column});
        out.push_back({opset, t.a, t.b, t.y, {2, 3, 5, 1}, 1, per_column});
      }
    }
  }
  out.push_back({21, DType::kU8, DType::kI8, DType::kU8, {128, 2048}, 64, true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, QLinearMatMulOrt, testing::ValuesIn(qlinear_cases()),
                         [](const testing::TestParamInfo<GemmCase>& i) { return describe(i.param); });

class MatMulIntegerOrt : public testing::TestWithParam<GemmCase> {};

TEST_P(MatMulIntegerOrt, Exact) {
  const GemmCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.n * 13 + c.a_dims.back()));
  const int64_t k = c.a_dims.back();
  const Tensor b = random_ints(c.b, {k, c.n}, rng);
  const Tensor a_zp = random_ints(c.a, {}, rng);
  const Tensor b_zp = random_ints(c.b, c.per_column ? std::vector<int64_t>{c.n} : std::vector<int64_t>{}, rng);
  auto model = [&](const Tensor& b_values, const Tensor& b_zero_point) {
    ModelBuilder mb(c.opset);
    mb.add_input("x", c.a, c.a_dims);
    mb.add_output_unshaped("y", DType::kI32);
    mb.add_initializer("b", b_values);
    mb.add_initializer("a_zp", a_zp);
    mb.add_initializer("b_zp", b_zero_point);
    mb.add_node("MatMulInteger", {"x", "b", "a_zp", "b_zp"}, {"y"});
    return mb;
  };
  expect_gemm_as_ort(c, model, b, b_zp, random_ints(c.a, c.a_dims, rng));
}

std::vector<GemmCase> integer_cases() {
  std::vector<GemmCase> out;
  const struct { DType a, b; } types[] = {{DType::kU8, DType::kU8}, {DType::kU8, DType::kI8},
                                          {DType::kI8, DType::kU8}, {DType::kI8, DType::kI8}};
  for (auto t : types) {
    for (bool per_column : {false, true}) {
      out.push_back({10, t.a, t.b, DType::kI32, {1, 1000}, 37, per_column});
      out.push_back({10, t.a, t.b, DType::kI32, {2, 9, 65}, 129, per_column});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, MatMulIntegerOrt, testing::ValuesIn(integer_cases()),
                         [](const testing::TestParamInfo<GemmCase>& i) { return describe(i.param); });

struct QuantCase {
  int opset;
  DType x_type, q_type;  // float side, integer side
  int64_t axis;          // -2: per tensor
  int64_t block = 0;
  bool zero_point = true;
};

std::string describe_quant(const QuantCase& c) {
  return fmt::format("op{}_{}_{}_{}{}{}", c.opset, dtype_name(c.x_type), dtype_name(c.q_type),
                     c.axis == -2 ? std::string("tensor") : fmt::format("axis{}", c.axis),
                     c.block ? fmt::format("_block{}", c.block) : "", c.zero_point ? "" : "_nozp");
}

const std::vector<int64_t> kQuantDims = {3, 8, 5};

std::vector<int64_t> param_dims(const QuantCase& c) {
  if (c.axis == -2) return {};
  if (c.block == 0) return {kQuantDims[static_cast<size_t>(c.axis)]};
  std::vector<int64_t> d = kQuantDims;
  d[static_cast<size_t>(c.axis)] = (d[static_cast<size_t>(c.axis)] + c.block - 1) / c.block;
  return d;
}

std::vector<ir::Attribute> quant_attrs(const QuantCase& c) {
  std::vector<ir::Attribute> a;
  if (c.axis != -2) a.push_back(attr_int("axis", c.axis));
  if (c.block) a.push_back(attr_int("block_size", c.block));
  return a;
}

class QuantizeOrt : public testing::TestWithParam<QuantCase> {};

// x spans the integer range and beyond, with exact ties (k + 0.5) * scale.
TEST_P(QuantizeOrt, BitExact) {
  const QuantCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.opset * 5 + c.axis + 17 * c.block));
  const bool wide = c.q_type == DType::kU16 || c.q_type == DType::kI16;
  const float range = wide ? 40000.0f : 300.0f;
  ModelBuilder mb(c.opset);
  mb.add_input("x", c.x_type, kQuantDims);
  mb.add_output_unshaped("y", c.q_type);
  const std::vector<int64_t> pd = param_dims(c);
  Tensor scale = floats(pd, rng, 0.5f, 2.0f, c.x_type);
  for (int64_t i = 0; i < scale.numel(); ++i) {
    // Powers of two keep x / scale exact, so the ties stay ties.
    const float s = std::exp2(std::round(std::log2(c.x_type == DType::kF16 ? static_cast<float>(scale.data_as<Float16>()[i])
                                                                           : scale.data_as<float>()[i])));
    if (c.x_type == DType::kF16) scale.data_as<Float16>()[i] = Float16(s);
    else scale.data_as<float>()[i] = s;
  }
  mb.add_initializer("scale", scale);
  std::vector<std::string> inputs = {"x", "scale"};
  if (c.zero_point) {
    mb.add_initializer("zp", random_ints(c.q_type, pd, rng));
    inputs.push_back("zp");
  }
  mb.add_node("QuantizeLinear", inputs, {"y"}, quant_attrs(c));
  Tensor x = floats(kQuantDims, rng, -range, range, c.x_type);
  for (int64_t i = 0; i < x.numel(); i += 3) {
    const float v = std::round(static_cast<float>(i % 200) - 100.0f) + 0.5f;
    if (c.x_type == DType::kF16) x.data_as<Float16>()[i] = Float16(v);
    else x.data_as<float>()[i] = v;
  }
  expect_same_as_ort(mb, x);
}

class DequantizeOrt : public testing::TestWithParam<QuantCase> {};

TEST_P(DequantizeOrt, BitExact) {
  const QuantCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.opset * 3 + c.axis + 11 * c.block));
  ModelBuilder mb(c.opset);
  mb.add_input("x", c.q_type, kQuantDims);
  mb.add_output_unshaped("y", c.x_type);
  const std::vector<int64_t> pd = param_dims(c);
  mb.add_initializer("scale", floats(pd, rng, 0.001f, 3.0f, c.x_type));
  std::vector<std::string> inputs = {"x", "scale"};
  if (c.zero_point) {
    Tensor zp = random_ints(c.q_type, pd, rng);
    if (c.q_type == DType::kI32) zp = Tensor::allocate(DType::kI32, Shape(pd.begin(), pd.end()));  // must be 0
    if (zp.dtype() == DType::kI32) {
      for (int64_t i = 0; i < zp.numel(); ++i) zp.data_as<int32_t>()[i] = 0;
    }
    mb.add_initializer("zp", zp);
    inputs.push_back("zp");
  }
  mb.add_node("DequantizeLinear", inputs, {"y"}, quant_attrs(c));
  expect_same_as_ort(mb, random_ints(c.q_type, kQuantDims, rng));
}

std::vector<QuantCase> quant_cases(bool dequantize) {
  std::vector<QuantCase> out;
  for (DType q : {DType::kU8, DType::kI8}) {
    out.push_back({10, DType::kF32, q, -2});
    // Without a zero point QuantizeLinear's output is uint8.
    if (q == DType::kU8 || dequantize) out.push_back({13, DType::kF32, q, -2, 0, false});
    out.push_back({13, DType::kF32, q, 1});
    out.push_back({13, DType::kF32, q, 2});
    out.push_back({19, DType::kF16, q, -2});
    out.push_back({19, DType::kF16, q, 0});
    out.push_back({21, DType::kF32, q, 1, 3});
    out.push_back({21, DType::kF32, q, 2, 2});
  }
  for (DType q : {DType::kU16, DType::kI16}) {
    out.push_back({21, DType::kF32, q, -2});
    out.push_back({21, DType::kF32, q, 1});
  }
  if (dequantize) {
    out.push_back({13, DType::kF32, DType::kI32, -2});
    out.push_back({13, DType::kF32, DType::kI32, -2, 0, false});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, QuantizeOrt, testing::ValuesIn(quant_cases(false)),
                         [](const testing::TestParamInfo<QuantCase>& i) { return describe_quant(i.param); });
INSTANTIATE_TEST_SUITE_P(Cases, DequantizeOrt, testing::ValuesIn(quant_cases(true)),
                         [](const testing::TestParamInfo<QuantCase>& i) { return describe_quant(i.param); });

TEST(DynamicQuantizeLinearOrt, BitExact) {
  std::mt19937 rng(5);
  for (auto [lo, hi] : {std::pair{-3.0f, 5.0f}, std::pair{0.5f, 9.0f}, std::pair{-7.0f, -0.25f}}) {
    ModelBuilder mb(11);
    mb.add_input("x", DType::kF32, {128, 37});
    mb.add_output_unshaped("y", DType::kU8);
    mb.add_output_unshaped("y_scale", DType::kF32);
    mb.add_output_unshaped("y_zp", DType::kU8);
    mb.add_node("DynamicQuantizeLinear", {"x"}, {"y", "y_scale", "y_zp"});
    expect_same_as_ort(mb, floats({128, 37}, rng, lo, hi));
  }
}

}  // namespace
}  // namespace ember::ortref
