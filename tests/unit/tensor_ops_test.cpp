// Shape and data-movement ops (kernels/tensor/). Expected values were computed
// with numpy and pasted, or come from an index formula written in the test.
// ctest: every ISA level
// ctest: emulated CPUs
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>

#include "unit/op_test_util.h"

namespace ember {
// Readable gtest messages for shapes.
void PrintTo(const Shape& s, std::ostream* os) { *os << shape_to_string(s); }
}  // namespace ember

namespace ember::test {
namespace {

using kernels::create_kernel;
using kernels::KernelInit;

Tensor i64s(std::vector<int64_t> v) {
  auto n = static_cast<int64_t>(v.size());
  return make_tensor<int64_t>({n}, std::move(v));
}
Tensor i64_scalar(int64_t v) { return make_tensor<int64_t>({}, {v}); }

std::vector<float> iota_f(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

// Runs an op expected to succeed and returns output `k`.
Tensor run1(const std::string& op, std::vector<const Tensor*> inputs, std::vector<ir::Attribute> attrs = {},
            int opset = 17, size_t num_outputs = 1, size_t k = 0) {
  auto r = run_op(op, std::move(inputs), std::move(attrs), num_outputs, opset);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return Tensor();
  return std::move(r.value()[k]);
}

// Expects the op to fail with a message containing `fragment`.
void expect_error(const std::string& op, std::vector<const Tensor*> inputs, std::vector<ir::Attribute> attrs,
                  const std::string& fragment, int opset = 17, size_t num_outputs = 1) {
  auto r = run_op(op, std::move(inputs), std::move(attrs), num_outputs, opset);
  ASSERT_FALSE(r.is_ok()) << op << " unexpectedly succeeded";
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

// Builds the kernel for a node with the given input dtypes (no constants).
std::unique_ptr<kernels::OpKernel> build(const std::string& op, std::vector<DType> dtypes,
                                         std::vector<ir::Attribute> attrs = {}, int opset = 17) {
  ir::Node node;
  node.name = "n";
  node.op_type = op;
  node.opset = opset;
  node.attributes = std::move(attrs);
  std::vector<const Tensor*> constants(dtypes.size(), nullptr);
  KernelInit init{node, dtypes, constants, nullptr};
  auto k = create_kernel(init);
  EXPECT_TRUE(k.is_ok()) << k.status().to_string();
  return k.is_ok() ? std::move(k.value()) : nullptr;
}

TEST(Shape, StartEndClampAndNegative) {
  Tensor x = Tensor::allocate(DType::kF32, {2, 3, 4, 5});
  EXPECT_EQ(values_of<int64_t>(run1("Shape", {&x})), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(values_of<int64_t>(run1("Shape", {&x}, {attr_int("start", 1), attr_int("end", -1)}, 15)),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values_of<int64_t>(run1("Shape", {&x}, {attr_int("start", -10), attr_int("end", 10)}, 15)),
            (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(run1("Shape", {&x}, {attr_int("start", 3), attr_int("end", 1)}, 15).numel(), 0);
  // Before opset 15 start/end do not exist.
  EXPECT_EQ(run1("Shape", {&x}, {attr_int("start", 2)}, 13).numel(), 4);
}

TEST(Shape, NeedsNoInputData) {
  auto k = build("Shape", {DType::kF32});
  ASSERT_TRUE(k);
  EXPECT_FALSE(k->reads_input_data());
  Tensor x(DType::kF32, {7, 0, 3}, nullptr);
  Tensor out = Tensor::allocate(DType::kI64, {3});
  const Tensor* ins[] = {&x};
  Tensor* outs[] = {&out};
  kernels::KernelContext ctx(ins, outs);
  ASSERT_TRUE(k->infer(ctx).is_ok());
  ASSERT_TRUE(k->run(ctx).is_ok());
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{7, 0, 3}));
}

TEST(Size, CountsElements) {
  Tensor x = Tensor::allocate(DType::kU8, {3, 0, 2});
  Tensor s = run1("Size", {&x});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(values_of<int64_t>(s), (std::vector<int64_t>{0}));
  Tensor y = Tensor::allocate(DType::kF16, {3, 5});
  EXPECT_EQ(values_of<int64_t>(run1("Size", {&y})), (std::vector<int64_t>{15}));
}

TEST(Reshape, ZeroCopiesDimAndMinusOneInfers) {
  Tensor x = make_tensor<float>({2, 3, 4}, iota_f(24));
  Tensor shape = i64s({0, -1, 2});
  Tensor y = run1("Reshape", {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(values_of<float>(y), iota_f(24));
  Tensor opset1 = run1("Reshape", {&x}, {attr_ints("shape", {4, -1})}, 1);
  EXPECT_EQ(opset1.shape(), (Shape{4, 6}));
}

TEST(Reshape, AllowZeroKeepsZero) {
  Tensor x = Tensor::allocate(DType::kF32, {0, 3, 4});
  Tensor shape = i64s({3, 4, 0});
  EXPECT_EQ(run1("Reshape", {&x, &shape}, {attr_int("allowzero", 1)}, 14).shape(), (Shape{3, 4, 0}));
  // Without allowzero the 0 copies input dim 2 (4), and 3*4*4 != 0 elements.
  expect_error("Reshape", {&x, &shape}, {}, "element counts differ", 14);
}

TEST(Reshape, BadShapes) {
  Tensor x = Tensor::allocate(DType::kF32, {2, 3});
  Tensor two_inferred = i64s({-1, -1});
  expect_error("Reshape", {&x, &two_inferred}, {}, "more than one -1");
  Tensor bad = i64s({4, -1});
  expect_error("Reshape", {&x, &bad}, {}, "cannot infer");
  Tensor neg = i64s({-2, 3});
  expect_error("Reshape", {&x, &neg}, {}, "invalid dim -2");
  Tensor too_long = i64s({0, 0, 0});
  expect_error("Reshape", {&x, &too_long}, {}, "copies dim 2");
  Tensor str(DType::kString, {1}, nullptr);
  expect_error("Reshape", {&str, &too_long}, {}, "is a string tensor, which this op does not support");
}

TEST(Reshape, ViewsAndNeedsShapeValue) {
  auto k = build("Reshape", {DType::kF32, DType::kI64});
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->is_view());
  Tensor x(DType::kF32, {2, 3}, nullptr);
  Tensor shape(DType::kI64, {2}, nullptr);
  Tensor out;
  const Tensor* ins[] = {&x, &shape};
  Tensor* outs[] = {&out};
  kernels::KernelContext ctx(ins, outs);
  Status s = k->infer(ctx);
  EXPECT_TRUE(kernels::is_needs_value(s)) << s.to_string();
  // run() still copies when a view is not possible.
  Tensor data = make_tensor<float>({2, 3}, iota_f(6));
  Tensor shape_val = i64s({3, 2});
  Tensor out_buf = Tensor::allocate(DType::kF32, {3, 2});
  const Tensor* run_ins[] = {&data, &shape_val};
  Tensor* run_outs[] = {&out_buf};
  kernels::KernelContext run_ctx(run_ins, run_outs);
  ASSERT_TRUE(k->run(run_ctx).is_ok());
  EXPECT_EQ(values_of<float>(out_buf), iota_f(6));
}

TEST(Flatten, AxisRangeAndNegative) {
  Tensor x = Tensor::allocate(DType::kF32, {2, 3, 4, 5});
  EXPECT_EQ(run1("Flatten", {&x}, {attr_int("axis", 0)}).shape(), (Shape{1, 120}));
  EXPECT_EQ(run1("Flatten", {&x}).shape(), (Shape{2, 60}));
  EXPECT_EQ(run1("Flatten", {&x}, {attr_int("axis", 4)}).shape(), (Shape{120, 1}));
  EXPECT_EQ(run1("Flatten", {&x}, {attr_int("axis", -3)}).shape(), (Shape{2, 60}));
  EXPECT_EQ(run1("Flatten", {&x}, {attr_int("axis", -4)}).shape(), (Shape{1, 120}));
  expect_error("Flatten", {&x}, {attr_int("axis", 5)}, "out of range");
  EXPECT_TRUE(build("Flatten", {DType::kF32})->is_view());
}

TEST(Squeeze, AttributeAndInputForms) {
  Tensor x = make_tensor<float>({1, 3, 1, 2}, iota_f(6));
  EXPECT_EQ(run1("Squeeze", {&x}, {attr_ints("axes", {0, -2})}, 11).shape(), (Shape{3, 2}));
  Tensor axes = i64s({-4});
  Tensor y = run1("Squeeze", {&x, &axes}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(values_of<float>(y), iota_f(6));
  EXPECT_EQ(run1("Squeeze", {&x}, {}, 13).shape(), (Shape{3, 2}));
  Tensor bad = i64s({1});
  expect_error("Squeeze", {&x, &bad}, {}, "its size is not 1", 13);
  Tensor dup = i64s({0, -4});
  expect_error("Squeeze", {&x, &dup}, {}, "repeats axis", 13);
  EXPECT_TRUE(build("Squeeze", {DType::kF32})->is_view());
}

TEST(Unsqueeze, NegativeAndUnsortedAxes) {
  Tensor x = make_tensor<int32_t>({3, 4}, std::vector<int32_t>(12, 7));
  EXPECT_EQ(run1("Unsqueeze", {&x}, {attr_ints("axes", {2})}, 11).shape(), (Shape{3, 4, 1}));
  Tensor axes = i64s({-1, 0, 2});
  EXPECT_EQ(run1("Unsqueeze", {&x, &axes}, {}, 13).shape(), (Shape{1, 3, 1, 4, 1}));
  Tensor scalar = make_tensor<float>({}, {2.5f});
  Tensor zero = i64s({0});
  Tensor y = run1("Unsqueeze", {&scalar, &zero}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{1}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{2.5f}));
  Tensor out_of_range = i64s({3});
  expect_error("Unsqueeze", {&x, &out_of_range}, {}, "out of range", 13);
  expect_error("Unsqueeze", {&x}, {}, "attribute 'axes' is required", 11);
}

TEST(Identity, CopiesAnyDtype) {
  Tensor b = make_tensor<bool>({3}, {true, false, true});
  EXPECT_EQ(values_of<bool>(run1("Identity", {&b})), (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(build("Identity", {DType::kF32})->is_view());
}

TEST(Transpose, PermutationsOf3D) {
  Tensor x = make_tensor<float>({2, 3, 4}, iota_f(24));
  Tensor y = run1("Transpose", {&x}, {attr_ints("perm", {1, 2, 0})});
  EXPECT_EQ(y.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8,
                                                     20, 9, 21, 10, 22, 11, 23}));
  EXPECT_EQ(values_of<float>(run1("Transpose", {&x}, {attr_ints("perm", {0, 2, 1})})),
            (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 16, 20, 13, 17, 21, 14, 18, 22, 15, 19, 23}));
  Tensor d = run1("Transpose", {&x});
  EXPECT_EQ(d.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(values_of<float>(d), (std::vector<float>{0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22,
                                                     3, 15, 7, 19, 11, 23}));
}

// Sizes around the 32-wide tile, for every element width, batched.
TEST(Transpose, TiledInnerSwapAllWidths) {
  for (int64_t rows : {1, 31, 33, 70}) {
    for (int64_t cols : {1, 32, 45}) {
      const int64_t batch = 3;
      Tensor x = Tensor::allocate(DType::kI64, {batch, rows, cols});
      Tensor x16 = Tensor::allocate(DType::kF16, {batch, rows, cols});
      Tensor x8 = Tensor::allocate(DType::kU8, {batch, rows, cols});
      for (int64_t i = 0; i < x.numel(); ++i) {
        x.data_as<int64_t>()[i] = i * 7 + 1;
        x16.data_as<Float16>()[i] = Float16(static_cast<float>(i % 1000));
        x8.data_as<uint8_t>()[i] = static_cast<uint8_t>(i % 251);
      }
      Tensor y = run1("Transpose", {&x}, {attr_ints("perm", {0, 2, 1})});
      Tensor y16 = run1("Transpose", {&x16}, {attr_ints("perm", {0, 2, 1})});
      Tensor y8 = run1("Transpose", {&x8}, {attr_ints("perm", {0, 2, 1})});
      ASSERT_EQ(y.shape(), (Shape{batch, cols, rows}));
      bool ok = true;
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t c = 0; c < cols; ++c) {
          for (int64_t r = 0; r < rows; ++r) {
            int64_t src = (b * rows + r) * cols + c;
            int64_t dst = (b * cols + c) * rows + r;
            ok &= y.data_as<int64_t>()[dst] == x.data_as<int64_t>()[src];
            ok &= y16.data_as<Float16>()[dst].bits == x16.data_as<Float16>()[src].bits;
            ok &= y8.data_as<uint8_t>()[dst] == x8.data_as<uint8_t>()[src];
          }
        }
      }
      EXPECT_TRUE(ok) << rows << "x" << cols;
    }
  }
}

TEST(Transpose, ZeroSizeAndBadPerm) {
  Tensor x = Tensor::allocate(DType::kF32, {2, 0, 3});
  EXPECT_EQ(run1("Transpose", {&x}, {attr_ints("perm", {2, 0, 1})}).shape(), (Shape{3, 2, 0}));
  expect_error("Transpose", {&x}, {attr_ints("perm", {0, 0, 1})}, "not a permutation");
  expect_error("Transpose", {&x}, {attr_ints("perm", {1, 0})}, "has rank 3");
}

TEST(Concat, NegativeAxisAndZeroSizeInput) {
  Tensor a = make_tensor<float>({2, 2}, {1, 2, 3, 4});
  Tensor b = make_tensor<float>({2, 1}, {5, 6});
  Tensor empty = Tensor::allocate(DType::kF32, {2, 0});
  Tensor y = run1("Concat", {&a, &empty, &b}, {attr_int("axis", -1)});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  Tensor c = make_tensor<float>({1, 2}, {7, 8});
  EXPECT_EQ(values_of<float>(run1("Concat", {&a, &c}, {attr_int("axis", 0)})),
            (std::vector<float>{1, 2, 3, 4, 7, 8}));
  expect_error("Concat", {&a, &c}, {attr_int("axis", 1)}, "does not match input 0");
  expect_error("Concat", {&a, &b}, {}, "required attribute 'axis'");
  Tensor i = make_tensor<int32_t>({2, 1}, {1, 2});
  expect_error("Concat", {&a, &i}, {attr_int("axis", 1)}, "input 1 is int32");
}

TEST(Split, EqualVariableAndUneven) {
  Tensor x = make_tensor<float>({2, 6}, iota_f(12));
  auto eq = run_op("Split", {&x}, {attr_int("axis", 1)}, 3, 13);
  ASSERT_TRUE(eq.is_ok()) << eq.status().to_string();
  EXPECT_EQ(values_of<float>(eq.value()[1]), (std::vector<float>{2, 3, 8, 9}));
  Tensor sizes = i64s({1, 0, 5});
  auto var = run_op("Split", {&x, &sizes}, {attr_int("axis", -1)}, 3, 13);
  ASSERT_TRUE(var.is_ok()) << var.status().to_string();
  EXPECT_EQ(var.value()[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(values_of<float>(var.value()[2]), (std::vector<float>{1, 2, 3, 4, 5, 7, 8, 9, 10, 11}));
  auto attr = run_op("Split", {&x}, {attr_int("axis", 1), attr_ints("split", {4, 2})}, 2, 11);
  ASSERT_TRUE(attr.is_ok()) << attr.status().to_string();
  EXPECT_EQ(values_of<float>(attr.value()[1]), (std::vector<float>{4, 5, 10, 11}));
  // Opset 18: 5 into 2 parts is ceil(5/2) = 3 then 2.
  Tensor v = make_tensor<float>({5}, iota_f(5));
  auto uneven = run_op("Split", {&v}, {attr_int("num_outputs", 2)}, 2, 18);
  ASSERT_TRUE(uneven.is_ok()) << uneven.status().to_string();
  EXPECT_EQ(values_of<float>(uneven.value()[0]), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(values_of<float>(uneven.value()[1]), (std::vector<float>{3, 4}));
}

TEST(Split, BadSizes) {
  Tensor x = make_tensor<float>({6}, iota_f(6));
  Tensor sizes = i64s({2, 2});
  expect_error("Split", {&x, &sizes}, {}, "sum to 4", 13, 2);
  expect_error("Split", {&x, &sizes}, {}, "2 entries for 3 outputs", 13, 3);
  expect_error("Split", {&x}, {attr_int("num_outputs", 3)}, "num_outputs is 3", 18, 2);
  expect_error("Split", {&x}, {attr_int("axis", 1)}, "out of range", 13, 2);
}

TEST(Slice, InputsWithNegativeStepsAndClamping) {
  Tensor x = make_tensor<float>({3, 4}, iota_f(12));
  Tensor starts = i64s({2, -1});
  Tensor ends = i64s({0, std::numeric_limits<int64_t>::min()});
  Tensor axes = i64s({0, -1});
  Tensor steps = i64s({-1, -2});
  Tensor y = run1("Slice", {&x, &starts, &ends, &axes, &steps}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{11, 9, 7, 5}));
  Tensor s2 = i64s({-2, 1});
  Tensor e2 = i64s({100, 3});
  EXPECT_EQ(values_of<float>(run1("Slice", {&x, &s2, &e2}, {}, 13)), (std::vector<float>{5, 6, 9, 10}));
  Tensor s3 = i64s({1});
  Tensor e3 = i64s({std::numeric_limits<int64_t>::max()});
  Tensor ax3 = i64s({1});
  EXPECT_EQ(run1("Slice", {&x, &s3, &e3, &ax3}, {}, 13).shape(), (Shape{3, 3}));
  Tensor last = i64s({-1});
  Tensor before_first = i64s({std::numeric_limits<int64_t>::min()});
  Tensor back = i64s({-1});
  EXPECT_EQ(values_of<float>(run1("Slice", {&x, &last, &before_first, &ax3, &back}, {}, 13)),
            (std::vector<float>{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}));
  Tensor empty_start = i64s({10});
  EXPECT_EQ(run1("Slice", {&x, &empty_start, &e3, &ax3}, {}, 13).shape(), (Shape{3, 0}));
}

TEST(Slice, AttributeFormAndErrors) {
  Tensor x = make_tensor<float>({3, 4}, iota_f(12));
  Tensor y = run1("Slice", {&x}, {attr_ints("starts", {1}), attr_ints("ends", {3}), attr_ints("axes", {1})}, 9);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  Tensor starts = i64s({0});
  Tensor ends = i64s({2});
  Tensor axes = i64s({0});
  Tensor zero_step = i64s({0});
  expect_error("Slice", {&x, &starts, &ends, &axes, &zero_step}, {}, "contains 0", 13);
  Tensor long_ends = i64s({2, 2});
  expect_error("Slice", {&x, &starts, &long_ends}, {}, "same length", 13);
  Tensor dup_axes = i64s({0, -2});
  expect_error("Slice", {&x, &long_ends, &long_ends, &dup_axes}, {}, "repeats axis", 13);
}

TEST(Expand, Bidirectional) {
  Tensor x = make_tensor<int64_t>({3, 1}, {0, 1, 2});
  Tensor shape = i64s({2, 1, 4});
  Tensor y = run1("Expand", {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                                         0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
  Tensor smaller = i64s({1});
  EXPECT_EQ(run1("Expand", {&x, &smaller}).shape(), (Shape{3, 1}));
  Tensor zero = i64s({3, 0});
  EXPECT_EQ(run1("Expand", {&x, &zero}).shape(), (Shape{3, 0}));
  Tensor bad = i64s({2, 2});
  expect_error("Expand", {&x, &bad}, {}, "cannot be expanded");
}

TEST(Tile, RepeatsAndZero) {
  Tensor x = make_tensor<int32_t>({2, 2}, {1, 2, 3, 4});
  Tensor reps = i64s({2, 3});
  Tensor y = run1("Tile", {&x, &reps});
  EXPECT_EQ(y.shape(), (Shape{4, 6}));
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
                                                         1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  Tensor zero = i64s({0, 2});
  EXPECT_EQ(run1("Tile", {&x, &zero}).shape(), (Shape{0, 4}));
  Tensor short_reps = i64s({2});
  expect_error("Tile", {&x, &short_reps}, {}, "one entry per dim");
}

TEST(Pad, Modes) {
  Tensor x = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor reflect_pads = i64s({1, 2, 1, 2});
  EXPECT_EQ(values_of<float>(run1("Pad", {&x, &reflect_pads}, {attr_string("mode", "reflect")}, 13)),
            (std::vector<float>{6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1}));
  Tensor edge_pads = i64s({0, 1, 1, 2});
  EXPECT_EQ(values_of<float>(run1("Pad", {&x, &edge_pads}, {attr_string("mode", "edge")}, 13)),
            (std::vector<float>{1, 1, 2, 3, 3, 3, 4, 4, 5, 6, 6, 6, 4, 4, 5, 6, 6, 6}));
  Tensor wrap_pads = i64s({1, 2, 0, 4});
  EXPECT_EQ(values_of<float>(run1("Pad", {&x, &wrap_pads}, {attr_string("mode", "wrap")}, 19)),
            (std::vector<float>{5, 6, 4, 5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4, 5, 6, 4}));
}

TEST(Pad, ConstantValueCropAxesAndAttributeForm) {
  Tensor x = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor crop = i64s({1, -1, 0, 0});
  Tensor nine = make_tensor<float>({}, {9});
  Tensor y = run1("Pad", {&x, &crop, &nine}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{9, 9, 2, 3, 5, 6}));
  Tensor axis_pads = i64s({1, 2});
  Tensor axes = i64s({-1});
  Tensor z = run1("Pad", {&x, &axis_pads, nullptr, &axes}, {}, 18);
  EXPECT_EQ(values_of<float>(z), (std::vector<float>{0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0}));
  Tensor v1 = run1("Pad", {&x}, {attr_ints("pads", {0, 1, 0, 0}), attr_float("value", -1.5f)}, 2);
  EXPECT_EQ(values_of<float>(v1), (std::vector<float>{-1.5f, 1, 2, 3, -1.5f, 4, 5, 6}));
  Tensor h = make_tensor<Float16>({2}, {Float16(1.0f), Float16(2.0f)});
  Tensor hv = run1("Pad", {&h}, {attr_ints("pads", {1, 1}), attr_float("value", 0.5f)}, 2);
  EXPECT_EQ(static_cast<float>(hv.data_as<Float16>()[0]), 0.5f);
  EXPECT_EQ(static_cast<float>(hv.data_as<Float16>()[2]), 2.0f);
}

TEST(Pad, Errors) {
  Tensor x = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor pads = i64s({0, 0, 0});
  expect_error("Pad", {&x, &pads}, {}, "must have 4 entries", 13);
  Tensor too_negative = i64s({-2, 0, -1, 0});
  expect_error("Pad", {&x, &too_negative}, {}, "negative size", 13);
  expect_error("Pad", {&x, &pads}, {attr_string("mode", "mirror")}, "mode 'mirror'", 13);
  Tensor empty = Tensor::allocate(DType::kF32, {0, 2});
  Tensor grow = i64s({1, 0, 0, 0});
  expect_error("Pad", {&empty, &grow}, {attr_string("mode", "edge")}, "it is empty", 13);
  EXPECT_EQ(run1("Pad", {&empty, &grow}, {}, 13).shape(), (Shape{1, 2}));
}

TEST(Range, FloatIntAndEmpty) {
  Tensor fs = make_tensor<float>({}, {0.5f});
  Tensor fl = make_tensor<float>({}, {2.0f});
  Tensor fd = make_tensor<float>({}, {0.25f});
  EXPECT_EQ(values_of<float>(run1("Range", {&fs, &fl, &fd}, {}, 11)),
            (std::vector<float>{0.5, 0.75, 1.0, 1.25, 1.5, 1.75}));
  Tensor is = make_tensor<int32_t>({}, {10});
  Tensor il = make_tensor<int32_t>({}, {1});
  Tensor id = make_tensor<int32_t>({}, {-3});
  EXPECT_EQ(values_of<int32_t>(run1("Range", {&is, &il, &id}, {}, 11)), (std::vector<int32_t>{10, 7, 4}));
  EXPECT_EQ(run1("Range", {&il, &is, &id}, {}, 11).numel(), 0);
  Tensor zero = make_tensor<int32_t>({}, {0});
  expect_error("Range", {&is, &il, &zero}, {}, "delta must not be 0", 11);
  Tensor inf = make_tensor<float>({}, {INFINITY});
  expect_error("Range", {&fs, &inf, &fd}, {}, "must be finite", 11);
  Tensor i64 = make_tensor<int64_t>({}, {1});
  expect_error("Range", {&is, &i64, &id}, {}, "share a dtype", 11);
}

TEST(ConstantOfShape, DefaultValueAndZeroSize) {
  Tensor shape = i64s({2, 3});
  Tensor y = run1("ConstantOfShape", {&shape}, {}, 9);
  EXPECT_EQ(y.dtype(), DType::kF32);
  EXPECT_EQ(values_of<float>(y), std::vector<float>(6, 0.0f));
  Tensor v = make_tensor<int32_t>({1}, {-7});
  Tensor z = run1("ConstantOfShape", {&shape}, {attr_tensor("value", v)}, 9);
  EXPECT_EQ(values_of<int32_t>(z), std::vector<int32_t>(6, -7));
  Tensor zero = i64s({0});
  EXPECT_EQ(run1("ConstantOfShape", {&zero}, {attr_tensor("value", v)}, 9).numel(), 0);
  Tensor neg = i64s({-1});
  expect_error("ConstantOfShape", {&neg}, {}, "negative dim", 9);
  Tensor two = make_tensor<float>({2}, {1, 2});
  expect_error("ConstantOfShape", {&shape}, {attr_tensor("value", two)}, "one element", 9);
}

TEST(EyeLike, OffsetsAndDtype) {
  Tensor x = Tensor::allocate(DType::kI32, {3, 4});
  Tensor y = run1("EyeLike", {&x}, {attr_int("k", 1), attr_int("dtype", 1)}, 9);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  Tensor tall = Tensor::allocate(DType::kF64, {3, 2});
  EXPECT_EQ(values_of<double>(run1("EyeLike", {&tall}, {attr_int("k", -1)}, 9)),
            (std::vector<double>{0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(values_of<double>(run1("EyeLike", {&tall}, {attr_int("k", 5)}, 9)), std::vector<double>(6, 0.0));
  Tensor v = Tensor::allocate(DType::kF32, {3});
  expect_error("EyeLike", {&v}, {}, "must be 2-D", 9);
}

TEST(Trilu, UpperLowerAndBatches) {
  std::vector<int64_t> m = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  Tensor x = make_tensor<int64_t>({3, 4}, m);
  Tensor one = i64_scalar(1);
  EXPECT_EQ(values_of<int64_t>(run1("Trilu", {&x, &one}, {}, 14)),
            (std::vector<int64_t>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}));
  Tensor minus_one = i64_scalar(-1);
  EXPECT_EQ(values_of<int64_t>(run1("Trilu", {&x, &minus_one}, {attr_int("upper", 0)}, 14)),
            (std::vector<int64_t>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  std::vector<int64_t> two(m);
  two.insert(two.end(), m.begin(), m.end());
  Tensor batch = make_tensor<int64_t>({2, 3, 4}, two);
  Tensor b = run1("Trilu", {&batch, &one}, {}, 14);
  EXPECT_EQ(values_of<int64_t>(b)[12 + 6], 7);
  EXPECT_EQ(values_of<int64_t>(b)[12 + 5], 0);
  Tensor huge = i64_scalar(std::numeric_limits<int64_t>::min());
  EXPECT_EQ(values_of<int64_t>(run1("Trilu", {&x, &huge}, {}, 14)), m);
  EXPECT_EQ(values_of<int64_t>(run1("Trilu", {&x, &huge}, {attr_int("upper", 0)}, 14)), std::vector<int64_t>(12, 0));
  Tensor v = Tensor::allocate(DType::kF32, {3});
  expect_error("Trilu", {&v}, {}, "rank >= 2", 14);
}

TEST(DepthToSpace, DcrAndCrd) {
  Tensor x = make_tensor<float>({1, 8, 1, 2}, iota_f(16));
  Tensor dcr = run1("DepthToSpace", {&x}, {attr_int("blocksize", 2)}, 13);
  EXPECT_EQ(dcr.shape(), (Shape{1, 2, 2, 4}));
  EXPECT_EQ(values_of<float>(dcr), (std::vector<float>{0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15}));
  Tensor crd = run1("DepthToSpace", {&x}, {attr_int("blocksize", 2), attr_string("mode", "CRD")}, 13);
  EXPECT_EQ(values_of<float>(crd), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15}));
  Tensor odd = Tensor::allocate(DType::kF32, {1, 6, 1, 1});
  expect_error("DepthToSpace", {&odd}, {attr_int("blocksize", 2)}, "multiple of blocksize^2", 13);
  expect_error("DepthToSpace", {&x}, {}, "required attribute 'blocksize'", 13);
}

TEST(SpaceToDepth, Blocks) {
  Tensor x = make_tensor<float>({1, 1, 4, 4}, iota_f(16));
  Tensor y = run1("SpaceToDepth", {&x}, {attr_int("blocksize", 2)}, 13);
  EXPECT_EQ(y.shape(), (Shape{1, 4, 2, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15}));
  Tensor odd = Tensor::allocate(DType::kF32, {1, 1, 3, 4});
  expect_error("SpaceToDepth", {&odd}, {attr_int("blocksize", 2)}, "multiples of blocksize", 13);
}

TEST(SpaceToDepth, DcrAndCrd) {
  // Two channels of 2x2: DCR puts the block offset outermost, CRD the channel.
  Tensor x = make_tensor<float>({1, 2, 2, 2}, iota_f(8));
  Tensor dcr = run1("SpaceToDepth", {&x}, {attr_int("blocksize", 2), attr_string("mode", "DCR")}, 28);
  EXPECT_EQ(dcr.shape(), (Shape{1, 8, 1, 1}));
  EXPECT_EQ(values_of<float>(dcr), (std::vector<float>{0, 4, 1, 5, 2, 6, 3, 7}));
  Tensor crd = run1("SpaceToDepth", {&x}, {attr_int("blocksize", 2), attr_string("mode", "CRD")}, 28);
  EXPECT_EQ(values_of<float>(crd), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  Tensor back = run1("DepthToSpace", {&crd}, {attr_int("blocksize", 2), attr_string("mode", "CRD")}, 13);
  EXPECT_EQ(values_of<float>(back), values_of<float>(x));
  expect_error("SpaceToDepth", {&x}, {attr_int("blocksize", 2), attr_string("mode", "RDC")}, "not DCR or CRD", 28);
}

TEST(ShapeInputs, AskForTheirValues) {
  struct Case {
    const char* op;
    std::vector<DType> dtypes;
    size_t needed;
    int opset;
  };
  const Case cases[] = {
      {"Squeeze", {DType::kF32, DType::kI64}, 1, 13},       {"Unsqueeze", {DType::kF32, DType::kI64}, 1, 13},
      {"Slice", {DType::kF32, DType::kI64, DType::kI64}, 1, 13}, {"Expand", {DType::kF32, DType::kI64}, 1, 13},
      {"Tile", {DType::kF32, DType::kI64}, 1, 13},          {"Pad", {DType::kF32, DType::kI64}, 1, 13},
      {"Range", {DType::kI64, DType::kI64, DType::kI64}, 0, 11}, {"ConstantOfShape", {DType::kI64}, 0, 9},
      {"Split", {DType::kF32, DType::kI64}, 1, 13},
  };
  for (const Case& c : cases) {
    auto k = build(c.op, c.dtypes, {}, c.opset);
    ASSERT_TRUE(k) << c.op;
    std::vector<Tensor> ins;
    for (DType t : c.dtypes) ins.emplace_back(t, Shape{2, 2}, nullptr);
    ins[0].set_shape(Shape{1, 1});
    std::vector<const Tensor*> in_ptrs;
    for (const Tensor& t : ins) in_ptrs.push_back(&t);
    Tensor out0;
    Tensor out1;
    Tensor* outs[] = {&out0, &out1};
    kernels::KernelContext ctx(in_ptrs, outs);
    Status s = k->infer(ctx);
    EXPECT_TRUE(kernels::is_needs_value(s)) << c.op << ": " << s.to_string();
    EXPECT_NE(s.message().find(std::to_string(c.needed)), std::string::npos) << c.op << ": " << s.message();
  }
}

}  // namespace
}  // namespace ember::test
