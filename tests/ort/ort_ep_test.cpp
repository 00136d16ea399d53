// The Ember plugin execution provider (libember_ort_ep.so) inside ONNX Runtime
// 1.30: registration, claiming, and outputs against ORT's own CPU EP (single
// ops, chains, mixed partitions, f16/bf16, int32/int64, dynamic shapes,
// initializer weights, the decoder fixtures). Counting, not assuming: every
// run must add to the library's exported counter exactly the nodes ORT's
// assignment info (session.record_ep_graph_assignment_info) gives Ember.
// tests/ort_ep/python_smoke.py covers Python's onnxruntime and If nodes.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "compare.h"
#include "decoder_fixture.h"
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
  o.record_ep_assignment = true;
  return o;
}

// Nodes ORT assigned to each EP of `session` (Session_GetEpGraphAssignmentInfo).
struct Assignment {
  uint64_t ember = 0, other = 0;
  std::string other_ops;  // "CPUExecutionProvider:Det ..." for the nodes Ember did not get
};

Assignment assignment(const OrtSession& session) {
  Assignment a;
  auto subgraphs = session.ep_assignment();
  EXPECT_TRUE(subgraphs.is_ok()) << subgraphs.status().to_string();
  if (!subgraphs.is_ok()) return a;
  for (const EpAssignedSubgraph& sg : *subgraphs) {
    const bool ember = sg.ep_name == kEp;
    (ember ? a.ember : a.other) += sg.node_names.size();
    if (!ember) {
      for (const std::string& op : sg.op_types) a.other_ops += sg.ep_name + ":" + op + " ";
    }
  }
  return a;
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
  uint64_t nodes = 0;  // nodes ORT must assign to Ember
  bool exact = true;   // Ember's kernel gives ORT's bits
  uint64_t other = 0;  // nodes left to ORT's CPU EP (then CPU fallback stays on)
};

// Runs the case on plain ORT and on ORT + Ember (no CPU fallback unless nodes
// are left to ORT): outputs agree, plain ORT leaves the counter alone, and each
// Ember run adds `nodes`.
void expect_case(const Case& c) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  auto plain = OrtSession::load_from_bytes(bytes_of(c.model));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  auto ember = OrtSession::load_from_bytes(bytes_of(c.model), with_ember(c.other == 0));
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  const Assignment assigned = assignment(**ember);
  EXPECT_EQ(assigned.ember, c.nodes) << "ORT assigned to others: " << assigned.other_ops;
  EXPECT_EQ(assigned.other, c.other) << assigned.other_ops;
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
    EXPECT_EQ(executed_nodes(), before + run * assigned.ember) << "run " << run;
  }
}

size_t thread_count() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) n += entry.is_directory() ? 1 : 0;
  return n;
}

// The process's thread count once it has settled at `expected`, or after 2 s:
// a joined thread can still be listed in /proc/self/task for a moment (join
// returns when the kernel clears its tid, before the task is reaped), while a
// leaked one stays.
size_t settled_thread_count(size_t expected) {
  size_t n = thread_count();
  for (int i = 0; i < 200 && n != expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = thread_count();
  }
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
    EXPECT_EQ(settled_thread_count(threads_before), threads_before) << "round " << i;
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

// One region of interest, [batch 0, x1, y1, x2, y2], for MaxRoiPool: one of the
// two default-domain ops Ember has no kernel for (with Multinomial, which is random).
Tensor one_roi(float x2, float y2) {
  Tensor rois = Tensor::allocate(DType::kF32, {1, 5});
  const float box[5] = {0.f, 0.f, 0.f, x2, y2};
  std::copy(box, box + 5, rois.data_as<float>());
  return rois;
}

// Relu -> MaxRoiPool (no Ember kernel) -> Neg: ORT's CPU EP runs MaxRoiPool;
// both Ember nodes still run on Ember, in two partitions.
TEST(OrtEp, MixedChainClaimsBothSides) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {1, 2, 4, 4});
  b.add_initializer("rois", one_roi(3.f, 3.f));
  b.add_output("y", DType::kF32, {1, 2, 2, 2});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("MaxRoiPool", {"r", "rois"}, {"p"}, {attr_ints("pooled_shape", {2, 2})});
  b.add_node("Neg", {"p"}, {"y"});
  const std::string model = b.serialize();
  {
    Registered reg;
    ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
    auto strict = OrtSession::load_from_bytes(bytes_of(model), with_ember(true));
    EXPECT_FALSE(strict.is_ok()) << "MaxRoiPool was claimed, or ORT ignored session.disable_cpu_ep_fallback";
  }
  Case c{model, {{"x", random_f32({1, 2, 4, 4}, 10)}}, 2};
  c.other = 1;
  expect_case(c);
}

