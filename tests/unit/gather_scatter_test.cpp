// Indexing ops: Gather*, Scatter*, OneHot, NonZero, Compress, CumSum, TopK,
// ArgMax/ArgMin. Expected values are written by hand (checked with numpy).
// ctest: every ISA level
// ctest: emulated CPUs
#include <cmath>
#include <limits>

#include "unit/op_test_util.h"

namespace ember {
namespace {

using test::attr_int;
using test::attr_string;
using test::make_tensor;
using test::run_op;
using test::values_of;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Shape shape_of(const Tensor& t) { return t.shape(); }

TEST(Gather, Axis0RowsWithNegativeIndices) {
  Tensor data = make_tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor idx = make_tensor<int64_t>({2, 2}, {2, 0, -1, 1});
  auto r = run_op("Gather", {&data, &idx}, {attr_int("axis", 0)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 2, 2}));
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{5, 6, 1, 2, 5, 6, 3, 4}));
}

TEST(Gather, Axis1Int32IndicesNegativeAxis) {
  Tensor data = make_tensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor idx = make_tensor<int32_t>({2}, {2, 0});
  auto r = run_op("Gather", {&data, &idx}, {attr_int("axis", -1)}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 2}));
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{3, 1, 6, 4}));
}

TEST(Gather, ScalarIndexDropsAxisAndBoolData) {
  Tensor data = make_tensor<bool>({2, 3}, {true, false, true, false, false, true});
  Tensor idx = make_tensor<int64_t>({}, {1});
  auto r = run_op("Gather", {&data, &idx}, {attr_int("axis", 0)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{3}));
  EXPECT_EQ(values_of<bool>(r.value()[0]), (std::vector<bool>{false, false, true}));
}

TEST(Gather, ZeroSizeIndices) {
  Tensor data = make_tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor idx = make_tensor<int64_t>({0}, {});
  auto r = run_op("Gather", {&data, &idx});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{0, 2}));
}

TEST(Gather, OutOfRangeIndexIsAnError) {
  Tensor data = make_tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  for (int64_t bad : {3, -4}) {
    Tensor idx = make_tensor<int64_t>({2}, {0, bad});
    auto r = run_op("Gather", {&data, &idx});
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("Gather"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(std::to_string(bad)), std::string::npos) << r.status().message();
  }
}

TEST(Gather, BadAxisAndIndexDtypeAreErrors) {
  Tensor data = make_tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor idx = make_tensor<int64_t>({1}, {0});
  EXPECT_FALSE(run_op("Gather", {&data, &idx}, {attr_int("axis", 2)}).is_ok());
  Tensor fidx = make_tensor<float>({1}, {0});
  auto r = run_op("Gather", {&data, &fidx});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("int32 or int64"), std::string::npos) << r.status().message();
}

TEST(GatherElements, Axis1AndNegativeIndicesAxis0) {
  Tensor data = make_tensor<float>({2, 2}, {1, 2, 3, 4});
  Tensor idx = make_tensor<int64_t>({2, 2}, {0, 0, 1, 0});
  auto r = run_op("GatherElements", {&data, &idx}, {attr_int("axis", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{1, 1, 4, 3}));

  Tensor data3 = make_tensor<int64_t>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor idx3 = make_tensor<int32_t>({2, 3}, {-1, 1, 0, 2, 0, 0});
  auto r3 = run_op("GatherElements", {&data3, &idx3}, {attr_int("axis", 0)});
  ASSERT_TRUE(r3.is_ok()) << r3.status().to_string();
  EXPECT_EQ(shape_of(r3.value()[0]), (Shape{2, 3}));
  EXPECT_EQ(values_of<int64_t>(r3.value()[0]), (std::vector<int64_t>{7, 5, 3, 7, 2, 3}));
}

TEST(GatherElements, SmallerIndicesOnOtherDimAndErrors) {
  Tensor data = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor idx = make_tensor<int64_t>({1, 2}, {2, 1});
  auto r = run_op("GatherElements", {&data, &idx}, {attr_int("axis", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{3, 2}));
  Tensor bad = make_tensor<int64_t>({1, 2}, {2, 3});
  EXPECT_FALSE(run_op("GatherElements", {&data, &bad}, {attr_int("axis", 1)}).is_ok());
  Tensor big = make_tensor<int64_t>({3, 1}, {0, 0, 0});
  EXPECT_FALSE(run_op("GatherElements", {&data, &big}, {attr_int("axis", 1)}).is_ok());
}

TEST(GatherND, TuplesSlicesAndBatchDims) {
  Tensor data = make_tensor<int32_t>({2, 2}, {0, 1, 2, 3});
  Tensor full = make_tensor<int64_t>({2, 2}, {0, 0, 1, 1});
  auto r = run_op("GatherND", {&data, &full});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{0, 3}));

  Tensor rows = make_tensor<int64_t>({2, 1}, {1, -2});
  r = run_op("GatherND", {&data, &rows});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 2}));
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{2, 3, 0, 1}));

  Tensor data3 = make_tensor<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor batch_idx = make_tensor<int64_t>({2, 1}, {1, 0});
  r = run_op("GatherND", {&data3, &batch_idx}, {attr_int("batch_dims", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 2}));
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{2, 3, 4, 5}));
}

