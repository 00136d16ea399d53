// Elementwise family: unary math and activations, binary arithmetic with
// broadcasting, comparisons/logic, variadic ops, Where and Cast. Expected values
// are hand-written or computed with numpy and pasted.
// ctest: every ISA level
// ctest: emulated CPUs
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "op_test_util.h"

namespace ember {
namespace {

using test::make_tensor;
using test::run_op;
using test::values_of;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

void expect_floats_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0f, std::fabs(want[i]))) << "at " << i;
    }
  }
}

// Runs a one-output op and returns output 0, failing the test on error.
Tensor run1(const std::string& op, std::vector<const Tensor*> inputs, std::vector<ir::Attribute> attrs = {},
            int opset = 17) {
  auto r = run_op(op, std::move(inputs), std::move(attrs), 1, opset);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return Tensor();
  return std::move(r.value()[0]);
}

// ---- binary arithmetic and broadcasting ----

TEST(ElementwiseBinary, AddSameShapeScalarAndSuffix) {
  Tensor a = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make_tensor<float>({2, 3}, {10, 20, 30, 40, 50, 60});
  EXPECT_EQ(values_of<float>(run1("Add", {&a, &b})), (std::vector<float>{11, 22, 33, 44, 55, 66}));
  Tensor s = make_tensor<float>({}, {100});
  EXPECT_EQ(values_of<float>(run1("Add", {&a, &s})), (std::vector<float>{101, 102, 103, 104, 105, 106}));
  EXPECT_EQ(values_of<float>(run1("Add", {&s, &a})), (std::vector<float>{101, 102, 103, 104, 105, 106}));
  Tensor row = make_tensor<float>({1, 3}, {10, 20, 30});
  Tensor out = run1("Sub", {&a, &row});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{-9, -18, -27, -6, -15, -24}));
  EXPECT_EQ(values_of<float>(run1("Sub", {&row, &a})), (std::vector<float>{9, 18, 27, 6, 15, 24}));
}

TEST(ElementwiseBinary, GeneralBroadcastBothSides) {
  Tensor a = make_tensor<float>({2, 1, 3}, {0, 1, 2, 3, 4, 5});
  Tensor b = make_tensor<float>({1, 2, 1}, {10, 20});
  Tensor out = run1("Add", {&a, &b});
  EXPECT_EQ(out.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{10, 11, 12, 20, 21, 22, 13, 14, 15, 23, 24, 25}));
  // A column broadcast ([3,1] against [3,4]) is neither scalar nor suffix.
  Tensor col = make_tensor<int32_t>({3, 1}, {1, 2, 3});
  Tensor m = make_tensor<int32_t>({3, 4}, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  EXPECT_EQ(values_of<int32_t>(run1("Mul", {&m, &col})), (std::vector<int32_t>{1, 1, 1, 1, 4, 4, 4, 4, 9, 9, 9, 9}));
}

TEST(ElementwiseBinary, ZeroSizeAndBadShapes) {
  Tensor a = make_tensor<float>({0, 3}, {});
  Tensor b = make_tensor<float>({3}, {1, 2, 3});
  Tensor out = run1("Mul", {&a, &b});
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
  Tensor c = make_tensor<float>({2}, {1, 2});
  auto r = run_op("Add", {&b, &c});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("cannot be broadcast"), std::string::npos) << r.status().message();
}

TEST(ElementwiseBinary, DtypeErrors) {
  Tensor f = make_tensor<float>({2}, {1, 2});
  Tensor i = make_tensor<int32_t>({2}, {1, 2});
  auto r = run_op("Add", {&f, &i});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("different dtypes"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("test_Add"), std::string::npos) << r.status().message();
  Tensor bools = make_tensor<bool>({2}, {true, false});
  EXPECT_FALSE(run_op("Add", {&bools, &bools}).is_ok());
  EXPECT_FALSE(run_op("Add", {&f}).is_ok());
}

