// The Ember plugin execution provider (libember_ort_ep.so) inside ONNX Runtime
// 1.30: registration, claiming, and outputs against ORT's own CPU EP, with the
// nodes Ember ran counted by the library's exported counter.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "compare.h"
#include "model_builder.h"
#include "ort_reference.h"

namespace ember::ortref {
namespace {

constexpr const char* kEp = "EmberExecutionProvider";
constexpr const char* kRegistration = "ember";

bool has_ember_device() {
  auto names = ep_device_names();
  EXPECT_TRUE(names.is_ok()) << names.status().to_string();
  return names.is_ok() && std::find(names->begin(), names->end(), kEp) != names->end();
}

// Registers the library for one test and unregisters it at the end.
class Registered {
 public:
  Registered() { status_ = register_ep_library(kRegistration, EMBER_ORT_EP_LIBRARY); }
  ~Registered() {
    if (status_.is_ok()) {
      Status s = unregister_ep_library(kRegistration);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
    }
  }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// EmberEp_ExecutedNodeCount() of the loaded library (it must be loaded).
uint64_t executed_nodes() {
  void* lib = dlopen(EMBER_ORT_EP_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr) << "the EP library is not loaded";
  if (!lib) return 0;
  using Counter = uint64_t (*)();
  auto counter = reinterpret_cast<Counter>(dlsym(lib, "EmberEp_ExecutedNodeCount"));
  EXPECT_NE(counter, nullptr);
  const uint64_t n = counter ? counter() : 0;
  dlclose(lib);
  return n;
}

std::span<const uint8_t> bytes_of(const std::string& model) {
  return {reinterpret_cast<const uint8_t*>(model.data()), model.size()};
}

OrtOptions with_ember(bool no_fallback) {
  OrtOptions o;
  o.plugin_ep = kEp;
  o.disable_cpu_ep_fallback = no_fallback;
  return o;
}

Tensor random_f32(Shape shape, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

Status bit_equal(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || !(got.shape() == want.shape()) ||
      (got.nbytes() && std::memcmp(got.data(), want.data(), got.nbytes()) != 0)) {
    return internal_error("Ember EP gave {}, ORT CPU {} (bits differ)", got.describe(), want.describe());
  }
  return Status::ok();
}

struct Case {
  std::string model;
  std::vector<std::pair<std::string, Tensor>> inputs;
  uint64_t nodes = 0;  // nodes of the model, all claimed by Ember
  bool exact = true;   // Ember's kernel gives ORT's bits
};

// Runs the case on plain ORT and on ORT + Ember (no CPU fallback): outputs
// agree, plain ORT leaves the counter alone, and each Ember run adds `nodes`.
void expect_case(const Case& c) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  auto plain = OrtSession::load_from_bytes(bytes_of(c.model));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  auto ember = OrtSession::load_from_bytes(bytes_of(c.model), with_ember(true));
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  std::vector<OrtInput> inputs;
  for (const auto& [name, value] : c.inputs) inputs.push_back({name, &value});
  const uint64_t before = executed_nodes();
  auto want = (*plain)->run(inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_EQ(executed_nodes(), before) << "a session without the EP ran nodes on Ember";
  for (int run = 1; run <= 2; ++run) {
    auto got = (*ember)->run(inputs);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_EQ(got->size(), want->size());
    for (size_t k = 0; k < want->size(); ++k) {
      Status s = c.exact ? bit_equal((*got)[k], (*want)[k]) : compare((*got)[k], (*want)[k], {1e-5, 1e-6});
      EXPECT_TRUE(s.is_ok()) << "output " << k << ": " << s.to_string();
    }
    EXPECT_EQ(executed_nodes(), before + run * c.nodes);
  }
}

size_t thread_count() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) n += entry.is_directory() ? 1 : 0;
  return n;
}

// Every round also runs a MatMul big enough to wake Ember's worker threads (two
// threads asked for), which ReleaseEpFactory must join before the library may go.
TEST(OrtEp, RegistersAndUnregisters25Times) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {256, 256});
  b.add_initializer("w", random_f32({256, 256}, 12));
  b.add_output("y", DType::kF32, {256, 256});
  b.add_node("MatMul", {"x", "w"}, {"y"});
  const std::string model = b.serialize();
  const Tensor x = random_f32({256, 256}, 13);
  const std::vector<OrtInput> inputs{{"x", &x}};
  ASSERT_TRUE(ep_device_names().is_ok());  // ORT's environment exists before counting threads
  const size_t threads_before = thread_count();
  for (int i = 0; i < 25; ++i) {
    Status s = register_ep_library(kRegistration, EMBER_ORT_EP_LIBRARY);
    ASSERT_TRUE(s.is_ok()) << "round " << i << ": " << s.to_string();
    EXPECT_TRUE(has_ember_device()) << "round " << i;
    {
      OrtOptions options = with_ember(true);
      auto session = OrtSession::load_from_bytes(bytes_of(model), options);
      ASSERT_TRUE(session.is_ok()) << session.status().to_string();
      auto out = (*session)->run(inputs);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      EXPECT_EQ(executed_nodes(), 1u) << "round " << i;
    }
    s = unregister_ep_library(kRegistration);
    ASSERT_TRUE(s.is_ok()) << "round " << i << ": " << s.to_string();
    EXPECT_FALSE(has_ember_device()) << "round " << i;
    EXPECT_EQ(thread_count(), threads_before) << "round " << i;
  }
}