TEST(GatherND, Errors) {
  Tensor data = make_tensor<int32_t>({2, 2}, {0, 1, 2, 3});
  Tensor idx = make_tensor<int64_t>({1, 2}, {0, 2});
  auto r = run_op("GatherND", {&data, &idx});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("GatherND"), std::string::npos);
  Tensor deep = make_tensor<int64_t>({1, 3}, {0, 0, 0});
  EXPECT_FALSE(run_op("GatherND", {&data, &deep}).is_ok());
  Tensor ok = make_tensor<int64_t>({1, 1}, {0});
  EXPECT_FALSE(run_op("GatherND", {&data, &ok}, {attr_int("batch_dims", -1)}).is_ok());
}

TEST(ScatterND, ReplaceAndReductions) {
  Tensor data = make_tensor<float>({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor idx = make_tensor<int64_t>({4, 1}, {4, 3, 1, 7});
  Tensor upd = make_tensor<float>({4}, {9, 10, 11, 12});
  auto r = run_op("ScatterND", {&data, &idx, &upd}, {}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));

  Tensor d2 = make_tensor<int32_t>({2}, {1, 2});
  Tensor dup = make_tensor<int64_t>({2, 1}, {0, 0});
  Tensor u2 = make_tensor<int32_t>({2}, {5, 6});
  r = run_op("ScatterND", {&d2, &dup, &u2}, {attr_string("reduction", "add")}, 1, 16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{12, 2}));
  r = run_op("ScatterND", {&d2, &dup, &u2}, {attr_string("reduction", "mul")}, 1, 16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{30, 2}));

  Tensor pair = make_tensor<int64_t>({2, 1}, {0, 1});
  Tensor u3 = make_tensor<int32_t>({2}, {0, 5});
  r = run_op("ScatterND", {&d2, &pair, &u3}, {attr_string("reduction", "max")}, 1, 18);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{1, 5}));
  r = run_op("ScatterND", {&d2, &pair, &u3}, {attr_string("reduction", "min")}, 1, 18);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{0, 2}));
}

TEST(ScatterND, SliceUpdatesAndFloat16Add) {
  Tensor data = make_tensor<Float16>({2, 2}, {Float16(1), Float16(2), Float16(3), Float16(4)});
  Tensor idx = make_tensor<int64_t>({1, 1}, {-1});
  Tensor upd = make_tensor<Float16>({1, 2}, {Float16(0.5f), Float16(-4)});
  auto r = run_op("ScatterND", {&data, &idx, &upd}, {attr_string("reduction", "add")}, 1, 16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<Float16> out = values_of<Float16>(r.value()[0]);
  std::vector<float> got(out.begin(), out.end());
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3.5f, 0}));
}

