// String tensors: element ownership, TensorProto round trips, a string flowing
// through a small graph, and the refusals of ops that cannot take strings.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/tensor_compare.h"
#include "graph_builder.h"
#include "onnx/model_loader.h"
#include "op_test_util.h"

namespace ember::test {
namespace {

Tensor strings(Shape shape, std::vector<std::string> values) {
  Tensor t = Tensor::allocate(DType::kString, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.data_as<std::string>()[i] = values[i];
  return t;
}

std::vector<std::string> string_values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kString);
  return std::vector<std::string>(t.data_as<std::string>(), t.data_as<std::string>() + t.numel());
}

TEST(StringTensor, AllocateConstructsEmptyStrings) {
  Tensor t = Tensor::allocate(DType::kString, {2, 3});
  EXPECT_TRUE(t.owns_unique_storage());
  EXPECT_EQ(string_values(t), std::vector<std::string>(6, ""));
  Tensor empty = Tensor::allocate(DType::kString, {0, 4});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_NE(empty.data(), nullptr);
}

TEST(StringTensor, CloneIsDeepAndCopiesShareStorage) {
  // Longer than the small-string buffer, so a shallow byte copy would share heap memory.
  const std::string long_text(100, 'x');
  Tensor a = strings({2}, {long_text, "b"});
  Tensor shared = a;
  EXPECT_FALSE(a.owns_unique_storage());
  Tensor deep = a.clone();
  EXPECT_TRUE(deep.owns_unique_storage());
  a.data_as<std::string>()[0] = "changed";
  EXPECT_EQ(string_values(shared)[0], "changed");
  EXPECT_EQ(string_values(deep), (std::vector<std::string>{long_text, "b"}));
  EXPECT_NE(deep.data_as<std::string>()[0].data(), a.data_as<std::string>()[0].data());
}

TEST(StringTensor, CompareNamesTheFirstDifference) {
  Tensor a = strings({3}, {"x", "y", "z"});
  EXPECT_TRUE(compare_tensors(a, strings({3}, {"x", "y", "z"}), Tolerance{}).is_ok());
  Status st = compare_tensors(a, strings({3}, {"x", "Y", "z"}), Tolerance{});
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("\"y\" expected \"Y\""), std::string::npos) << st.message();
}

TEST(StringTensor, TensorProtoRoundTrip) {
  Tensor t = strings({2, 2}, {"", "caf\xc3\xa9", std::string("a\0b", 3), "long string beyond sso capacity"});
  std::string bytes = onnx::serialize_tensor_proto(t, "s");
  auto parsed = onnx::parse_tensor_proto({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->name, "s");
  EXPECT_EQ(parsed->tensor.shape(), t.shape());
  EXPECT_EQ(string_values(parsed->tensor), string_values(t));
}

TEST(StringTensor, TensorProtoWithTooFewStringsIsRefused) {
  Tensor t = strings({2}, {"a", "b"});
  std::string bytes = onnx::serialize_tensor_proto(t, "s");
  // Drop the last string_data field (tag, length 1, "b").
  bytes.resize(bytes.size() - 3);
  auto parsed = onnx::parse_tensor_proto({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("1 values in string_data, expected 2"), std::string::npos)
      << parsed.status().to_string();
}

// Strings from a graph input and a constant pass through StringConcat and
// Equal; the string graph output is owned by the caller and outlives the session.
TEST(StringTensor, FlowsThroughAGraph) {
  GraphBuilder b(20);
  b.input("x", DType::kString, {-1});
  b.constant("suffix", strings({}, {"!"}));
  b.constant("expected", strings({2}, {"hi!", "yo!"}));
  b.node("StringConcat", {"x", "suffix"}, {"y"});
  b.node("Equal", {"y", "expected"}, {"same"});
  b.output("y").output("same");
  std::vector<Tensor> outputs;
  {
    auto session = make_session(b.build(), /*optimize=*/true);
    ASSERT_TRUE(session);
    Tensor x = strings({2}, {"hi", "no"});
    std::vector<runtime::NamedInput> in = {{"x", &x}};
    for (int run = 0; run < 2; ++run) {  // the second run reuses the plan
      auto out = session->run(in);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      outputs = std::move(*out);
    }
  }
  EXPECT_EQ(string_values(outputs[0]), (std::vector<std::string>{"hi!", "no!"}));
  EXPECT_EQ(values_of<bool>(outputs[1]), (std::vector<bool>{true, false}));
}

// A bound string output receives copies of the strings the run computed.
TEST(StringTensor, BoundOutputsReceiveTheStrings) {
  GraphBuilder b(20);
  b.input("x", DType::kString, {2}).input("y", DType::kString, {2});
  b.node("StringConcat", {"x", "y"}, {"z"});
  auto session = make_session(b.output("z").build(), /*optimize=*/false);
  ASSERT_TRUE(session);
  Tensor x = strings({2}, {"a", std::string(40, 'b')});
  Tensor y = strings({2}, {"c", "d"});
  Tensor z = Tensor::allocate(DType::kString, {2});
  std::vector<const Tensor*> in = {&x, &y};
  std::vector<Tensor*> out = {&z};
  Status st = session->run_bound(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(string_values(z), (std::vector<std::string>{"ac", std::string(40, 'b') + "d"}));
}

TEST(StringTensor, OpsWithoutStringSupportRefuseStringInputs) {
  Tensor x = strings({2}, {"a", "b"});
  auto out = run_op("Identity", {&x});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(out.status().message().find("input 0 is a string tensor"), std::string::npos) << out.status().to_string();
  Tensor f = make_tensor<float>({2}, {1, 2});
  auto mixed = run_op("Equal", {&x, &f});
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_NE(mixed.status().message().find("input 1 must be a string tensor"), std::string::npos)
      << mixed.status().to_string();
}

TEST(StringCast, NumbersToStringsAndBack) {
  Tensor f = make_tensor<float>({5}, {0.039187793f, 1.5f, -2.0f, std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN()});
  auto s = run_op("Cast", {&f}, {attr_int("to", static_cast<int64_t>(DType::kString))}, 1, 19);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(string_values((*s)[0]), (std::vector<std::string>{"0.039187793", "1.5", "-2", "INF", "NaN"}));
  Tensor text = strings({6}, {"1e-5", "+INF", "-inf", "nan", " 2", "100.5"});
  auto back = run_op("Cast", {&text}, {attr_int("to", static_cast<int64_t>(DType::kF32))}, 1, 19);
  ASSERT_FALSE(back.is_ok());  // " 2" is not a number
  EXPECT_NE(back.status().message().find("element 4"), std::string::npos) << back.status().to_string();
  Tensor ints = strings({3}, {"100.5", "-7", "+12"});
  auto i64 = run_op("Cast", {&ints}, {attr_int("to", static_cast<int64_t>(DType::kI64))}, 1, 19);
  ASSERT_TRUE(i64.is_ok()) << i64.status().to_string();
  EXPECT_EQ(values_of<int64_t>((*i64)[0]), (std::vector<int64_t>{100, -7, 12}));
  Tensor big = strings({1}, {"300"});
  auto u8 = run_op("Cast", {&big}, {attr_int("to", static_cast<int64_t>(DType::kU8))}, 1, 19);
  ASSERT_FALSE(u8.is_ok());
}

}  // namespace
}  // namespace ember::test