TEST(ElementwiseBinary, IntegerDivisionTruncates) {
  Tensor a = make_tensor<int32_t>({5}, {7, -7, 7, -7, 5});
  Tensor b = make_tensor<int32_t>({5}, {2, 2, -2, -2, 0});
  EXPECT_EQ(values_of<int32_t>(run1("Div", {&a, &b})), (std::vector<int32_t>{3, -3, -3, 3, 0}));
  Tensor u = make_tensor<uint8_t>({2}, {250, 7});
  Tensor v = make_tensor<uint8_t>({2}, {10, 2});
  EXPECT_EQ(values_of<uint8_t>(run1("Div", {&u, &v})), (std::vector<uint8_t>{25, 3}));
  Tensor m = make_tensor<int64_t>({1}, {std::numeric_limits<int64_t>::min()});
  Tensor neg1 = make_tensor<int64_t>({1}, {-1});
  EXPECT_EQ(values_of<int64_t>(run1("Div", {&m, &neg1})), (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
}

TEST(ElementwiseBinary, IntegerArithmeticWraps) {
  Tensor a = make_tensor<uint8_t>({3}, {250, 3, 16});
  Tensor b = make_tensor<uint8_t>({3}, {10, 5, 16});
  EXPECT_EQ(values_of<uint8_t>(run1("Add", {&a, &b})), (std::vector<uint8_t>{4, 8, 32}));
  EXPECT_EQ(values_of<uint8_t>(run1("Sub", {&a, &b})), (std::vector<uint8_t>{240, 254, 0}));
  EXPECT_EQ(values_of<uint8_t>(run1("Mul", {&a, &b})), (std::vector<uint8_t>{196, 15, 0}));
}

TEST(ElementwiseBinary, HalfPrecisionComputesInFloat) {
  Tensor a = make_tensor<Float16>({3}, {Float16(1.0f), Float16(0.5f), Float16(-2.0f)});
  Tensor b = make_tensor<Float16>({1}, {Float16(0.25f)});
  Tensor out = run1("Mul", {&a, &b});
  ASSERT_EQ(out.dtype(), DType::kF16);
  std::vector<float> got;
  for (Float16 h : values_of<Float16>(out)) got.push_back(static_cast<float>(h));
  EXPECT_EQ(got, (std::vector<float>{0.25f, 0.125f, -0.5f}));
}

TEST(ElementwiseBinary, ModSignConventions) {
  Tensor a = make_tensor<int32_t>({6}, {-4, 7, 5, 4, -7, 8});
  Tensor b = make_tensor<int32_t>({6}, {2, -3, 8, -2, 3, 5});
  // numpy.mod and numpy.fmod.
  EXPECT_EQ(values_of<int32_t>(run1("Mod", {&a, &b})), (std::vector<int32_t>{0, -2, 5, 0, 2, 3}));
  EXPECT_EQ(values_of<int32_t>(run1("Mod", {&a, &b}, {test::attr_int("fmod", 1)})),
            (std::vector<int32_t>{0, 1, 5, 0, -1, 3}));
  Tensor fa = make_tensor<float>({2}, {-4.5f, 7.5f});
  Tensor fb = make_tensor<float>({2}, {2.0f, -2.0f});
  expect_floats_near(values_of<float>(run1("Mod", {&fa, &fb}, {test::attr_int("fmod", 1)})), {-0.5f, 1.5f});
  // fmod=0 on floats (opset 24): numpy.mod, with its infinities, zeros and NaNs.
  const float inf = INFINITY;
  Tensor ea = make_tensor<float>({6}, {-4.5f, 7.5f, -1.0f, 1.0f, inf, 3.0f});
  Tensor eb = make_tensor<float>({6}, {2.0f, -2.0f, inf, -inf, 2.0f, 0.0f});
  const std::vector<float> got = values_of<float>(run1("Mod", {&ea, &eb}));
  EXPECT_EQ(got[0], 1.5f);
  EXPECT_EQ(got[1], -0.5f);
  EXPECT_EQ(got[2], inf);
  EXPECT_EQ(got[3], -inf);
  EXPECT_TRUE(std::isnan(got[4]));
  EXPECT_TRUE(std::isnan(got[5]));
}

TEST(ElementwiseBinary, PowMixedDtypes) {
  Tensor fb = make_tensor<float>({3}, {2, 3, 4});
  Tensor ie = make_tensor<int64_t>({3}, {3, -1, 0});
  Tensor out = run1("Pow", {&fb, &ie});
  ASSERT_EQ(out.dtype(), DType::kF32);
  expect_floats_near(values_of<float>(out), {8.0f, 1.0f / 3.0f, 1.0f});
  Tensor ib = make_tensor<int64_t>({3}, {2, 3, 4});
  Tensor fe = make_tensor<float>({3}, {3.0f, 0.5f, 1.5f});
  Tensor out2 = run1("Pow", {&ib, &fe});
  ASSERT_EQ(out2.dtype(), DType::kI64);
  EXPECT_EQ(values_of<int64_t>(out2), (std::vector<int64_t>{8, 1, 8}));
  Tensor big = make_tensor<int64_t>({2}, {3, -2});
  Tensor e = make_tensor<int64_t>({2}, {39, 3});
  EXPECT_EQ(values_of<int64_t>(run1("Pow", {&big, &e})), (std::vector<int64_t>{4052555153018976267LL, -8}));
  Tensor s = make_tensor<float>({}, {2});
  expect_floats_near(values_of<float>(run1("Pow", {&fb, &s})), {4, 9, 16});
}

TEST(ElementwiseBinary, BitShiftAndBitwise) {
  Tensor a = make_tensor<uint8_t>({4}, {16, 4, 1, 255});
  Tensor b = make_tensor<uint8_t>({4}, {1, 2, 7, 8});
  EXPECT_EQ(values_of<uint8_t>(run1("BitShift", {&a, &b}, {test::attr_string("direction", "LEFT")})),
            (std::vector<uint8_t>{32, 16, 128, 0}));
  EXPECT_EQ(values_of<uint8_t>(run1("BitShift", {&a, &b}, {test::attr_string("direction", "RIGHT")})),
            (std::vector<uint8_t>{8, 1, 0, 0}));
  auto r = run_op("BitShift", {&a, &b}, {test::attr_string("direction", "UP")});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("UP"), std::string::npos);
  Tensor x = make_tensor<int32_t>({2}, {12, -1});
  Tensor y = make_tensor<int32_t>({2}, {10, 5});
  EXPECT_EQ(values_of<int32_t>(run1("BitwiseAnd", {&x, &y}, {}, 18)), (std::vector<int32_t>{8, 5}));
  EXPECT_EQ(values_of<int32_t>(run1("BitwiseOr", {&x, &y}, {}, 18)), (std::vector<int32_t>{14, -1}));
  EXPECT_EQ(values_of<int32_t>(run1("BitwiseXor", {&x, &y}, {}, 18)), (std::vector<int32_t>{6, -6}));
  EXPECT_EQ(values_of<int32_t>(run1("BitwiseNot", {&x}, {}, 18)), (std::vector<int32_t>{-13, 0}));
}

TEST(ElementwiseBinary, LegacyBroadcastAxis) {
  Tensor a = make_tensor<float>({2, 3, 2}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  Tensor b = make_tensor<float>({3}, {10, 20, 30});
  Tensor out = run1("Add", {&a, &b}, {test::attr_int("broadcast", 1), test::attr_int("axis", 1)}, 6);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{10, 10, 20, 20, 30, 30, 11, 11, 21, 21, 31, 31}));
  auto r = run_op("Add", {&a, &b}, {}, 1, 6);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("broadcast is 0"), std::string::npos) << r.status().message();
}