TEST(ScatterND, Errors) {
  Tensor data = make_tensor<float>({2}, {1, 2});
  Tensor idx = make_tensor<int64_t>({1, 1}, {2});
  Tensor upd = make_tensor<float>({1}, {7});
  auto r = run_op("ScatterND", {&data, &idx, &upd});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("index 2"), std::string::npos) << r.status().message();
  EXPECT_FALSE(run_op("ScatterND", {&data, &idx, &upd}, {attr_string("reduction", "max")}, 1, 16).is_ok());
  EXPECT_FALSE(run_op("ScatterND", {&data, &idx, &upd}, {attr_string("reduction", "sub")}, 1, 18).is_ok());
  Tensor wrong = make_tensor<float>({2}, {7, 8});
  Tensor ok_idx = make_tensor<int64_t>({1, 1}, {0});
  EXPECT_FALSE(run_op("ScatterND", {&data, &ok_idx, &wrong}).is_ok());
}

TEST(ScatterElements, Axis0AndNegativeIndicesAxis1) {
  Tensor data = make_tensor<float>({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0});
  Tensor idx = make_tensor<int64_t>({2, 3}, {1, 0, 2, 0, 2, 1});
  Tensor upd = make_tensor<float>({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f});
  auto r = run_op("ScatterElements", {&data, &idx, &upd});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}));

  Tensor row = make_tensor<float>({1, 5}, {1, 2, 3, 4, 5});
  Tensor nidx = make_tensor<int32_t>({1, 2}, {1, -3});
  Tensor nupd = make_tensor<float>({1, 2}, {1.1f, 2.1f});
  r = run_op("ScatterElements", {&row, &nidx, &nupd}, {attr_int("axis", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{1, 1.1f, 2.1f, 4, 5}));
  // The deprecated Scatter of opset 10 is the same op.
  r = run_op("Scatter", {&row, &nidx, &nupd}, {attr_int("axis", -1)}, 1, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{1, 1.1f, 2.1f, 4, 5}));
}

TEST(ScatterElements, DuplicateIndicesWithReductions) {
  Tensor row = make_tensor<int64_t>({1, 5}, {1, 2, 3, 4, 5});
  Tensor idx = make_tensor<int64_t>({1, 2}, {1, 1});
  Tensor upd = make_tensor<int64_t>({1, 2}, {10, 20});
  auto r = run_op("ScatterElements", {&row, &idx, &upd}, {attr_int("axis", 1), attr_string("reduction", "add")}, 1, 16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{1, 32, 3, 4, 5}));
  r = run_op("ScatterElements", {&row, &idx, &upd}, {attr_int("axis", 1), attr_string("reduction", "mul")}, 1, 16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{1, 400, 3, 4, 5}));
  Tensor bad = make_tensor<int64_t>({1, 2}, {1, 5});
  r = run_op("ScatterElements", {&row, &bad, &upd}, {attr_int("axis", 1)});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("index 5"), std::string::npos) << r.status().message();
}

TEST(OneHot, LastAxisAndAxis0WithNegativeAndOutOfRange) {
  Tensor idx = make_tensor<int64_t>({4}, {0, -1, 5, 2});
  Tensor depth = make_tensor<float>({}, {3});
  Tensor values = make_tensor<int32_t>({2}, {0, 7});
  auto r = run_op("OneHot", {&idx, &depth, &values}, {}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{4, 3}));
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{7, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 7}));
  r = run_op("OneHot", {&idx, &depth, &values}, {attr_int("axis", 0)}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{3, 4}));
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{7, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 7}));
}

TEST(OneHot, FloatIndicesMiddleAxisAndErrors) {
  Tensor idx = make_tensor<float>({2, 2}, {1, 9, 2, 0});
  Tensor depth = make_tensor<int64_t>({1}, {3});
  Tensor values = make_tensor<float>({2}, {-1, 1});
  auto r = run_op("OneHot", {&idx, &depth, &values}, {attr_int("axis", -2)}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 3, 2}));
  EXPECT_EQ(values_of<float>(r.value()[0]),
            (std::vector<float>{-1, -1, 1, -1, -1, -1, -1, 1, -1, -1, 1, -1}));
  Tensor neg = make_tensor<int64_t>({}, {-1});
  EXPECT_FALSE(run_op("OneHot", {&idx, &neg, &values}).is_ok());
  Tensor three = make_tensor<float>({3}, {0, 1, 2});
  EXPECT_FALSE(run_op("OneHot", {&idx, &depth, &three}).is_ok());
}