// r = Relu(x) feeds Add both directly and through MaxRoiPool (no Ember kernel;
// one 2x2 region pooled to 2x2 keeps r's shape): Relu and Add in one group would
// not be convex (ORT would then drop every claim), so they run as two partitions.
TEST(OrtEp, DiamondAroundUnsupportedNodeStaysConvex) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {1, 3, 2, 2});
  b.add_initializer("rois", one_roi(1.f, 1.f));
  b.add_output("y", DType::kF32, {1, 3, 2, 2});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("MaxRoiPool", {"r", "rois"}, {"n"}, {attr_ints("pooled_shape", {2, 2})});
  b.add_node("Add", {"r", "n"}, {"y"});
  Case c{b.serialize(), {{"x", random_f32({1, 3, 2, 2}, 14)}}, 2};
  c.other = 1;
  expect_case(c);
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
  const Assignment a = assignment(**ember);
  EXPECT_EQ(a.ember, 3u);
  EXPECT_EQ(executed_nodes(), before + 6 * a.ember);
}

// Concurrent Run()s of one session: threads with different batch sizes meet in
// one Ember node (a Run that finds its first runner busy takes a spare with its
// own prepared run and arena), and every result is ORT CPU's, bit for bit.
void expect_concurrent_runs(const std::string& model, uint64_t nodes) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  auto plain = OrtSession::load_from_bytes(bytes_of(model));
  auto ember = OrtSession::load_from_bytes(bytes_of(model), with_ember(true));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  ASSERT_EQ(assignment(**ember).ember, nodes);
  constexpr int kThreads = 4, kRuns = 150;
  const uint64_t before = executed_nodes();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int run = 0; run < kRuns; ++run) {
        const int64_t rows = 1 + (t + run) % 3;
        const Tensor x = random_f32({rows, 64}, static_cast<uint32_t>(1000 * t + run));
        const std::vector<OrtInput> inputs{{"x", &x}};
        auto want = (*plain)->run(inputs);
        auto got = (*ember)->run(inputs);
        if (!want.is_ok() || !got.is_ok() || !bit_equal((*got)[0], (*want)[0]).is_ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(executed_nodes(), before + nodes * kThreads * kRuns);
}

// Three nodes: one compiled partition.
TEST(OrtEp, ConcurrentRunsOfAPartitionGiveTheirOwnResults) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {-1, 64});
  b.add_initializer("scale", random_f32({64}, 15));
  b.add_output("z", DType::kF32, {-1, 64});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("Mul", {"r", "scale"}, {"m"});
  b.add_node("Add", {"m", "x"}, {"z"});
  expect_concurrent_runs(b.serialize(), 3);
}

// One node with an initializer: a kernel of the EP's registry.
TEST(OrtEp, ConcurrentRunsOfASingleNodeGiveTheirOwnResults) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {-1, 64});
  b.add_initializer("scale", random_f32({64}, 16));
  b.add_output("z", DType::kF32, {-1, 64});
  b.add_node("Mul", {"x", "scale"}, {"z"});
  expect_concurrent_runs(b.serialize(), 1);
}

