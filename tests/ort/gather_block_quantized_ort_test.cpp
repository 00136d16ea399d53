// com.microsoft GatherBlockQuantized: Ember's output against ONNX Runtime's on
// random codes, scales and zero points, one single-node model per case (data,
// scales and zero points as initializers, indices as the input). ORT's CPU
// kernel takes uint8 data only with gather_axis 0 and quantize_axis last, and
// f32/f16 scales; both compute (code - zp) * scale as one f32 product, exact
// for 16-bit scales, so outputs must match exactly.
#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "compare.h"
#include "ir/shape_inference.h"
#include "model_builder.h"
#include "onnx/model_loader.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

struct Param {
  int bits = 4;
  std::vector<int64_t> lead = {40};  // data dims before the last
  int64_t k = 64, block = 32;
  bool zp = false;
  DType scale_dtype = DType::kF32;
  DType index_dtype = DType::kI64;
  std::vector<int64_t> index_dims = {5};
};

std::string describe(const Param& p) {
  std::string lead;
  for (int64_t d : p.lead) lead += std::to_string(d) + "x";
  return "b" + std::to_string(p.bits) + "_" + lead + "K" + std::to_string(p.k) + "_blk" + std::to_string(p.block) +
         (p.zp ? "_zp" : "") + (p.scale_dtype == DType::kF16 ? "_f16" : "_f32") +
         (p.index_dtype == DType::kI32 ? "_i32" : "_i64") + "_idx" + std::to_string(p.index_dims.size()) + "d";
}

std::string param_name(const testing::TestParamInfo<Param>& info) { return describe(info.param); }
void PrintTo(const Param& p, std::ostream* os) { *os << describe(p); }

Shape to_shape(const std::vector<int64_t>& v) { return Shape(v.begin(), v.end()); }

struct Model {
  std::string bytes;
  Tensor indices;
};

// Indices cover both ends of the table and negative values.
Model build_model(const Param& p, std::vector<int64_t> index_values = {}) {
  std::mt19937 rng(static_cast<uint32_t>(p.k * 7919 + p.block * 13 + p.bits + (p.zp ? 1 : 0) + p.lead.size()));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t blocks = (p.k + p.block - 1) / p.block;
  ModelBuilder mb(17);
  mb.set_opset("com.microsoft", 1);
  std::vector<int64_t> dshape = p.lead, sshape = p.lead, zshape = p.lead;
  dshape.push_back(p.k * p.bits / 8);
  sshape.push_back(blocks);
  zshape.push_back((blocks * p.bits + 7) / 8);
  Tensor data = Tensor::allocate(DType::kU8, to_shape(dshape));
  for (int64_t i = 0; i < data.numel(); ++i) data.data_as<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
  mb.add_initializer("data", data);
  Tensor scales = Tensor::allocate(p.scale_dtype, to_shape(sshape));
  for (int64_t i = 0; i < scales.numel(); ++i) {
    if (p.scale_dtype == DType::kF16) scales.data_as<Float16>()[i] = Float16(dist(rng));
    else scales.data_as<float>()[i] = dist(rng);
  }
  mb.add_initializer("scales", scales);
  std::vector<std::string> inputs = {"data", "indices", "scales"};
  if (p.zp) {
    Tensor zp = Tensor::allocate(DType::kU8, to_shape(zshape));
    for (int64_t i = 0; i < zp.numel(); ++i) zp.data_as<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
    mb.add_initializer("zero_points", zp);
    inputs.push_back("zero_points");
  }
  mb.add_input("indices", p.index_dtype, p.index_dims);
  mb.add_output_unshaped("y", p.scale_dtype);
  mb.add_node("GatherBlockQuantized", inputs, {"y"},
              {attr_int("gather_axis", 0), attr_int("quantize_axis", static_cast<int64_t>(p.lead.size())),
               attr_int("block_size", p.block), attr_int("bits", p.bits)},
              "com.microsoft");
  Model m{mb.serialize(), Tensor::allocate(p.index_dtype, to_shape(p.index_dims))};
  const int64_t rows = p.lead[0];
  std::uniform_int_distribution<int64_t> pick(-rows, rows - 1);
  for (int64_t i = 0; i < m.indices.numel(); ++i) {
    int64_t v = i == 0 ? rows - 1 : i == 1 ? -rows : pick(rng);
    if (static_cast<size_t>(i) < index_values.size()) v = index_values[static_cast<size_t>(i)];
    if (p.index_dtype == DType::kI32) m.indices.data_as<int32_t>()[i] = static_cast<int32_t>(v);
    else m.indices.data_as<int64_t>()[i] = v;
  }
  return m;
}