TEST(NonZero, BoolFloatNaNAndZeroSize) {
  Tensor b = make_tensor<bool>({2, 2}, {true, false, true, true});
  auto r = run_op("NonZero", {&b});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 3}));
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));

  Tensor f = make_tensor<float>({4}, {0, kNaN, -0.0f, 2});
  r = run_op("NonZero", {&f});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{1, 3}));

  Tensor empty = make_tensor<int32_t>({0, 3}, {});
  r = run_op("NonZero", {&empty});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 0}));
}

TEST(Compress, AxesFlattenedAndShortCondition) {
  Tensor x = make_tensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor c0 = make_tensor<bool>({3}, {false, true, true});
  auto r = run_op("Compress", {&x, &c0}, {attr_int("axis", 0)}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{3, 4, 5, 6}));

  Tensor c1 = make_tensor<bool>({2}, {false, true});
  r = run_op("Compress", {&x, &c1}, {attr_int("axis", -1)}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{3, 1}));
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{2, 4, 6}));

  Tensor flat = make_tensor<bool>({5}, {false, true, false, false, true});
  r = run_op("Compress", {&x, &flat}, {}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2}));
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{2, 5}));

  Tensor none = make_tensor<bool>({1}, {false});
  r = run_op("Compress", {&x, &none}, {attr_int("axis", 0)}, 1, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{0, 2}));
  Tensor icond = make_tensor<int32_t>({1}, {1});
  EXPECT_FALSE(run_op("Compress", {&x, &icond}, {}, 1, 11).is_ok());
}

TEST(CumSum, ExclusiveReverseAndAxes) {
  Tensor x = make_tensor<double>({5}, {1, 2, 3, 4, 5});
  Tensor axis = make_tensor<int32_t>({}, {0});
  struct Case {
    int64_t exclusive, reverse;
    std::vector<double> expected;
  };
  for (const Case& c : {Case{0, 0, {1, 3, 6, 10, 15}}, Case{1, 0, {0, 1, 3, 6, 10}}, Case{0, 1, {15, 14, 12, 9, 5}},
                        Case{1, 1, {14, 12, 9, 5, 0}}}) {
    auto r = run_op("CumSum", {&x, &axis}, {attr_int("exclusive", c.exclusive), attr_int("reverse", c.reverse)}, 1, 14);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(values_of<double>(r.value()[0]), c.expected) << c.exclusive << " " << c.reverse;
  }
  Tensor m = make_tensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor a0 = make_tensor<int64_t>({}, {0});
  auto r = run_op("CumSum", {&m, &a0}, {}, 1, 14);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{1, 2, 3, 5, 7, 9}));
  Tensor am1 = make_tensor<int64_t>({1}, {-1});
  r = run_op("CumSum", {&m, &am1}, {}, 1, 14);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  Tensor a2 = make_tensor<int64_t>({}, {2});
  EXPECT_FALSE(run_op("CumSum", {&m, &a2}, {}, 1, 14).is_ok());
}

TEST(TopK, LargestSmallestAndAxis0) {
  Tensor x = make_tensor<float>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 9, 8});
  Tensor k = make_tensor<int64_t>({1}, {3});
  auto r = run_op("TopK", {&x, &k}, {attr_int("axis", 1)}, 2, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{3, 3}));
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{3, 2, 1, 7, 6, 5, 11, 10, 9}));
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{3, 2, 1, 3, 2, 1, 0, 1, 2}));
  r = run_op("TopK", {&x, &k}, {attr_int("largest", 0)}, 2, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{0, 1, 2, 4, 5, 6, 8, 9, 10}));
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3, 2, 1}));

  Tensor y = make_tensor<int32_t>({3, 2}, {1, 5, 3, 2, 2, 4});
  Tensor k2 = make_tensor<int64_t>({1}, {2});
  r = run_op("TopK", {&y, &k2}, {attr_int("axis", 0)}, 2, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{3, 5, 2, 4}));
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{1, 0, 2, 2}));
}

