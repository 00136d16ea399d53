// SimplifiedLayerNormalization, RMSNormalization and com.microsoft
// SkipSimplifiedLayerNormalization (with its input_skip_bias_sum output, the
// residual stream): Ember's outputs against ONNX Runtime's, bit for bit; a NaN
// matches any NaN. These ops feed MatMulNBits, which at accuracy_level 4
// quantizes its activations to int8: one ulp moves an int8 code, and at a
// near-tie the greedy token (issue 16). One single-node model per case, gamma
// and bias as initializers as onnxruntime-genai's model builder writes them.
// CMakeLists.txt runs this suite again at EMBER_ISA=avx2 and scalar: every
// level must give these bits. Sizes straddle ORT's switch from its scalar loop
// to MLAS's AVX2 RMSNorm kernel at 16 (row_norm.cpp, RmsRounding).
// ctest: every ISA level
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/isa.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

// kAddSimplified: Add -> SimplifiedLayerNormalization as optimum exports it,
// which Ember fuses into SkipSimplifiedLayerNormalization and ORT runs unfused.
enum class Op { kSimplified, kRms23, kSkip, kAddSimplified };
enum class Values {
  kUniform,    // [-2, 2)
  kWide,       // magnitudes 2^-12 .. 2^12, random signs: summation order shows
  kNonFinite,  // uniform with a NaN, an Inf and a -Inf row (and inf - inf in Skip)
};

struct Param {
  Op op = Op::kSimplified;
  int64_t batch = 1, seq = 1, hidden = 896;
  bool bias = false;            // Skip: the optional bias input
  bool sum_output = true;       // Skip: input_skip_bias_sum requested
  bool skip_broadcast = false;  // Skip: skip [1, S, H] under input [B, S, H]
  Values values = Values::kUniform;
  DType dtype = DType::kF32;
};

std::string describe(const Param& p) {
  static const char* const kOps[] = {"simplified", "rms23", "skip", "addsimplified"};
  static const char* const kValues[] = {"uniform", "wide", "nonfinite"};
  std::string s = std::string(kOps[static_cast<int>(p.op)]) + "_B" + std::to_string(p.batch) + "_S" +
                  std::to_string(p.seq) + "_H" + std::to_string(p.hidden) + "_" + kValues[static_cast<int>(p.values)];
  if (p.op == Op::kAddSimplified) s += p.sum_output ? "_sum" : "";
  if (p.op == Op::kSkip) {
    s += p.bias ? "_bias" : "";
    s += p.sum_output ? "_sum" : "";
    s += p.skip_broadcast ? "_skipbcast" : "";
  }
  return s + (p.dtype == DType::kF16 ? "_f16" : "");
}

std::string param_name(const testing::TestParamInfo<Param>& info) { return describe(info.param); }
void PrintTo(const Param& p, std::ostream* os) { *os << describe(p); }

std::vector<float> draw(int64_t n, Values kind, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f), exponent(-12.0f, 12.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = kind == Values::kWide ? std::copysign(std::exp2(exponent(rng)), uniform(rng)) : uniform(rng);
  return v;
}

Tensor tensor_of(DType dtype, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  Tensor t = Tensor::allocate(dtype, Shape(std::span<const int64_t>(dims)));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF16) t.data_as<Float16>()[i] = Float16(v[i]);
    else t.data_as<float>()[i] = v[i];
  }
  return t;
}

struct Model {
  std::string bytes;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

Model build_model(const Param& p) {
  std::mt19937 rng(static_cast<uint32_t>(p.hidden * 7919 + p.batch * 131 + p.seq * 17 + static_cast<int>(p.op) * 5 +
                                         static_cast<int>(p.values) * 3 + p.bias));
  const int64_t h = p.hidden, rows = p.batch * p.seq;
  const std::vector<int64_t> x_dims = {p.batch, p.seq, h};
  std::vector<float> x = draw(rows * h, p.values, rng);
  const std::vector<int64_t> skip_dims = {p.skip_broadcast ? 1 : p.batch, p.seq, h};
  std::vector<float> skip = draw(skip_dims[0] * p.seq * h, p.values, rng);
  if (p.values == Values::kNonFinite) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    x[static_cast<size_t>(h / 2)] = nan;
    if (rows > 1) x[static_cast<size_t>(h + h - 1)] = inf;
    if (rows > 2) x[static_cast<size_t>(2 * h)] = -inf;
    if (p.op == Op::kSkip && rows > 3) {  // inf + -inf: a NaN made by the sum
      x[static_cast<size_t>(3 * h + 1)] = inf;
      skip[static_cast<size_t>((p.skip_broadcast ? 3 % p.seq : 3) * h + 1)] = -inf;
    }
  }
  const std::vector<float> gamma = draw(h, Values::kUniform, rng), bias = draw(h, Values::kUniform, rng);