// The non-vacuity half of the counting: sessions without the EP, on a model
// Ember would claim whole, leave the freshly registered library's counter at 0.
TEST(OrtEp, CounterStaysZeroWithoutTheEp) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {4, 4});
  b.add_output("y", DType::kF32, {4, 4});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("Neg", {"r"}, {"y"});
  OrtOptions recorded;
  recorded.record_ep_assignment = true;
  auto plain = OrtSession::load_from_bytes(bytes_of(b.serialize()), recorded);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ(assignment(**plain).ember, 0u);
  const Tensor x = random_f32({4, 4}, 15);
  const std::vector<OrtInput> inputs{{"x", &x}};
  for (int run = 0; run < 3; ++run) ASSERT_TRUE((*plain)->run(inputs).is_ok());
  EXPECT_EQ(executed_nodes(), 0u);
}

// a = Relu(x), c = Neg(y), d = Add(c, a), e = Mul(a, c): grouping d with c and
// e with a gives two convex groups that feed each other (a -> d, c -> e), a
// cycle once fused, which fails the session; all four must form one group.
TEST(OrtEp, GroupsNeverFeedEachOther) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {6});
  b.add_input("y", DType::kF32, {6});
  b.add_output("d", DType::kF32, {6});
  b.add_output("e", DType::kF32, {6});
  b.add_node("Relu", {"x"}, {"a"});
  b.add_node("Neg", {"y"}, {"c"});
  b.add_node("Add", {"c", "a"}, {"d"});
  b.add_node("Mul", {"a", "c"}, {"e"});
  expect_case({b.serialize(), {{"x", random_f32({6}, 16)}, {"y", random_f32({6}, 17)}}, 4});
}

// Bits of 16-bit floats: equal, or both NaN (a NaN's payload is not specified).
Status same_16bit_floats(const Tensor& got, const Tensor& want, DType dtype) {
  if (got.dtype() != want.dtype() || !(got.shape() == want.shape())) {
    return internal_error("got {}, want {}", got.describe(), want.describe());
  }
  const auto* g = static_cast<const uint16_t*>(got.data());
  const auto* w = static_cast<const uint16_t*>(want.data());
  for (int64_t i = 0; i < got.numel(); ++i) {
    auto is_nan = [&](uint16_t v) {
      return dtype == DType::kF16 ? (v & 0x7c00) == 0x7c00 && (v & 0x3ff) : (v & 0x7f80) == 0x7f80 && (v & 0x7f);
    };
    if (g[i] != w[i] && !(is_nan(g[i]) && is_nan(w[i]))) {
      return internal_error("element {}: 0x{:04x}, want 0x{:04x} ({} elements)", i, g[i], w[i], got.numel());
    }
  }
  return Status::ok();
}

uint16_t round_to_16bit(float v, DType dtype) {
  return dtype == DType::kF16 ? Float16::from_float(v) : BFloat16::from_float(v);
}
float widen_16bit(uint16_t v, DType dtype) { return dtype == DType::kF16 ? Float16::to_float(v) : BFloat16::to_float(v); }

// Random 16-bit values and the specials (+-0, +-Inf, NaN, subnormals, values
// whose sum or product overflows), as the 16-bit tensor and its exact f32 copy.
std::pair<Tensor, Tensor> inputs_16bit(DType dtype, int64_t n, uint32_t seed) {
  Tensor h = Tensor::allocate(dtype, {n}), f = Tensor::allocate(DType::kF32, {n});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  const float tiny = dtype == DType::kF16 ? 3e-6f : 2e-39f;  // subnormal in each format
  const float big = dtype == DType::kF16 ? 40000.f : 2e38f;
  const float specials[] = {0.f, -0.f, INFINITY, -INFINITY, NAN, tiny, -tiny, big, -big, 1.f, 0.5f, 3.f};
  for (int64_t i = 0; i < n; ++i) {
    const float v = i < 12 ? specials[i] : dist(rng);
    const uint16_t bits = round_to_16bit(v, dtype);
    static_cast<uint16_t*>(h.data())[i] = bits;
    f.data_as<float>()[i] = widen_16bit(bits, dtype);
  }
  return {std::move(h), std::move(f)};
}