TEST(TopK, TiesNaNAttributeFormAndErrors) {
  Tensor t = make_tensor<float>({5}, {1, 3, 3, 2, 3});
  Tensor k3 = make_tensor<int64_t>({1}, {3});
  auto r = run_op("TopK", {&t, &k3}, {}, 2, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{1, 2, 4}));

  Tensor n = make_tensor<float>({4}, {1, kNaN, 3, 2});
  Tensor k2 = make_tensor<int64_t>({1}, {2});
  r = run_op("TopK", {&n, &k2}, {}, 2, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(std::isnan(values_of<float>(r.value()[0])[0]));
  Tensor k4 = make_tensor<int64_t>({1}, {4});
  r = run_op("TopK", {&n, &k4}, {attr_int("largest", 0)}, 2, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{0, 3, 2, 1}));

  r = run_op("TopK", {&t}, {attr_int("k", 2)}, 2, 1);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{3, 3}));
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{1, 2}));

  Tensor k0 = make_tensor<int64_t>({1}, {0});
  r = run_op("TopK", {&t, &k0}, {}, 2, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{0}));
  Tensor k9 = make_tensor<int64_t>({1}, {9});
  EXPECT_FALSE(run_op("TopK", {&t, &k9}, {}, 2, 11).is_ok());
  EXPECT_FALSE(run_op("TopK", {&t}, {}, 2, 9).is_ok());
}

TEST(ArgMax, AxesKeepdimsSelectLastAndNaN) {
  Tensor x = make_tensor<float>({2, 2}, {2, 1, 3, 10});
  auto r = run_op("ArgMax", {&x}, {attr_int("axis", 0)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{1, 2}));
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{1, 1}));
  r = run_op("ArgMax", {&x}, {attr_int("axis", -1), attr_int("keepdims", 0)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2}));
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{0, 1}));

  Tensor ties = make_tensor<int32_t>({1, 4}, {2, 1, 2, 1});
  r = run_op("ArgMax", {&ties}, {attr_int("axis", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{0}));
  r = run_op("ArgMax", {&ties}, {attr_int("axis", 1), attr_int("select_last_index", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{2}));
  r = run_op("ArgMin", {&ties}, {attr_int("axis", 1), attr_int("select_last_index", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{3}));

  Tensor n = make_tensor<float>({4}, {1, kNaN, 3, kNaN});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    r = run_op(op, {&n}, {attr_int("keepdims", 0)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(values_of<int64_t>(r.value()[0]), (std::vector<int64_t>{1})) << op;
  }
  Tensor empty = make_tensor<float>({0, 3}, {});
  EXPECT_FALSE(run_op("ArgMax", {&empty}, {attr_int("axis", 0)}).is_ok());
  r = run_op("ArgMin", {&empty}, {attr_int("axis", 1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{0, 1}));
}

TEST(Unique, SortedUnsortedAxisAndNaN) {
  Tensor x = make_tensor<float>({6}, {2, 1, 1, 3, 4, 3});
  auto r = run_op("Unique", {&x}, {}, 4, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(r.value()[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(values_of<int64_t>(r.value()[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  r = run_op("Unique", {&x}, {attr_int("sorted", 0)}, 4, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<float>(r.value()[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(r.value()[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(values_of<int64_t>(r.value()[3]), (std::vector<int64_t>{1, 2, 2, 1}));

  Tensor m = make_tensor<int32_t>({3, 3}, {2, 3, 4, 1, 0, 0, 2, 3, 4});
  r = run_op("Unique", {&m}, {attr_int("axis", 0)}, 4, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{2, 3}));
  EXPECT_EQ(values_of<int32_t>(r.value()[0]), (std::vector<int32_t>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(r.value()[1]), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values_of<int64_t>(r.value()[2]), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(values_of<int64_t>(r.value()[3]), (std::vector<int64_t>{1, 2}));

  Tensor n = make_tensor<float>({3}, {kNaN, 1, kNaN});
  r = run_op("Unique", {&n}, {}, 4, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int64_t>(r.value()[3]), (std::vector<int64_t>{1, 2}));
  Tensor empty = make_tensor<float>({0}, {});
  r = run_op("Unique", {&empty}, {}, 4, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(shape_of(r.value()[0]), (Shape{0}));
}

}  // namespace
}  // namespace ember