TEST(ElementwiseBinary, InPlaceContract) {
  Tensor a = make_tensor<float>({2}, {1, 2});
  ir::Node node;
  node.op_type = "Add";
  node.opset = 17;
  std::vector<DType> dtypes{DType::kF32, DType::kF32};
  std::vector<const Tensor*> constants{nullptr, nullptr};
  auto add = kernels::create_kernel({node, dtypes, constants, nullptr});
  ASSERT_TRUE(add.is_ok());
  EXPECT_EQ(add.value()->inplace_input(), 0);
  node.op_type = "Less";
  auto less = kernels::create_kernel({node, dtypes, constants, nullptr});
  ASSERT_TRUE(less.is_ok());
  EXPECT_EQ(less.value()->inplace_input(), -1);
  // Running with the output aliasing input 0 gives the same result.
  Tensor x = make_tensor<float>({3}, {1, 2, 3});
  Tensor y = make_tensor<float>({1}, {10});
  const Tensor* ins[] = {&x, &y};
  Tensor* outs[] = {&x};
  kernels::KernelContext ctx(ins, outs);
  ASSERT_TRUE(add.value()->run(ctx).is_ok());
  EXPECT_EQ(values_of<float>(x), (std::vector<float>{11, 12, 13}));
}

// ---- comparisons and logic ----