  ModelBuilder mb(p.op == Op::kRms23 ? 23 : 17);
  mb.set_ir_version(10);  // Ember's loader reads IR versions up to 10
  Model m;
  mb.add_input("x", p.dtype, x_dims);
  m.inputs.emplace_back("x", tensor_of(p.dtype, x_dims, x));
  mb.add_initializer("gamma", tensor_of(p.dtype, {h}, gamma));
  mb.add_output("y", p.dtype, x_dims);
  const std::vector<ir::Attribute> eps = {attr_float("epsilon", 1e-6f)};
  if (p.op == Op::kSimplified) {
    std::vector<std::string> outputs = {"y"};
    if (p.dtype == DType::kF32) {  // inv_std_var, f32 for f32 inputs
      outputs.push_back("inv_std_var");
      mb.add_output("inv_std_var", DType::kF32, {p.batch, p.seq, 1});
    }
    mb.add_node("SimplifiedLayerNormalization", {"x", "gamma"}, outputs, {attr_int("axis", -1), eps[0]});
  } else if (p.op == Op::kRms23) {
    mb.add_node("RMSNormalization", {"x", "gamma"}, {"y"}, eps);
  } else if (p.op == Op::kAddSimplified) {
    mb.add_input("skip", p.dtype, x_dims);
    m.inputs.emplace_back("skip", tensor_of(p.dtype, x_dims, draw(rows * h, p.values, rng)));
    mb.add_node("Add", {"x", "skip"}, {"sum"});
    if (p.sum_output) mb.add_output("sum", p.dtype, x_dims);
    mb.add_node("SimplifiedLayerNormalization", {"sum", "gamma"}, {"y"}, {attr_int("axis", -1), eps[0]});
  } else {
    mb.set_opset("com.microsoft", 1);
    mb.add_input("skip", p.dtype, skip_dims);
    m.inputs.emplace_back("skip", tensor_of(p.dtype, skip_dims, skip));
    std::vector<std::string> inputs = {"x", "skip", "gamma"};
    if (p.bias) {
      mb.add_initializer("bias", tensor_of(p.dtype, {h}, bias));
      inputs.push_back("bias");
    }
    std::vector<std::string> outputs = {"y"};
    if (p.sum_output) {
      outputs.insert(outputs.end(), {"", "", "input_skip_bias_sum"});
      mb.add_output("input_skip_bias_sum", p.dtype, x_dims);
    }
    mb.add_node("SkipSimplifiedLayerNormalization", inputs, outputs, eps, "com.microsoft");
  }
  m.bytes = mb.serialize();
  return m;
}

// Same bits element by element, except that a NaN matches any NaN (its sign and
// payload are not what ORT's formula pins down).
Status same_bits(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || !(got.shape() == want.shape())) {
    return internal_error("Ember gave {}, ORT {}", got.describe(), want.describe());
  }
  int64_t differ = 0, first = -1;
  auto at = [](const Tensor& t, int64_t i, uint32_t& bits) {
    if (t.dtype() == DType::kF16) {
      bits = t.data_as<uint16_t>()[i];
      return static_cast<double>(static_cast<float>(t.data_as<Float16>()[i]));
    }
    std::memcpy(&bits, t.data_as<float>() + i, sizeof bits);
    return static_cast<double>(t.data_as<float>()[i]);
  };
  for (int64_t i = 0; i < got.numel(); ++i) {
    uint32_t gb = 0, wb = 0;
    const double g = at(got, i, gb), w = at(want, i, wb);
    if (gb == wb || (std::isnan(g) && std::isnan(w))) continue;
    if (differ++ == 0) first = i;
  }
  if (differ == 0) return Status::ok();
  uint32_t gb = 0, wb = 0;
  const double g = at(got, first, gb), w = at(want, first, wb);
  return internal_error("{} of {} elements differ in their bits; first at {}: Ember {} ({:#x}), ORT {} ({:#x})", differ,
                        got.numel(), first, g, gb, w, wb);
}

