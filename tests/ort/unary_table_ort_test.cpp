// Every op row of the unary op table (src/ops/unary_ops.def), generated from
// it: a one-node model per row, at the row's opset, with the row's attributes
// set to its kind's test parameters, over f32 inputs from -12 to 12 plus
// NaN/Inf/0/-0/denormals at lengths around every SIMD width, run by Ember and
// by ONNX Runtime; the outputs must agree within the whole-model f32 tolerance.
// A row added to the table is checked here without touching this file.
// ctest: every ISA level
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compare.h"
#include "kernels/elementwise/unary_ukernels.h"
#include "kernels/registry.h"
#include "model_builder.h"
#include "ort_reference.h"
#include "runtime/session.h"

namespace ember::ortref {
namespace {

struct Row {
  std::string domain;
  std::string op_type;
  int since, until;
  kernels::UnaryKind kind;
  std::string attrs[3];
};

constexpr int kNewest = 0;

std::vector<Row> rows() {
  return {
#define EMBER_UNARY_OP(domain, op_type, since, until, Kind, types, a1, d1, a2, d2, a3, d3) \
  {domain, op_type, since, until == kNewest ? kernels::newest_opset(domain) : until, kernels::UnaryKind::k##Kind, {a1, a2, a3}},
#include "ops/unary_ops.def"
  };
}

kernels::UnaryParams test_params(kernels::UnaryKind kind) {
  static constexpr kernels::UnaryParams kParams[] = {
#define EMBER_UNARY_KIND(Kind, cost, alpha, beta, gamma, ...) {alpha, beta, gamma},
#include "ops/unary_ops.def"
  };
  return kParams[static_cast<int>(kind)];
}

// The default-domain opset a row's model imports: 13 (the opset most exports
// use) clamped into the row's range.
int model_opset(const Row& row) {
  if (!row.domain.empty()) return 13;
  return std::min(row.until, std::max(row.since, 13));
}

Tensor inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-12.0f, 12.0f);
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, 0.5f, -2.5f, 3.0f, -3.0f};
  Tensor t = Tensor::allocate(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = (i % 5 == 3) ? specials[(i / 5) % 11] : d(rng);
  return t;
}

std::string model_of(const Row& row, int64_t n) {
  ModelBuilder b(model_opset(row));
  if (!row.domain.empty()) b.set_opset(row.domain, kernels::newest_opset(row.domain));
  b.add_input("x", DType::kF32, {n});
  b.add_output("y", DType::kF32, {n});
  const kernels::UnaryParams p = test_params(row.kind);
  const float values[3] = {p.alpha, p.beta, p.gamma};
  std::vector<ir::Attribute> attrs;
  for (int i = 0; i < 3; ++i) {
    if (!row.attrs[i].empty()) attrs.push_back(attr_float(row.attrs[i], values[i]));
  }
  b.add_node(row.op_type, {"x"}, {"y"}, attrs, row.domain);
  return b.serialize();
}

TEST(UnaryTableOrt, EveryOpRowAgreesWithOrt) {
  const int64_t lengths[] = {1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000};
  size_t checked = 0;
  for (const Row& row : rows()) {
    SCOPED_TRACE((row.domain.empty() ? "ai.onnx" : row.domain) + "." + row.op_type + " opset " +
                 std::to_string(model_opset(row)));
    for (int64_t n : lengths) {
      const std::string model = model_of(row, n);
      std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(model.data()), model.size());
      auto ort = OrtSession::load_from_bytes(bytes, OrtOptions{1, OrtOptLevel::kBasic});
      ASSERT_TRUE(ort.is_ok()) << ort.status().to_string();
      auto ember = runtime::Session::load_from_bytes(bytes);
      ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
      const Tensor x = inputs(n, static_cast<uint32_t>(n));
      const std::vector<OrtInput> ort_inputs{{"x", &x}};
      const std::vector<runtime::NamedInput> ember_inputs{{"x", &x}};
      auto want = (*ort)->run(ort_inputs);
      auto got = (*ember)->run(ember_inputs);
      ASSERT_TRUE(want.is_ok()) << want.status().to_string();
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      Status s = compare((*got)[0], (*want)[0]);
      EXPECT_TRUE(s.is_ok()) << "length " << n << ": " << s.to_string();
    }
    ++checked;
  }
  EXPECT_EQ(checked, rows().size());
}

}  // namespace
}  // namespace ember::ortref