TEST(ElementwiseCompare, ComparisonsGiveBool) {
  Tensor a = make_tensor<float>({4}, {1, 2, kNaN, 4});
  Tensor b = make_tensor<float>({}, {2});
  Tensor lt = run1("Less", {&a, &b});
  ASSERT_EQ(lt.dtype(), DType::kBool);
  EXPECT_EQ(values_of<bool>(lt), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values_of<bool>(run1("GreaterOrEqual", {&a, &b})), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(values_of<bool>(run1("LessOrEqual", {&a, &b})), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(values_of<bool>(run1("Greater", {&a, &b})), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(values_of<bool>(run1("Equal", {&a, &b})), (std::vector<bool>{false, true, false, false}));
  Tensor i = make_tensor<int64_t>({2, 2}, {1, 2, 3, 4});
  Tensor j = make_tensor<int64_t>({2}, {1, 4});
  EXPECT_EQ(values_of<bool>(run1("Equal", {&i, &j})), (std::vector<bool>{true, false, false, true}));
}

TEST(ElementwiseCompare, LogicalOpsBroadcast) {
  Tensor a = make_tensor<bool>({2, 2}, {true, true, false, false});
  Tensor b = make_tensor<bool>({2}, {true, false});
  EXPECT_EQ(values_of<bool>(run1("And", {&a, &b})), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values_of<bool>(run1("Or", {&a, &b})), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(values_of<bool>(run1("Xor", {&a, &b})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values_of<bool>(run1("Not", {&a})), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(values_of<bool>(run1("Equal", {&a, &b})), (std::vector<bool>{true, false, false, true}));
  Tensor f = make_tensor<float>({2}, {1, 0});
  EXPECT_FALSE(run_op("And", {&f, &f}).is_ok());
}

// ---- unary ----

TEST(ElementwiseUnary, RoundingAndSign) {
  Tensor x = make_tensor<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f, kNaN});
  expect_floats_near(values_of<float>(run1("Round", {&x})), {0, 2, 2, -0.0f, -2, 2, -3, kNaN});
  expect_floats_near(values_of<float>(run1("Floor", {&x})), {0, 1, 2, -1, -2, 2, -3, kNaN});
  expect_floats_near(values_of<float>(run1("Ceil", {&x})), {1, 2, 3, -0.0f, -1, 3, -2, kNaN});
  expect_floats_near(values_of<float>(run1("Sign", {&x})), {1, 1, 1, -1, -1, 1, -1, kNaN});
  Tensor i = make_tensor<int8_t>({4}, {-128, -3, 0, 5});
  EXPECT_EQ(values_of<int8_t>(run1("Abs", {&i})), (std::vector<int8_t>{-128, 3, 0, 5}));
  EXPECT_EQ(values_of<int8_t>(run1("Neg", {&i})), (std::vector<int8_t>{-128, 3, 0, -5}));
  EXPECT_EQ(values_of<int8_t>(run1("Sign", {&i})), (std::vector<int8_t>{-1, -1, 0, 1}));
  Tensor u = make_tensor<uint32_t>({2}, {0, 7});
  EXPECT_EQ(values_of<uint32_t>(run1("Abs", {&u})), (std::vector<uint32_t>{0, 7}));
  EXPECT_FALSE(run_op("Neg", {&u}).is_ok());
  EXPECT_FALSE(run_op("Sqrt", {&i}).is_ok());
}

TEST(ElementwiseUnary, MathFunctions) {
  Tensor x = make_tensor<float>({5}, {-1, 0, 1, 100, -100});
  expect_floats_near(values_of<float>(run1("Sigmoid", {&x})), {0.2689414f, 0.5f, 0.7310586f, 1.0f, 0.0f});
  Tensor e = make_tensor<float>({4}, {-1, 0, 0.5f, 2});
  expect_floats_near(values_of<float>(run1("Erf", {&e})), {-0.8427008f, 0.0f, 0.5204999f, 0.9953223f});
  Tensor s = make_tensor<float>({4}, {4, 0, -1, kInf});
  expect_floats_near(values_of<float>(run1("Sqrt", {&s})), {2, 0, kNaN, kInf});
  expect_floats_near(values_of<float>(run1("Reciprocal", {&s})), {0.25f, kInf, -1, 0});
  expect_floats_near(values_of<float>(run1("Log", {&s})), {1.3862944f, -kInf, kNaN, kInf});
  Tensor t = make_tensor<double>({2}, {0.5, -0.25});
  Tensor at = run1("Atanh", {&t});
  ASSERT_EQ(at.dtype(), DType::kF64);
  EXPECT_NEAR(values_of<double>(at)[0], 0.5493061443340549, 1e-15);
  EXPECT_NEAR(values_of<double>(at)[1], -0.25541281188299536, 1e-15);
}

TEST(ElementwiseUnary, Predicates) {
  Tensor x = make_tensor<float>({4}, {kInf, -kInf, kNaN, 1});
  Tensor nan = run1("IsNaN", {&x});
  ASSERT_EQ(nan.dtype(), DType::kBool);
  EXPECT_EQ(values_of<bool>(nan), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(values_of<bool>(run1("IsInf", {&x})), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(values_of<bool>(run1("IsInf", {&x}, {test::attr_int("detect_negative", 0)})),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values_of<bool>(run1("IsInf", {&x}, {test::attr_int("detect_positive", 0)})),
            (std::vector<bool>{false, true, false, false}));
}

TEST(ElementwiseUnary, Activations) {
  Tensor x = make_tensor<float>({7}, {-4, -3, -1, 0, 1, 3, 4});
  expect_floats_near(values_of<float>(run1("Relu", {&x})), {0, 0, 0, 0, 1, 3, 4});
  expect_floats_near(values_of<float>(run1("HardSwish", {&x})), {0, 0, -0.33333331f, 0, 0.6666667f, 3, 4});
  expect_floats_near(values_of<float>(run1("LeakyRelu", {&x}, {test::attr_float("alpha", 0.5f)})),
                     {-2, -1.5f, -0.5f, 0, 1, 3, 4});
  expect_floats_near(values_of<float>(run1("ThresholdedRelu", {&x}, {test::attr_float("alpha", 1.0f)})),
                     {0, 0, 0, 0, 0, 3, 4});
  expect_floats_near(values_of<float>(run1("HardSigmoid", {&x})), {0, 0, 0.3f, 0.5f, 0.7f, 1, 1});
  // numpy: 2 * (exp(x) - 1) for x < 0
  expect_floats_near(values_of<float>(run1("Elu", {&x}, {test::attr_float("alpha", 2.0f)})),
                     {-1.9633687f, -1.9004259f, -1.2642411f, 0, 1, 3, 4});
  expect_floats_near(values_of<float>(run1("Softsign", {&x})), {-0.8f, -0.75f, -0.5f, 0, 0.5f, 0.75f, 0.8f});
  Tensor sp = make_tensor<float>({4}, {-2, 0, 2, 100});
  expect_floats_near(values_of<float>(run1("Softplus", {&sp})), {0.126928f, 0.6931472f, 2.126928f, 100.0f});
  // numpy: x * tanh(log1p(exp(x)))
  expect_floats_near(values_of<float>(run1("Mish", {&sp}, {}, 18)), {-0.25250146f, 0.0f, 1.9439591f, 100.0f});
  expect_floats_near(values_of<float>(run1("Celu", {&sp}, {test::attr_float("alpha", 2.0f)})),
                     {-1.2642411f, 0, 2, 100});
  // Selu defaults: gamma * alpha * (exp(x) - 1) for x <= 0.
  expect_floats_near(values_of<float>(run1("Selu", {&sp})), {-1.5201665f, 0, 2.101402f, 105.0701f}, 1e-5f);
  Tensor ri = make_tensor<int32_t>({3}, {-5, 0, 5});
  EXPECT_EQ(values_of<int32_t>(run1("Relu", {&ri})), (std::vector<int32_t>{0, 0, 5}));
}

TEST(ElementwiseUnary, ZeroSizeAndString) {
  Tensor x = make_tensor<float>({2, 0}, {});
  Tensor out = run1("Exp", {&x});
  EXPECT_EQ(out.shape(), (Shape{2, 0}));
  Tensor s(DType::kString, Shape{1}, nullptr);
  auto r = run_op("Abs", {&s});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotImplemented);
}

TEST(ElementwiseUnary, ClipForms) {
  Tensor x = make_tensor<float>({5}, {-3, -1, 0, 2, kNaN});
  Tensor lo = make_tensor<float>({}, {-1});
  Tensor hi = make_tensor<float>({}, {1});
  expect_floats_near(values_of<float>(run1("Clip", {&x, &lo, &hi})), {-1, -1, 0, 1, kNaN});
  expect_floats_near(values_of<float>(run1("Clip", {&x, nullptr, &hi})), {-3, -1, 0, 1, kNaN});
  expect_floats_near(values_of<float>(run1("Clip", {&x, &lo})), {-1, -1, 0, 2, kNaN});
  expect_floats_near(values_of<float>(run1("Clip", {&x})), {-3, -1, 0, 2, kNaN});
  // min > max: everything becomes max.
  expect_floats_near(values_of<float>(run1("Clip", {&x, &hi, &lo})), {-1, -1, -1, -1, kNaN});
  expect_floats_near(
      values_of<float>(run1("Clip", {&x}, {test::attr_float("min", -2), test::attr_float("max", 0.5f)}, 6)),
                     {-2, -1, 0, 0.5f, kNaN});
  Tensor i = make_tensor<int8_t>({4}, {-128, -5, 5, 127});
  Tensor imax = make_tensor<int8_t>({}, {4});
  EXPECT_EQ(values_of<int8_t>(run1("Clip", {&i, nullptr, &imax})), (std::vector<int8_t>{-128, -5, 4, 4}));
  Tensor two = make_tensor<float>({2}, {0, 1});
  EXPECT_FALSE(run_op("Clip", {&x, &two}).is_ok());
  EXPECT_FALSE(run_op("Clip", {&x, &imax}).is_ok());
}

TEST(ElementwiseUnary, PReluBroadcastsSlope) {
  Tensor x = make_tensor<float>({2, 3}, {-1, -2, 3, -4, 5, -6});
  Tensor slope = make_tensor<float>({3}, {0.5f, 0.25f, 2});
  expect_floats_near(values_of<float>(run1("PRelu", {&x, &slope})), {-0.5f, -0.5f, 3, -2, 5, -12});
  Tensor bad = make_tensor<float>({2, 2, 3}, std::vector<float>(12, 1));
  EXPECT_FALSE(run_op("PRelu", {&x, &bad}).is_ok());
  // Opset 6: a 1-D slope of the channel count applies per channel.
  Tensor nchw = make_tensor<float>({1, 2, 2}, {-1, -1, -1, -1});
  Tensor per_channel = make_tensor<float>({2}, {0.5f, 2});
  expect_floats_near(values_of<float>(run1("PRelu", {&nchw, &per_channel}, {}, 6)), {-0.5f, -0.5f, -2, -2});
}

// ---- variadic ----

TEST(ElementwiseVariadic, ThreeInputsWithBroadcast) {
  Tensor a = make_tensor<float>({2, 2}, {1, 5, 3, kNaN});
  Tensor b = make_tensor<float>({2}, {2, 4});
  Tensor c = make_tensor<float>({}, {3});
  expect_floats_near(values_of<float>(run1("Max", {&a, &b, &c})), {3, 5, 3, kNaN});
  expect_floats_near(values_of<float>(run1("Min", {&a, &b, &c})), {1, 3, 2, kNaN});
  expect_floats_near(values_of<float>(run1("Sum", {&a, &b, &c})), {6, 12, 8, kNaN});
  expect_floats_near(values_of<float>(run1("Mean", {&a, &b, &c})), {2, 4, 8.0f / 3.0f, kNaN});
  Tensor x = make_tensor<int32_t>({3}, {1, -2, 7});
  EXPECT_EQ(values_of<int32_t>(run1("Max", {&x})), (std::vector<int32_t>{1, -2, 7}));
  Tensor y = make_tensor<int32_t>({3}, {2, -4, 0});
  EXPECT_EQ(values_of<int32_t>(run1("Mean", {&x, &y})), (std::vector<int32_t>{1, -3, 3}));
  Tensor d = make_tensor<double>({3}, {1, 2, 3});
  EXPECT_FALSE(run_op("Sum", {&x, &d}).is_ok());
}

TEST(ElementwiseVariadic, SameShapeFastPathAndZeroSize) {
  Tensor a = make_tensor<uint16_t>({3}, {1, 65535, 7});
  Tensor b = make_tensor<uint16_t>({3}, {9, 2, 7});
  EXPECT_EQ(values_of<uint16_t>(run1("Min", {&a, &b})), (std::vector<uint16_t>{1, 2, 7}));
  EXPECT_EQ(values_of<uint16_t>(run1("Sum", {&a, &b})), (std::vector<uint16_t>{10, 1, 14}));
  Tensor z = make_tensor<float>({0}, {});
  Tensor one = make_tensor<float>({1}, {1});
  EXPECT_EQ(run1("Sum", {&z, &one}).shape(), (Shape{0}));
}

// ---- Where ----

TEST(ElementwiseWhere, ThreeWayBroadcast) {
  Tensor cond = make_tensor<bool>({2, 1}, {true, false});
  Tensor x = make_tensor<int64_t>({3}, {1, 2, 3});
  Tensor y = make_tensor<int64_t>({}, {-1});
  Tensor out = run1("Where", {&cond, &x, &y});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  Tensor c2 = make_tensor<bool>({2}, {true, false});
  Tensor bx = make_tensor<bool>({2}, {false, false});
  Tensor by = make_tensor<bool>({2}, {true, true});
  EXPECT_EQ(values_of<bool>(run1("Where", {&c2, &bx, &by})), (std::vector<bool>{false, true}));
  Tensor notbool = make_tensor<int32_t>({2}, {1, 0});
  EXPECT_FALSE(run_op("Where", {&notbool, &bx, &by}).is_ok());
}

// ---- Cast ----

TEST(ElementwiseCast, FloatToHalfRoundsToNearestEven) {
  Tensor x = make_tensor<float>({5}, {1.0009765625f, 65504.0f, 70000.0f, 1e-8f, 0.1f});
  Tensor out = run1("Cast", {&x}, {test::attr_int("to", static_cast<int64_t>(DType::kF16))});
  ASSERT_EQ(out.dtype(), DType::kF16);
  std::vector<uint16_t> bits;
  for (Float16 h : values_of<Float16>(out)) bits.push_back(h.bits);
  // numpy: np.float16(x).view(np.uint16)
  EXPECT_EQ(bits, (std::vector<uint16_t>{15361, 31743, 31744, 0, 11878}));
  // 1 + 2^-11 + 2^-40 rounds up in f16 from double, but would tie-to-even down via float.
  Tensor d = make_tensor<double>({1}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  Tensor h = run1("Cast", {&d}, {test::attr_int("to", static_cast<int64_t>(DType::kF16))});
  EXPECT_EQ(values_of<Float16>(h)[0].bits, 15361);
}

TEST(ElementwiseCast, IntegerAndBoolConversions) {
  Tensor x = make_tensor<float>({5}, {1.9f, -1.9f, 0.0f, kNaN, 300.0f});
  EXPECT_EQ(values_of<int32_t>(run1("Cast", {&x}, {test::attr_int("to", 6)})),
            (std::vector<int32_t>{1, -1, 0, 0, 300}));
  EXPECT_EQ(values_of<bool>(run1("Cast", {&x}, {test::attr_int("to", 9)})),
            (std::vector<bool>{true, true, false, true, true}));
  Tensor i = make_tensor<int64_t>({3}, {-1, 256, 255});
  EXPECT_EQ(values_of<uint8_t>(run1("Cast", {&i}, {test::attr_int("to", 2)})), (std::vector<uint8_t>{255, 0, 255}));
  Tensor b = make_tensor<bool>({2}, {true, false});
  EXPECT_EQ(values_of<double>(run1("Cast", {&b}, {test::attr_int("to", 11)})), (std::vector<double>{1.0, 0.0}));
  Tensor bf = run1("Cast", {&x}, {test::attr_int("to", 16)});
  EXPECT_EQ(static_cast<float>(values_of<BFloat16>(bf)[2]), 0.0f);
  EXPECT_EQ(static_cast<float>(values_of<BFloat16>(bf)[4]), 300.0f);
}

TEST(ElementwiseCast, CastLikeAndLegacyAndErrors) {
  Tensor x = make_tensor<double>({2}, {1.5, -2.5});
  Tensor like = make_tensor<int16_t>({1}, {0});
  Tensor out = run1("CastLike", {&x, &like});
  ASSERT_EQ(out.dtype(), DType::kI16);
  EXPECT_EQ(values_of<int16_t>(out), (std::vector<int16_t>{1, -2}));
  Tensor f = run1("Cast", {&x}, {test::attr_string("to", "FLOAT")}, 1);
  EXPECT_EQ(values_of<float>(f), (std::vector<float>{1.5f, -2.5f}));
  auto complex = run_op("Cast", {&x}, {test::attr_int("to", 14)});  // COMPLEX64
  ASSERT_FALSE(complex.is_ok());
  EXPECT_EQ(complex.status().code(), StatusCode::kNotImplemented);
  auto round_mode = run_op("Cast", {&x}, {test::attr_int("to", 24), test::attr_string("round_mode", "odd")});
  ASSERT_FALSE(round_mode.is_ok());
  EXPECT_EQ(round_mode.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(run_op("Cast", {&x}).is_ok());
  EXPECT_FALSE(run_op("Cast", {&x}, {test::attr_string("to", "COMPLEX")}, 1).is_ok());
}

}  // namespace
}  // namespace ember