// One f16/bf16 op through ORT + Ember against ORT's f32 run of the same op
// rounded to the 16-bit type. For +, -, *, / and sqrt the f32 result rounded once
// more is the correctly rounded 16-bit result (24 >= 2 x 11 + 2 significand bits,
// so the double rounding is innocuous), and Relu, Neg, Abs are exact, so Ember's
// output must have exactly these bits. ORT's own CPU EP lacks most bf16 kernels,
// hence the f32 oracle for both types.
void expect_16bit_op(const std::string& op, int arity, DType dtype) {
  SCOPED_TRACE(op + " " + std::string(dtype_name(dtype)));
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  constexpr int64_t kN = 1037;  // tails at every vector width
  auto model = [&](DType t) {
    ModelBuilder b(17);
    std::vector<std::string> names;
    for (int k = 0; k < arity; ++k) {
      names.push_back(fmt::format("x{}", k));
      b.add_input(names.back(), t, {kN});
    }
    b.add_output("y", t, {kN});
    b.add_node(op, names, {"y"});
    return b.serialize();
  };
  auto ember = OrtSession::load_from_bytes(bytes_of(model(dtype)), with_ember(true));
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  auto plain = OrtSession::load_from_bytes(bytes_of(model(DType::kF32)));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  std::vector<std::pair<Tensor, Tensor>> values;
  for (int k = 0; k < arity; ++k) values.push_back(inputs_16bit(dtype, kN, 30 + static_cast<uint32_t>(k)));
  // The second operand's specials are rotated so that Inf meets Inf, 0 and NaN.
  if (arity == 2) {
    for (Tensor* t : {&values[1].first, &values[1].second}) {
      auto* bytes = static_cast<uint8_t*>(t->data());
      const size_t size = dtype_size(t->dtype());
      std::rotate(bytes, bytes + 3 * size, bytes + 12 * size);
    }
  }
  std::vector<OrtInput> in16, in32;
  for (int k = 0; k < arity; ++k) {
    in16.push_back({fmt::format("x{}", k), &values[static_cast<size_t>(k)].first});
    in32.push_back({fmt::format("x{}", k), &values[static_cast<size_t>(k)].second});
  }
  auto want32 = (*plain)->run(in32);
  ASSERT_TRUE(want32.is_ok()) << want32.status().to_string();
  Tensor want = Tensor::allocate(dtype, {kN});
  for (int64_t i = 0; i < kN; ++i) {
    static_cast<uint16_t*>(want.data())[i] = round_to_16bit((*want32)[0].data_as<float>()[i], dtype);
  }
  const uint64_t before = executed_nodes();
  auto got = (*ember)->run(in16);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  Status s = same_16bit_floats((*got)[0], want, dtype);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(assignment(**ember).ember, 1u);
  EXPECT_EQ(executed_nodes(), before + 1);
}

TEST(OrtEp, Float16ElementwiseIsExact) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) expect_16bit_op(op, 2, DType::kF16);
  for (const char* op : {"Relu", "Neg", "Abs", "Sqrt"}) expect_16bit_op(op, 1, DType::kF16);
}

TEST(OrtEp, BFloat16ElementwiseIsExact) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) expect_16bit_op(op, 2, DType::kBF16);
  for (const char* op : {"Relu", "Neg", "Abs", "Sqrt"}) expect_16bit_op(op, 1, DType::kBF16);
}

template <typename T>
Tensor integers(DType dtype, Shape shape, std::initializer_list<T> values) {
  Tensor t = Tensor::allocate(dtype, shape);
  std::copy(values.begin(), values.end(), t.data_as<T>());
  return t;
}