TEST(OrtEp, AddWithBroadcastIsExact) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {2, 3, 4});
  b.add_input("y", DType::kF32, {4});
  b.add_output("z", DType::kF32, {2, 3, 4});
  b.add_node("Add", {"x", "y"}, {"z"});
  expect_case({b.serialize(), {{"x", random_f32({2, 3, 4}, 1)}, {"y", random_f32({4}, 2)}}, 1});
}

TEST(OrtEp, ReluIsExact) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {5, 7});
  b.add_output("y", DType::kF32, {5, 7});
  b.add_node("Relu", {"x"}, {"y"});
  expect_case({b.serialize(), {{"x", random_f32({5, 7}, 3)}}, 1});
}

TEST(OrtEp, MatMulWithInitializerWeight) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {3, 16});
  b.add_initializer("w", random_f32({16, 8}, 4));
  b.add_output("y", DType::kF32, {3, 8});
  b.add_node("MatMul", {"x", "w"}, {"y"});
  Case c{b.serialize(), {{"x", random_f32({3, 16}, 5)}}, 1};
  c.exact = false;  // another summation order than MLAS
  expect_case(c);
}

TEST(OrtEp, Softmax) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {4, 10});
  b.add_output("y", DType::kF32, {4, 10});
  b.add_node("Softmax", {"x"}, {"y"}, {attr_int("axis", -1)});
  Case c{b.serialize(), {{"x", random_f32({4, 10}, 6)}}, 1};
  c.exact = false;
  expect_case(c);
}

TEST(OrtEp, CastInt64ToFloatIsExact) {
  ModelBuilder b(17);
  b.add_input("x", DType::kI64, {6});
  b.add_output("y", DType::kF32, {6});
  b.add_node("Cast", {"x"}, {"y"}, {attr_int("to", static_cast<int64_t>(DType::kF32))});
  Tensor x = Tensor::allocate(DType::kI64, {6});
  const int64_t values[] = {0, -1, 7, 1LL << 40, -(1LL << 53) - 1, 123456789};
  std::copy(values, values + 6, x.data_as<int64_t>());
  expect_case({b.serialize(), {{"x", x}}, 1});
}

TEST(OrtEp, ChainIsOnePartition) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {3, 16});
  b.add_initializer("w", random_f32({16, 8}, 7));
  b.add_initializer("bias", random_f32({8}, 8));
  b.add_output("y", DType::kF32, {3, 8});
  // Not MatMul -> Add: ORT's basic level would fuse those into one Gemm first.
  b.add_node("MatMul", {"x", "w"}, {"m"});
  b.add_node("Relu", {"m"}, {"r"});
  b.add_node("Add", {"r", "bias"}, {"y"});
  Case c{b.serialize(), {{"x", random_f32({3, 16}, 9)}}, 3};
  c.exact = false;
  expect_case(c);
}