class NormOrt : public testing::TestWithParam<Param> {};

TEST_P(NormOrt, BitIdenticalToOnnxRuntime) {
  const Param& p = GetParam();
  if (p.op != Op::kSkip && p.dtype == DType::kF32 && p.hidden >= 16 && detected_isa() < Isa::kAvx2) {
    GTEST_SKIP() << "ORT has no MLAS RMSNorm kernel without AVX2 and sums serially; Ember keeps the AVX2 "
                    "kernel's bits on every CPU";
  }
  const Model model = build_model(p);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(model.bytes.data()), model.bytes.size());
  auto ort = OrtSession::load_from_bytes(bytes);
  ASSERT_TRUE(ort.is_ok()) << ort.status().to_string();
  auto ember = runtime::Session::load_from_bytes(bytes);
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  std::vector<OrtInput> ort_inputs;
  std::vector<runtime::NamedInput> ember_inputs;
  for (const auto& [name, t] : model.inputs) {
    ort_inputs.push_back({name, &t});
    ember_inputs.push_back({name, &t});
  }
  auto want = (*ort)->run(ort_inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = (*ember)->run(ember_inputs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), want->size());
  for (size_t k = 0; k < want->size(); ++k) {
    const Status s = same_bits((*got)[k], (*want)[k]);
    EXPECT_TRUE(s.is_ok()) << "output " << (*ort)->output_names()[k] << ": " << s.to_string();
  }
}

// Hidden sizes of Qwen2.5-0.5B (896) and -1.5B (1536); 15 and 16 around ORT's
// switch to MLAS; tails of 1 and 7 after the blocks of 8; one conversion block
// (2048) plus a tail. Decode (one row) and prompt-like shapes, 18 rows spanning
// two groups of interleaved rows and a remainder.
std::vector<Param> grid() {
  std::vector<Param> out;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {1, 7}, {2, 3}, {2, 9}};
  for (int64_t h : {1, 15, 16, 17, 23, 64, 896, 1536, 2048 + 19}) {
    for (auto [batch, seq] : shapes) {
      for (Values values : {Values::kUniform, Values::kWide}) {
        Param p;
        p.batch = batch;
        p.seq = seq;
        p.hidden = h;
        p.values = values;
        out.push_back(p);
        p.op = Op::kSkip;
        p.bias = seq == 7;
        p.sum_output = !(batch == 1 && seq == 1 && values == Values::kWide);
        out.push_back(p);
      }
    }
  }
  return out;
}

std::vector<Param> special() {
  std::vector<Param> out;
  // Every tail length after MLAS's blocks of 8 (row_ukernels.h: sum_squares_lanes8),
  // 64 rows each: a tail element summed the other way moves ~1 row in 30.
  for (int64_t h : {18, 19, 20, 21, 22, 23, 31}) {
    Param p;
    p.seq = 64;
    p.hidden = h;
    out.push_back(p);
  }
  for (int64_t h : {17, 896}) {
    for (Op op : {Op::kSimplified, Op::kRms23, Op::kSkip}) {
      Param p;
      p.op = op;
      p.seq = 5;
      p.hidden = h;
      p.values = Values::kNonFinite;
      p.bias = op == Op::kSkip;
      out.push_back(p);
      p.values = Values::kUniform;
      if (op == Op::kRms23) out.push_back(p);
      // f16 computes in f32 between conversions, serially, as ORT does; 64
      // rows, so that a 1-ulp f32 difference would show through the rounding.
      p.dtype = DType::kF16;
      p.seq = 64;
      out.push_back(p);
    }
    for (bool sum : {false, true}) {  // Ember's fusion, with and without the sum read elsewhere
      Param a;
      a.op = Op::kAddSimplified;
      a.seq = 9;
      a.hidden = h;
      a.sum_output = sum;
      a.values = Values::kWide;
      out.push_back(a);
    }
    Param b;  // skip [1, S, H] under [2, S, H]
    b.op = Op::kSkip;
    b.batch = 2;
    b.seq = 4;
    b.hidden = h;
    b.skip_broadcast = true;
    out.push_back(b);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, NormOrt, testing::ValuesIn(grid()), param_name);
INSTANTIATE_TEST_SUITE_P(Special, NormOrt, testing::ValuesIn(special()), param_name);

}  // namespace
}  // namespace ember::ortref
