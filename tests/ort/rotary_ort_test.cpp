// RotaryEmbedding (com.microsoft and ONNX opset 23): Ember's output against
// ONNX Runtime's, one single-node model per case, caches as initializers.
// ctest: every ISA level
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/isa.h"
#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

enum class Pos { kOffset, kTable, kNone };

struct Param {
  bool onnx = false;
  int64_t batch = 2, seq = 3, heads = 3, head_size = 64, rot = 64;
  bool interleaved = false, bnsh = false;
  Pos pos = Pos::kTable;
  DType dtype = DType::kF32;
};

std::string describe(const Param& p) {
  const char* pos = p.pos == Pos::kOffset ? "_offset" : p.pos == Pos::kTable ? "_table" : "_nopos";
  return std::string(p.onnx ? "onnx" : "ms") + "_B" + std::to_string(p.batch) + "_S" + std::to_string(p.seq) + "_N" +
         std::to_string(p.heads) + "_H" + std::to_string(p.head_size) + "_rot" + std::to_string(p.rot) +
         (p.interleaved ? "_inter" : "_half") + (p.bnsh ? "_bnsh" : "_bsh") + pos +
         (p.dtype == DType::kF16 ? "_f16" : "");
}

std::string param_name(const testing::TestParamInfo<Param>& info) { return describe(info.param); }
void PrintTo(const Param& p, std::ostream* os) { *os << describe(p); }

constexpr int64_t kMaxPos = 64;

void fill(Tensor& t, const std::vector<float>& v) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kF16) t.data_as<Float16>()[i] = Float16(v[static_cast<size_t>(i)]);
    else t.data_as<float>()[i] = v[static_cast<size_t>(i)];
  }
}

struct Model {
  std::string bytes;
  Tensor x, pos;
};

// Caches from real RoPE angles p * 10000^(-2i / rot), x uniform in [-2, 2].
Model build_model(const Param& p) {
  std::mt19937 rng(static_cast<uint32_t>(p.head_size * 131 + p.rot * 7 + p.seq + p.interleaved * 3 + p.bnsh * 5));
  const int64_t half = p.rot / 2;
  const int64_t cache_rows = p.pos == Pos::kNone ? p.batch * p.seq : kMaxPos;
  std::vector<float> cv, sv;
  for (int64_t r = 0; r < cache_rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(r % kMaxPos) * std::pow(10000.0, -2.0 * i / p.rot);
      cv.push_back(static_cast<float>(std::cos(angle)));
      sv.push_back(static_cast<float>(std::sin(angle)));
    }
  }
  std::vector<int64_t> cache_dims = {kMaxPos, half};
  if (p.pos == Pos::kNone) cache_dims = {p.batch, p.seq, half};
  Tensor cos_t = Tensor::allocate(p.dtype, Shape(std::span<const int64_t>(cache_dims)));
  Tensor sin_t = Tensor::allocate(p.dtype, Shape(std::span<const int64_t>(cache_dims)));
  fill(cos_t, cv);
  fill(sin_t, sv);
  const std::vector<int64_t> x_dims = p.bnsh ? std::vector<int64_t>{p.batch, p.heads, p.seq, p.head_size}
                                             : std::vector<int64_t>{p.batch, p.seq, p.heads * p.head_size};
  Model m{"", Tensor::allocate(p.dtype, Shape(std::span<const int64_t>(x_dims))), Tensor()};
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> xv(static_cast<size_t>(m.x.numel()));
  for (float& v : xv) v = dist(rng);
  fill(m.x, xv);
  if (p.pos == Pos::kOffset) {
    m.pos = Tensor::allocate(DType::kI64, {1});
    m.pos.data_as<int64_t>()[0] = 9;
  } else if (p.pos == Pos::kTable) {
    m.pos = Tensor::allocate(DType::kI64, {p.batch, p.seq});
    std::uniform_int_distribution<int64_t> pd(0, kMaxPos - 1);
    for (int64_t i = 0; i < m.pos.numel(); ++i) m.pos.data_as<int64_t>()[i] = pd(rng);
  }
  ModelBuilder mb(p.onnx ? 23 : 17);
  if (!p.onnx) mb.set_opset("com.microsoft", 1);
  // Ember's loader reads IR versions up to 10; ORT runs opset 23 under IR 10 too.
  mb.set_ir_version(10);
  mb.add_input("x", p.dtype, x_dims);
  if (p.pos != Pos::kNone) {
    mb.add_input("pos", DType::kI64, std::vector<int64_t>(m.pos.shape().begin(), m.pos.shape().end()));
  }
  mb.add_initializer("cos", cos_t);
  mb.add_initializer("sin", sin_t);
  mb.add_output("y", p.dtype, x_dims);
  std::vector<ir::Attribute> attrs = {attr_int("interleaved", p.interleaved)};
  if (!p.bnsh || p.rot != p.head_size) attrs.push_back(attr_int("num_heads", p.heads));
  if (p.rot != p.head_size) attrs.push_back(attr_int("rotary_embedding_dim", p.rot));
  if (p.onnx) {
    std::vector<std::string> inputs = {"x", "cos", "sin"};
    if (p.pos != Pos::kNone) inputs.push_back("pos");
    mb.add_node("RotaryEmbedding", inputs, {"y"}, attrs);
  } else {
    mb.add_node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, attrs, "com.microsoft");
  }
  m.bytes = mb.serialize();
  return m;
}