// Relu -> Det (no Ember kernel) -> Neg: ORT's CPU EP runs Det; both Ember
// nodes still run on Ember, in two partitions.
TEST(OrtEp, MixedChainClaimsBothSides) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {2, 3, 3});
  b.add_output("y", DType::kF32, {2});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("Det", {"r"}, {"d"});
  b.add_node("Neg", {"d"}, {"y"});
  const std::string model = b.serialize();
  auto strict = OrtSession::load_from_bytes(bytes_of(model), with_ember(true));
  EXPECT_FALSE(strict.is_ok()) << "Det was claimed, or ORT ignored session.disable_cpu_ep_fallback";
  auto plain = OrtSession::load_from_bytes(bytes_of(model));
  auto ember = OrtSession::load_from_bytes(bytes_of(model), with_ember(false));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  const Tensor x = random_f32({2, 3, 3}, 10);
  const std::vector<OrtInput> inputs{{"x", &x}};
  const uint64_t before = executed_nodes();
  auto want = (*plain)->run(inputs);
  auto got = (*ember)->run(inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  Status s = bit_equal((*got)[0], (*want)[0]);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(executed_nodes(), before + 2);
}

// r = Relu(x) feeds Add both directly and through LpNormalization (no Ember
// kernel): Relu and Add in one group would not be convex (ORT would then drop
// every claim), so they run as two partitions.
TEST(OrtEp, DiamondAroundUnsupportedNodeStaysConvex) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {3, 5});
  b.add_output("y", DType::kF32, {3, 5});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("LpNormalization", {"r"}, {"n"}, {attr_int("axis", -1), attr_int("p", 2)});
  b.add_node("Add", {"r", "n"}, {"y"});
  const std::string model = b.serialize();
  auto plain = OrtSession::load_from_bytes(bytes_of(model));
  auto ember = OrtSession::load_from_bytes(bytes_of(model), with_ember(false));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  const Tensor x = random_f32({3, 5}, 14);
  const std::vector<OrtInput> inputs{{"x", &x}};
  const uint64_t before = executed_nodes();
  auto want = (*plain)->run(inputs);
  auto got = (*ember)->run(inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  Status s = bit_equal((*got)[0], (*want)[0]);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(executed_nodes(), before + 2);
}

// Fresh outputs on every run: new values each time, and a new batch size once
// (the arena is recycled across runs, so a stale intermediate would show).
TEST(OrtEp, RepeatedRunsWithChangingInputs) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {-1, 8});
  b.add_input("y", DType::kF32, {8});
  b.add_initializer("scale", random_f32({8}, 11));
  b.add_output("z", DType::kF32, {-1, 8});
  b.add_node("Add", {"x", "y"}, {"s"});
  b.add_node("Relu", {"s"}, {"r"});
  b.add_node("Mul", {"r", "scale"}, {"z"});
  const std::string model = b.serialize();
  auto plain = OrtSession::load_from_bytes(bytes_of(model));
  auto ember = OrtSession::load_from_bytes(bytes_of(model), with_ember(true));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  const uint64_t before = executed_nodes();
  for (uint32_t run = 0; run < 6; ++run) {
    const int64_t rows = run == 3 ? 5 : 2;
    const Tensor x = random_f32({rows, 8}, 100 + run), y = random_f32({8}, 200 + run);
    const std::vector<OrtInput> inputs{{"x", &x}, {"y", &y}};
    auto want = (*plain)->run(inputs);
    auto got = (*ember)->run(inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    Status s = bit_equal((*got)[0], (*want)[0]);
    EXPECT_TRUE(s.is_ok()) << "run " << run << ": " << s.to_string();
  }
  EXPECT_EQ(executed_nodes(), before + 6 * 3);
}

}  // namespace
}  // namespace ember::ortref
