// The ONNX Runtime harness, the comparison utility and the model builder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"

namespace ember::ortref {
namespace {

template <typename T>
Tensor make(Shape shape, std::vector<T> values) {
  Tensor t = Tensor::allocate(dtype_of<T>, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.data_as<T>()[i] = values[i];
  return t;
}

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(OrtReference, LoadsLibrary) {
  Result<std::string> v = ort_version();
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->rfind("1.", 0), 0u) << *v;
}

TEST(OrtReference, RunsBuilderMadeAdd) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {2, 3});
  b.add_initializer("y", make<float>({3}, {10.f, 20.f, 30.f}));
  b.add_node("Add", {"x", "y"}, {"z"});
  b.add_output("z", DType::kF32, {2, 3});
  auto session = OrtSession::load_from_bytes(as_bytes(b.serialize()));
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  EXPECT_EQ((*session)->input_names(), std::vector<std::string>{"x"});
  EXPECT_EQ((*session)->output_names(), std::vector<std::string>{"z"});

  Tensor x = make<float>({2, 3}, {1.f, 2.f, 3.f, -1.f, -2.f, 0.5f});
  std::vector<OrtInput> inputs{{"x", &x}};
  auto out = (*session)->run(inputs);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 1u);
  const Tensor& z = (*out)[0];
  ASSERT_EQ(z.describe(), "float32[2,3]");
  std::vector<float> got(z.data_as<float>(), z.data_as<float>() + 6);
  EXPECT_EQ(got, (std::vector<float>{11.f, 22.f, 33.f, 9.f, 18.f, 30.5f}));

  auto prepared = (*session)->prepare(inputs);
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  EXPECT_TRUE((*session)->run_prepared(*prepared).is_ok());
}

TEST(OrtReference, RoundTripsEveryDtypeThroughIdentity) {
  std::vector<Tensor> tensors;
  tensors.push_back(make<Float16>({2}, {Float16(1.5f), Float16(-2.f)}));
  tensors.push_back(make<BFloat16>({2}, {BFloat16(3.f), BFloat16(-0.25f)}));
  tensors.push_back(make<bool>({3}, {true, false, true}));
  tensors.push_back(make<int8_t>({1, 2}, {-128, 127}));
  tensors.push_back(make<uint64_t>({1}, {std::numeric_limits<uint64_t>::max()}));
  tensors.push_back(make<double>({0, 4}, {}));
  for (const Tensor& t : tensors) {
    ModelBuilder b(17);
    b.add_input("x", t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()));
    b.add_node("Identity", {"x"}, {"y"});
    b.add_output_unshaped("y", t.dtype());
    auto session = OrtSession::load_from_bytes(as_bytes(b.serialize()));
    ASSERT_TRUE(session.is_ok()) << t.describe() << ": " << session.status().to_string();
    std::vector<OrtInput> inputs{{"x", &t}};
    auto out = (*session)->run(inputs);
    ASSERT_TRUE(out.is_ok()) << t.describe() << ": " << out.status().to_string();
    EXPECT_TRUE(compare((*out)[0], t, {0, 0}).is_ok()) << t.describe();
  }
}

TEST(OrtReference, ReportsOrtErrors) {
  auto bad = OrtSession::load_from_bytes(as_bytes("not a model"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("onnxruntime"), std::string::npos) << bad.status().to_string();

  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {2});
  b.add_node("Relu", {"x"}, {"y"});
  b.add_output("y", DType::kF32, {2});
  auto session = OrtSession::load_from_bytes(as_bytes(b.serialize()));
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  Tensor wrong = make<float>({3}, {1.f, 2.f, 3.f});
  std::vector<OrtInput> inputs{{"x", &wrong}};
  auto out = (*session)->run(inputs);
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << out.status().to_string();
}

TEST(Compare, CatchesOneUlpOverTolerance) {
  const Tolerance tol = default_tolerance(DType::kF32);
  auto within = [&](float a) { return static_cast<double>(a) - 1.0 <= tol.atol + tol.rtol * 1.0; };
  // The largest float within tolerance of 1, and the next one up.
  float inside = 1.0f;
  while (within(std::nextafter(inside, 2.f))) inside = std::nextafter(inside, 2.f);
  float outside = std::nextafter(inside, 2.f);
  Tensor b = make<float>({2}, {0.f, 1.0f});
  EXPECT_TRUE(compare(make<float>({2}, {0.f, inside}), b).is_ok());
  Status s = compare(make<float>({2}, {0.f, outside}), b);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("flat index 1 [1]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1 of 2 elements"), std::string::npos) << s.message();
}

TEST(Compare, NanAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor b = make<float>({3}, {nan, inf, -inf});
  EXPECT_TRUE(compare(make<float>({3}, {nan, inf, -inf}), b).is_ok());
  EXPECT_FALSE(compare(make<float>({3}, {0.f, inf, -inf}), b).is_ok());
  EXPECT_FALSE(compare(make<float>({3}, {nan, -inf, -inf}), b).is_ok());
  EXPECT_FALSE(compare(make<float>({3}, {nan, inf, 1e30f}), b).is_ok());
  EXPECT_FALSE(compare(make<float>({1}, {1.f}), make<float>({1}, {nan})).is_ok());
}

TEST(Compare, IntegersAreExactAndShapesMustMatch) {
  EXPECT_TRUE(compare(make<int64_t>({2}, {5, -7}), make<int64_t>({2}, {5, -7})).is_ok());
  Status s = compare(make<int64_t>({2, 2}, {5, -7, 1, 2}), make<int64_t>({2, 2}, {5, -7, 1, 3}));
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("[1,1]: actual 2 expected 3"), std::string::npos) << s.message();
  EXPECT_FALSE(compare(make<int32_t>({2}, {1, 2}), make<int64_t>({2}, {1, 2})).is_ok());
  EXPECT_FALSE(compare(make<int32_t>({2}, {1, 2}), make<int32_t>({2, 1}, {1, 2})).is_ok());
  EXPECT_FALSE(compare(make<bool>({2}, {true, false}), make<bool>({2}, {true, true})).is_ok());
}

TEST(Compare, HalfPrecisionTolerances) {
  // 1 + 8e-3 is within f16's rtol 1e-2 of 1; 1.02 is not.
  EXPECT_TRUE(compare(make<Float16>({1}, {Float16(1.008f)}), make<Float16>({1}, {Float16(1.f)})).is_ok());
  EXPECT_FALSE(compare(make<Float16>({1}, {Float16(1.02f)}), make<Float16>({1}, {Float16(1.f)})).is_ok());
  EXPECT_TRUE(compare(make<BFloat16>({1}, {BFloat16(1.0234375f)}), make<BFloat16>({1}, {BFloat16(1.f)})).is_ok());
  EXPECT_FALSE(compare(make<BFloat16>({1}, {BFloat16(1.0625f)}), make<BFloat16>({1}, {BFloat16(1.f)})).is_ok());
}

}  // namespace
}  // namespace ember::ortref