// Exact (equal values) at every EMBER_ISA level: Ember's microkernels round as
// ORT's MLAS AVX2 kernel does, its interleaved remainder included
// (rotary_ukernels.h), and f16 computes in f32 and rounds once, as ORT does.
// On a CPU without AVX2, ORT's scalar fallback rounds both products (1 ulp
// apart); there the suite allows that ulp.
Tolerance tolerance_for(const Param& p) {
  if (detected_isa() >= Isa::kAvx2) return {0.0, 0.0};
  return p.dtype == DType::kF16 ? Tolerance{0.0, 2e-3} : Tolerance{0.0, 2e-6};
}

class RotaryOrt : public testing::TestWithParam<Param> {};

TEST_P(RotaryOrt, MatchesOnnxRuntime) {
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
  std::vector<OrtInput> ort_inputs = {{"x", &model.x}};
  std::vector<runtime::NamedInput> ember_inputs = {{"x", &model.x}};
  if (p.pos != Pos::kNone) {
    ort_inputs.push_back({"pos", &model.pos});
    ember_inputs.push_back({"pos", &model.pos});
  }
  auto want = (*ort)->run(ort_inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = (*ember)->run(ember_inputs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  const Status s = compare((*got)[0], (*want)[0], tolerance_for(p));
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

std::vector<Param> grid() {
  std::vector<Param> out;
  for (bool onnx : {false, true}) {
    for (int64_t h : {2, 64, 80, 96, 128, 256}) {
      for (int64_t rot : {h, h / 2}) {
        if (rot % 2 != 0) continue;
        for (bool interleaved : {false, true}) {
          for (bool bnsh : {false, true}) {
            for (DType dtype : {DType::kF32, DType::kF16}) {
              Param p;
              p.onnx = onnx;
              p.head_size = h;
              p.rot = rot;
              p.interleaved = interleaved;
              p.bnsh = bnsh;
              p.dtype = dtype;
              out.push_back(p);
            }
          }
        }
      }
    }
  }
  return out;
}

std::vector<Param> positions() {
  std::vector<Param> out;
  for (bool bnsh : {false, true}) {
    Param offset;
    offset.pos = Pos::kOffset;
    offset.bnsh = bnsh;
    out.push_back(offset);
    Param none;
    none.onnx = true;
    none.pos = Pos::kNone;
    none.bnsh = bnsh;
    none.interleaved = bnsh;
    out.push_back(none);
    Param decode;  // one token, Qwen2.5-0.5B heads
    decode.batch = 1;
    decode.seq = 1;
    decode.heads = 14;
    decode.bnsh = bnsh;
    out.push_back(decode);
  }
  return out;
}

// Rotary spans whose pair count leaves remainders of 1-7 pairs after ORT's
// blocks of 8, alone and after whole blocks, in heads wider than the span.
std::vector<Param> remainders() {
  std::vector<Param> out;
  for (int64_t rot : {2, 4, 6, 8, 10, 12, 14, 18, 22, 30, 46}) {
    for (int64_t h : {rot, rot + 6}) {
      for (bool interleaved : {false, true}) {
        for (bool bnsh : {false, true}) {
          Param p;
          p.head_size = h;
          p.rot = rot;
          p.interleaved = interleaved;
          p.bnsh = bnsh;
          p.seq = 4;
          p.heads = 5;
          out.push_back(p);
        }
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, RotaryOrt, testing::ValuesIn(grid()), param_name);
INSTANTIATE_TEST_SUITE_P(Positions, RotaryOrt, testing::ValuesIn(positions()), param_name);
INSTANTIATE_TEST_SUITE_P(Remainders, RotaryOrt, testing::ValuesIn(remainders()), param_name);

}  // namespace
}  // namespace ember::ortref