struct Sessions {
  std::unique_ptr<OrtSession> ort;
  std::unique_ptr<runtime::Session> ember;
  std::string inferred_shape;  // the output's shape by Ember's symbolic shape inference
};

Sessions load(const Model& m) {
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(m.bytes.data()), m.bytes.size());
  Sessions s;
  auto ort = OrtSession::load_from_bytes(bytes);
  EXPECT_TRUE(ort.is_ok()) << ort.status().to_string();
  if (ort.is_ok()) s.ort = std::move(*ort);
  auto loaded = ember::onnx::load_model_from_bytes(bytes, "", nullptr);
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  if (!loaded.is_ok()) return s;
  auto values = ir::infer_symbolic_values(*loaded->graph);
  EXPECT_TRUE(values.is_ok()) << values.status().to_string();
  if (values.is_ok()) {
    s.inferred_shape = ir::sym_shape_to_string((*values)[static_cast<size_t>(loaded->graph->outputs[0])].shape);
  }
  auto ember = runtime::Session::create(std::move(loaded->graph));
  EXPECT_TRUE(ember.is_ok()) << ember.status().to_string();
  if (ember.is_ok()) s.ember = std::move(*ember);
  return s;
}

class GatherBlockQuantizedOrt : public testing::TestWithParam<Param> {};

TEST_P(GatherBlockQuantizedOrt, MatchesOnnxRuntimeExactly) {
  const Param& p = GetParam();
  const Model model = build_model(p);
  Sessions s = load(model);
  ASSERT_TRUE(s.ort && s.ember);
  const std::vector<OrtInput> ort_inputs = {{"indices", &model.indices}};
  const std::vector<runtime::NamedInput> ember_inputs = {{"indices", &model.indices}};
  auto want = s.ort->run(ort_inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = s.ember->run(ember_inputs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  const Status st = compare((*got)[0], (*want)[0], Tolerance{0.0, 0.0});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  std::vector<ir::DimExpr> dims;
  for (int64_t d : (*want)[0].shape()) dims.push_back(ir::DimExpr::constant(d));
  EXPECT_EQ(s.inferred_shape, ir::sym_shape_to_string(dims));
}

std::vector<Param> grid() {
  std::vector<Param> out;
  struct Shape {
    std::vector<int64_t> lead;
    int64_t k, block;
  };
  // K=200 with block 16: 13 blocks, an odd count of packed 4-bit zero points;
  // K=1100: a row longer than Ember's 1024-code chunk; K=96 block 64: a partial
  // last block; rank-3 data gathers slabs of 3 rows.
  const Shape shapes[] = {{{40}, 64, 32}, {{40}, 200, 16}, {{7, 3}, 96, 64}, {{16}, 1100, 128}, {{9}, 4096, 256}};
  for (int bits : {2, 4, 8}) {
    for (const Shape& sh : shapes) {
      for (bool zp : {false, true}) {
        for (DType scale : {DType::kF32, DType::kF16}) {
          Param p;
          p.bits = bits;
          p.lead = sh.lead;
          p.k = sh.k;
          p.block = sh.block;
          p.zp = zp;
          p.scale_dtype = scale;
          out.push_back(p);
        }
      }
    }
  }
  Param i32;
  i32.index_dtype = DType::kI32;
  i32.index_dims = {2, 3};
  out.push_back(i32);
  Param tokens;
  tokens.index_dims = {1, 128};
  tokens.lead = {300};
  tokens.k = 896;
  out.push_back(tokens);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, GatherBlockQuantizedOrt, testing::ValuesIn(grid()), param_name);

TEST(GatherBlockQuantizedOrtErrors, BothRejectAnOutOfRangeIndex) {
  Param p;
  const Model model = build_model(p, {3, 40});
  Sessions s = load(model);
  ASSERT_TRUE(s.ort && s.ember);
  const std::vector<OrtInput> ort_inputs = {{"indices", &model.indices}};
  const std::vector<runtime::NamedInput> ember_inputs = {{"indices", &model.indices}};
  EXPECT_FALSE(s.ort->run(ort_inputs).is_ok());
  auto got = s.ember->run(ember_inputs);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().to_string().find("40"), std::string::npos) << got.status().to_string();
}

}  // namespace
}  // namespace ember::ortref