// int64 Add/Mul/Greater/Where and an int32 Gather (int64 indices, one negative)
// then Mul: one partition of six nodes, bit-exact.
TEST(OrtEp, Int32AndInt64Chain) {
  ModelBuilder b(17);
  b.add_input("a", DType::kI64, {2, 3});
  b.add_input("b", DType::kI64, {3});
  b.add_input("table", DType::kI32, {4, 2});
  b.add_input("idx", DType::kI64, {3});
  b.add_output("w", DType::kI64, {2, 3});
  b.add_output("g2", DType::kI32, {3, 2});
  b.add_node("Add", {"a", "b"}, {"s"});
  b.add_node("Mul", {"s", "a"}, {"m"});
  b.add_node("Greater", {"s", "m"}, {"cond"});
  b.add_node("Where", {"cond", "s", "m"}, {"w"});
  b.add_node("Gather", {"table", "idx"}, {"g"}, {attr_int("axis", 0)});
  b.add_node("Mul", {"g", "g"}, {"g2"});
  Case c{b.serialize(),
         {{"a", integers<int64_t>(DType::kI64, {2, 3}, {-3, 0, 7, 1LL << 33, -(1LL << 31), 5})},
          {"b", integers<int64_t>(DType::kI64, {3}, {2, -9, 1LL << 20})},
          {"table", integers<int32_t>(DType::kI32, {4, 2}, {1, -2, 30000, 4, -46341, 6, 7, 0})},
          {"idx", integers<int64_t>(DType::kI64, {3}, {2, -1, 0})}},
         6};
  expect_case(c);
}

// Symbolic batch and sequence dims: three shapes in a row (and the first again)
// on one session, each bit-equal to ORT's CPU EP.
TEST(OrtEp, DynamicShapesOnOneSession) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  ModelBuilder b(17);
  b.add_input_dims("x", DType::kF32, {ir::Dim{-1, "batch"}, ir::Dim{-1, "seq"}, ir::Dim{8, ""}});
  b.add_initializer("bias", random_f32({8}, 18));
  b.add_output_unshaped("y", DType::kF32);
  b.add_node("Add", {"x", "bias"}, {"s"});
  b.add_node("Relu", {"s"}, {"r"});
  b.add_node("Transpose", {"r"}, {"t"}, {attr_ints("perm", {0, 2, 1})});
  b.add_node("ReduceMax", {"t"}, {"y"}, {attr_ints("axes", {2}), attr_int("keepdims", 0)});
  const std::string model = b.serialize();
  auto plain = OrtSession::load_from_bytes(bytes_of(model));
  auto ember = OrtSession::load_from_bytes(bytes_of(model), with_ember(true));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  // ORT's basic optimizations may fold the Transpose first: its count is the one.
  const Assignment a = assignment(**ember);
  EXPECT_GT(a.ember, 0u);
  EXPECT_EQ(a.other, 0u) << a.other_ops;
  const uint64_t before = executed_nodes();
  const std::vector<Shape> shapes{{1, 3, 8}, {4, 1, 8}, {2, 5, 8}, {1, 3, 8}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Tensor x = random_f32(shapes[k], 40 + static_cast<uint32_t>(k));
    const std::vector<OrtInput> inputs{{"x", &x}};
    auto want = (*plain)->run(inputs);
    auto got = (*ember)->run(inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    Status s = bit_equal((*got)[0], (*want)[0]);
    EXPECT_TRUE(s.is_ok()) << "shape " << k << ": " << s.to_string();
  }
  EXPECT_EQ(executed_nodes(), before + shapes.size() * a.ember);
}

TEST(OrtEp, GemmWithInitializerWeightAndBias) {
  ModelBuilder b(17);
  b.add_input("x", DType::kF32, {5, 24});
  b.add_initializer("w", random_f32({10, 24}, 19));
  b.add_initializer("c", random_f32({10}, 20));
  b.add_output("y", DType::kF32, {5, 10});
  b.add_node("Gemm", {"x", "w", "c"}, {"y"},
             {attr_int("transB", 1), attr_float("alpha", 0.5f), attr_float("beta", 2.f)});
  Case c{b.serialize(), {{"x", random_f32({5, 24}, 21)}}, 1};
  c.exact = false;  // another summation order than MLAS
  expect_case(c);
}

// The plugin passes only fixed-size element types across ORT's boundary: the two
// Casts through STRING are declined for their dtype and run on ORT's CPU EP,
// Relu and Neg on Ember.
TEST(OrtEp, NodeDeclinedForItsDtype) {
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  ModelBuilder b(19);
  b.add_input("x", DType::kF32, {9});
  b.add_output("y", DType::kF32, {9});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("Cast", {"r"}, {"s"}, {attr_int("to", static_cast<int64_t>(DType::kString))});
  b.add_node("Cast", {"s"}, {"f"}, {attr_int("to", static_cast<int64_t>(DType::kF32))});
  b.add_node("Neg", {"f"}, {"y"});
  const std::string model = b.serialize();
  auto strict = OrtSession::load_from_bytes(bytes_of(model), with_ember(true));
  EXPECT_FALSE(strict.is_ok()) << "a string Cast was claimed";
  auto plain = OrtSession::load_from_bytes(bytes_of(model));
  auto ember = OrtSession::load_from_bytes(bytes_of(model), with_ember(false));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(ember.is_ok()) << ember.status().to_string();
  const Assignment a = assignment(**ember);
  EXPECT_EQ(a.ember, 2u);
  EXPECT_EQ(a.other_ops, "CPUExecutionProvider::Cast CPUExecutionProvider::Cast ");
  const Tensor x = random_f32({9}, 22);
  const std::vector<OrtInput> inputs{{"x", &x}};
  const uint64_t before = executed_nodes();
  auto want = (*plain)->run(inputs);
  auto got = (*ember)->run(inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  Status s = bit_equal((*got)[0], (*want)[0]);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(executed_nodes(), before + a.ember);
}

// A float8 round trip (FLOAT8E4M3FN, saturating): every node on Ember, ORT's bits.
TEST(OrtEp, Float8CastsRunOnEmber) {
  ModelBuilder b(19);
  b.add_input("x", DType::kF32, {9});
  b.add_output("y", DType::kF32, {9});
  b.add_node("Relu", {"x"}, {"r"});
  b.add_node("Cast", {"r"}, {"f8"}, {attr_int("to", 17)});  // TensorProto.FLOAT8E4M3FN
  b.add_node("Cast", {"f8"}, {"f"}, {attr_int("to", static_cast<int64_t>(DType::kF32))});
  b.add_node("Neg", {"f"}, {"y"});
  expect_case(Case{b.serialize(), {{"x", random_f32({9}, 22)}}, 4});
}

// Decoder fixtures of tools/make_decoder_fixtures.py through ORT + Ember with
// CPU fallback disabled: the session must load (every node claimed, the rotary
// cache If of phi3 included), and a prefill plus decode steps give ORT CPU's
// logits within the whole-model tolerance, each run counted node for node.
void check_fixture(const fixtures::DecoderFixtureSpec& spec, int prompt_length, int decode_steps) {
  const std::string name = fixtures::fixture_name(spec);
  const std::filesystem::path dir = std::filesystem::path(EMBER_BINARY_DIR) / "ort_ep_fixtures" / name;
  Status made = fixtures::make_decoder_fixture(spec, EMBER_SOURCE_DIR "/tools/make_decoder_fixtures.py", dir.string());
  ASSERT_TRUE(made.is_ok()) << made.to_string();
  auto config = fixtures::read_decoder_config(dir.string());
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  const std::string model = (dir / "model.onnx").string();
  Registered reg;
  ASSERT_TRUE(reg.status().is_ok()) << reg.status().to_string();
  auto plain = OrtSession::load(model);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  auto ember = OrtSession::load(model, with_ember(true));
  ASSERT_TRUE(ember.is_ok()) << name << " does not load with CPU fallback disabled: " << ember.status().to_string();
  const Assignment a = assignment(**ember);
  EXPECT_GT(a.ember, 0u);
  EXPECT_EQ(a.other, 0u) << a.other_ops;
  std::vector<std::vector<int64_t>> prompt(1);
  for (int i = 0; i < prompt_length; ++i) prompt[0].push_back((7 + 31 * i) % (config->vocab - 3));
  fixtures::DecoderFeeds ember_feeds(*config, prompt), ort_feeds(*config, prompt);
  const double tolerance = decoder_logits_tolerance(spec.weights == "int4", config->layers);
  for (int step = 0; step <= decode_steps; ++step) {
    auto run = [](const OrtSession& session, const fixtures::DecoderFeeds& feeds) {
      std::vector<OrtInput> in;
      for (const auto& i : feeds.inputs()) in.push_back({i.name, i.tensor});
      return session.run(in);
    };
    const uint64_t before = executed_nodes();
    auto want = run(**plain, ort_feeds);
    ASSERT_TRUE(want.is_ok()) << name << " step " << step << ": " << want.status().to_string();
    ASSERT_EQ(executed_nodes(), before) << "plain ORT ran nodes on Ember";
    auto got = run(**ember, ember_feeds);
    ASSERT_TRUE(got.is_ok()) << name << " step " << step << ": " << got.status().to_string();
    EXPECT_EQ(executed_nodes(), before + a.ember) << name << " step " << step;
    ASSERT_EQ(got->front().shape(), want->front().shape()) << name << " step " << step;
    Status agree = check_logits(compare_logits(got->front(), want->front()), tolerance);
    ASSERT_TRUE(agree.is_ok()) << name << " step " << step << " (past " << ort_feeds.past_length()
                               << "): " << agree.to_string();
    // ORT's greedy token goes to both; each carries its own present.* forward.
    const Tensor& logits = want->front();
    const int64_t vocab = logits.dim(2);
    const float* last = logits.data_as<float>() + (logits.dim(1) - 1) * vocab;
    const std::vector<int64_t> next{std::max_element(last, last + vocab) - last};
    ember_feeds.advance(next, std::vector<Tensor>(std::make_move_iterator(got->begin() + 1),
                                                  std::make_move_iterator(got->end())));
    ort_feeds.advance(next, std::vector<Tensor>(std::make_move_iterator(want->begin() + 1),
                                                std::make_move_iterator(want->end())));
  }
}

fixtures::DecoderFixtureSpec fixture(const char* family, const char* weights, const char* attention = "gqa") {
  fixtures::DecoderFixtureSpec s;
  s.family = family;
  s.weights = weights;
  s.attention = attention;
  return s;
}

TEST(OrtEpFixtures, LlamaInt4) { check_fixture(fixture("llama", "int4"), 12, 3); }
TEST(OrtEpFixtures, Qwen2Int4) { check_fixture(fixture("qwen2", "int4"), 12, 3); }
TEST(OrtEpFixtures, Qwen3Int4) { check_fixture(fixture("qwen3", "int4"), 12, 3); }
TEST(OrtEpFixtures, Gemma2Fp32) { check_fixture(fixture("gemma2", "fp32"), 12, 3); }
TEST(OrtEpFixtures, MistralInt4) { check_fixture(fixture("mistral", "int4"), 12, 3); }
// Plain ONNX ops (MatMul, Softmax, Concat of past and new K/V); Ember's first
// partitioner made two groups that fed each other here.
TEST(OrtEpFixtures, OptimumFp32) { check_fixture(fixture("optimum", "fp32"), 12, 3); }
TEST(OrtEpFixtures, LlamaFp32MultiHeadAttention) { check_fixture(fixture("llama", "fp32", "mha"), 12, 3); }
// The rotary caches come from an If that Ember claims whole; 30 + 4 tokens
// cross original_length 32, so both branches run.
TEST(OrtEpFixtures, Phi3Int4) { check_fixture(fixture("phi3", "int4"), 30, 4); }
TEST(OrtEpFixtures, Phi3Fp32MultiHeadAttention) { check_fixture(fixture("phi3", "fp32", "mha"), 30, 4); }

}  // namespace
}  // namespace ember::ortref
