#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <thread>

#include "base/buffer.h"
#include "graph_builder.h"
#include "op_test_util.h"
#include "runtime/session.h"

// Counts operator new calls while g_counting is set, to check that a repeated run
// with unchanged shapes does not allocate.
static std::atomic<bool> g_counting{false};
static std::atomic<size_t> g_allocations{0};

void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace ember {
namespace {

using runtime::Session;
using test::GraphBuilder;
using test::make_tensor;
using test::values_of;

std::unique_ptr<Session> make_session(std::shared_ptr<ir::Graph> g, runtime::SessionOptions options = {}) {
  auto s = Session::create(std::move(g), options);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

std::shared_ptr<ir::Graph> unary_chain(int length, int64_t n) {
  GraphBuilder b;
  b.input("x", DType::kF32, {n});
  const char* ops[] = {"Relu", "Sigmoid", "Exp", "Neg", "Abs", "Tanh"};
  std::string prev = "x";
  for (int i = 0; i < length; ++i) {
    std::string out = i + 1 == length ? "y" : "t" + std::to_string(i);
    b.node(ops[i % 6], {prev}, {out});
    prev = out;
  }
  return b.output("y").build();
}

TEST(Runtime, UnaryChainComputesAndReusesOneBuffer) {
  constexpr int64_t n = 1000;
  // Unoptimized, so the chain stays six nodes (fused, it would be one).
  runtime::SessionOptions options;
  options.optimize = false;
  auto session = make_session(unary_chain(6, n), options);
  ASSERT_TRUE(session);
  std::vector<float> xs(n);
  for (int64_t i = 0; i < n; ++i) xs[static_cast<size_t>(i)] = static_cast<float>(i - 500) / 100.0f;
  Tensor x = make_tensor<float>({n}, xs);
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (int64_t i = 0; i < n; ++i) {
    double v = std::max(0.0, static_cast<double>(xs[static_cast<size_t>(i)]));
    v = std::tanh(std::fabs(-std::exp(1.0 / (1.0 + std::exp(-v)))));
    EXPECT_NEAR((*out)[0].data_as<float>()[i], v, 1e-5) << i;
  }
  // Five intermediates, each dead once the next op has read it: elementwise ops
  // run in place, so the arena holds a single buffer.
  EXPECT_EQ(session->stats().arena_bytes, align_up(n * sizeof(float)));
}

TEST(Runtime, OneSymbolIsOneSizeAcrossInputs) {
  GraphBuilder b;
  b.input("x", DType::kF32, {4, -1}).input("w", DType::kF32, {-1});
  b.node("Mul", {"x", "w"}, {"m"}).node("Sigmoid", {"m"}, {"y"});
  auto graph = b.output("y").build();
  // Name both symbolic dims "C".
  graph->value(graph->find_value("x")).shape[1].symbol = "C";
  graph->value(graph->find_value("w")).shape[0].symbol = "C";
  auto session = make_session(graph);
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({4, 1}, {1, 2, 3, 4});
  Tensor w = make_tensor<float>({5}, {1, 1, 1, 1, 1});
  std::vector<runtime::NamedInput> in = {{"x", &x}, {"w", &w}};
  auto out = session->run(in);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("'C'"), std::string::npos) << out.status().to_string();
  Tensor x5 = make_tensor<float>({4, 5}, std::vector<float>(20, 0.0f));
  std::vector<runtime::NamedInput> ok_in = {{"x", &x5}, {"w", &w}};
  EXPECT_TRUE(session->run(ok_in).is_ok());
}

TEST(Runtime, RepeatedRunWithSameShapesDoesNotAllocate) {
  auto session = make_session(unary_chain(10, 4096));
  ASSERT_TRUE(session);
  Tensor x = Tensor::allocate(DType::kF32, {4096});
  std::vector<const Tensor*> inputs = {&x};
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->run(inputs, outputs).is_ok());
  ASSERT_TRUE(session->run(inputs, outputs).is_ok());
  g_allocations = 0;
  g_counting = true;
  Status st = session->run(inputs, outputs);
  g_counting = false;
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(g_allocations.load(), 0u);
}

TEST(Runtime, ReplansOnlyWhenInputShapesChange) {
  GraphBuilder b;
  b.input("a", DType::kF32, {-1, 3}).input("b", DType::kF32, {3});
  auto session = make_session(b.node("Add", {"a", "b"}, {"c"}).output("c").build());
  ASSERT_TRUE(session);
  Tensor a2 = make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor a4 = make_tensor<float>({4, 3}, std::vector<float>(12, 1.0f));
  Tensor bias = make_tensor<float>({3}, {10, 20, 30});
  auto run = [&](const Tensor& a) {
    std::vector<runtime::NamedInput> in = {{"a", &a}, {"b", &bias}};
    auto out = session->run(in);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return out.is_ok() ? (*out)[0] : Tensor();
  };
  EXPECT_EQ(values_of<float>(run(a2)), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  run(a2);
  EXPECT_EQ(session->stats().plans_built, 1u);
  EXPECT_EQ(run(a4).shape(), (Shape{4, 3}));
  EXPECT_EQ(session->stats().plans_built, 2u);
  run(a2);
  EXPECT_EQ(session->stats().plans_built, 2u);
}

TEST(Runtime, ShapeTensorChainIsEvaluatedWhilePlanning) {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): the shape arithmetic runs
  // once per plan, and the Reshape is a static step.
  GraphBuilder b;
  b.input("x", DType::kF32, {-1, 2, 3});
  b.constant("zero", make_tensor<int64_t>({}, {0})).constant("minus_one", make_tensor<int64_t>({1}, {-1}));
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"batch"}, {test::attr_int("axis", 0)});
  b.node("Unsqueeze", {"batch", "zero"}, {"batch1"});
  b.node("Concat", {"batch1", "minus_one"}, {"shape"}, {test::attr_int("axis", 0)});
  b.node("Reshape", {"x", "shape"}, {"y0"});
  b.node("Relu", {"y0"}, {"y"});
  auto session = make_session(b.output("y").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({2, 2, 3}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12});
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 6}));
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{1, 0, 3, 0, 5, 0, 7, 0, 9, 0, 11, 0}));
  EXPECT_EQ(session->stats().dynamic_steps, 0u);
  EXPECT_EQ(session->stats().steps, 2u);  // Reshape (a view) and Relu
}

TEST(Runtime, DataDependentShapesRunDynamically) {
  GraphBuilder b;
  b.input("x", DType::kF32, {6});
  b.node("NonZero", {"x"}, {"idx"});
  b.node("Cast", {"idx"}, {"f"}, {test::attr_int("to", 1)});
  auto session = make_session(b.output("f").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({6}, {0, 1, 0, 2, 3, 0});
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  for (int i = 0; i < 3; ++i) {
    auto out = session->run(in);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ((*out)[0].shape(), (Shape{1, 3}));
    EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{1, 3, 4}));
  }
  EXPECT_EQ(session->stats().dynamic_steps, 2u);
}

TEST(Runtime, ZeroSizeTensorsFlowThrough) {
  GraphBuilder b;
  b.input("a", DType::kF32, {-1, 3}).input("b", DType::kF32, {3});
  b.node("Add", {"a", "b"}, {"c"}).node("Relu", {"c"}, {"d"});
  auto session = make_session(b.output("d").build());
  ASSERT_TRUE(session);
  Tensor a = Tensor(DType::kF32, {0, 3}, nullptr);
  Tensor bias = make_tensor<float>({3}, {1, 2, 3});
  std::vector<runtime::NamedInput> in = {{"a", &a}, {"b", &bias}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].shape(), (Shape{0, 3}));
}

TEST(Runtime, ConcurrentRunsOnOneSessionGiveTheirOwnResults) {
  GraphBuilder b;
  b.input("x", DType::kF32, {256});
  b.node("Mul", {"x", "x"}, {"sq"}).node("Add", {"sq", "x"}, {"y"});
  auto session = make_session(b.output("y").build());
  ASSERT_TRUE(session);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 300; ++iter) {
        float v = static_cast<float>(t * 1000 + iter);
        Tensor x = make_tensor<float>({256}, std::vector<float>(256, v));
        std::vector<const Tensor*> in = {&x};
        std::vector<Tensor> out;
        if (!session->run(in, out).is_ok()) {
          ++mismatches;
          continue;
        }
        for (int64_t i = 0; i < 256; ++i) {
          if (out[0].data_as<float>()[i] != v * v + v) ++mismatches;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// y = x * x + x over float32[n, 4] (n symbolic).
std::shared_ptr<ir::Graph> square_plus(int64_t rows) {
  GraphBuilder b;
  b.input("x", DType::kF32, {rows, 4});
  b.node("Mul", {"x", "x"}, {"sq"}).node("Add", {"sq", "x"}, {"y"});
  return b.output("y").build();
}

// square_plus(-1) prepared for x of float32[3, 4].
class PreparedRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    session = make_session(square_plus(-1));
    ASSERT_TRUE(session);
    auto p = session->prepare(in, planned);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    prepared = std::move(p).value();
  }

  std::unique_ptr<Session> session;
  Tensor x = Tensor::allocate(DType::kF32, {3, 4});
  std::vector<const Tensor*> in = {&x};
  std::vector<runtime::PlannedOutput> planned = std::vector<runtime::PlannedOutput>(1);
  std::unique_ptr<runtime::PreparedRun> prepared;
};

TEST_F(PreparedRunTest, RunsItsSignatureWithFreshDataAndWithoutAllocating) {
  EXPECT_EQ(planned[0].dtype, DType::kF32);
  EXPECT_TRUE(planned[0].known);
  EXPECT_EQ(planned[0].shape, (Shape{3, 4}));
  Tensor y = Tensor::allocate(DType::kF32, {3, 4});
  std::vector<Tensor*> out = {&y};
  for (int run = 0; run < 6; ++run) {
    for (int64_t i = 0; i < 12; ++i) x.data_as<float>()[i] = static_cast<float>(run * 100 + i);
    if (run == 5) {
      g_allocations = 0;
      g_counting = true;
    }
    Status st = prepared->run_bound(in, out);
    g_counting = false;
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    for (int64_t i = 0; i < 12; ++i) {
      const float v = static_cast<float>(run * 100 + i);
      EXPECT_EQ(y.data_as<float>()[i], v * v + v) << "run " << run << " element " << i;
    }
  }
  EXPECT_EQ(g_allocations.load(), 0u);
  // The session's other paths still plan other shapes.
  Tensor x2 = make_tensor<float>({1, 4}, {1, 2, 3, 4});
  std::vector<runtime::NamedInput> named = {{"x", &x2}};
  auto other = session->run(named);
  ASSERT_TRUE(other.is_ok()) << other.status().to_string();
  EXPECT_EQ(values_of<float>((*other)[0]), (std::vector<float>{2, 6, 12, 20}));
}

TEST_F(PreparedRunTest, OtherShapesAndWrongOutputsAreErrors) {
  Tensor x5 = Tensor::allocate(DType::kF32, {5, 4});
  Tensor y5 = Tensor::allocate(DType::kF32, {5, 4});
  std::vector<const Tensor*> in5 = {&x5};
  std::vector<Tensor*> out5 = {&y5};
  Status st = prepared->run_bound(in5, out5);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("differ from those this run was prepared for"), std::string::npos) << st.to_string();
  Tensor y_wrong = Tensor::allocate(DType::kF32, {4, 3});
  std::vector<Tensor*> out_wrong = {&y_wrong};
  st = prepared->run_bound(in, out_wrong);
  EXPECT_NE(st.to_string().find("is bound to"), std::string::npos) << st.to_string();
  std::vector<Tensor*> too_many = {&y_wrong, &y_wrong};
  st = prepared->run_bound(in, too_many);
  EXPECT_NE(st.to_string().find("expected 1 outputs, got 2"), std::string::npos) << st.to_string();
  // prepare() checks inputs against the model as run() does.
  Tensor bad = Tensor::allocate(DType::kF32, {3, 5});
  std::vector<const Tensor*> bad_in = {&bad};
  auto refused = session->prepare(bad_in, planned);
  EXPECT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().to_string().find("dimension 1 must be 4"), std::string::npos) << refused.status().to_string();
}

// One node reading an input twice and a constant: a prepared run of such a
// plan runs the kernel straight on the caller's tensors, and falls back to the
// general path for what that cannot do (an unbound output, an output over an
// input's bytes, zero-size inputs), with the same results.
TEST(PreparedRun, SingleNodePlansRunOnTheCallersTensors) {
  GraphBuilder b;
  b.input("x", DType::kF32, {-1});
  b.constant("c", make_tensor<float>({1}, {0.5f}));
  b.node("Mul", {"x", "x"}, {"sq"});
  auto session = make_session(b.output("sq").build());
  ASSERT_TRUE(session);
  GraphBuilder b2;
  b2.input("x", DType::kF32, {-1});
  b2.constant("c", make_tensor<float>({1}, {0.5f}));
  b2.node("Add", {"c", "x"}, {"y"});
  auto with_constant = make_session(b2.output("y").build());
  ASSERT_TRUE(with_constant);
  Tensor x = make_tensor<float>({4}, {1, -2, 3, 4});
  std::vector<const Tensor*> in = {&x};
  std::vector<runtime::PlannedOutput> planned(1);
  auto square = session->prepare(in, planned);
  auto add = with_constant->prepare(in, planned);
  ASSERT_TRUE(square.is_ok()) << square.status().to_string();
  ASSERT_TRUE(add.is_ok()) << add.status().to_string();
  Tensor y = Tensor::allocate(DType::kF32, {4});
  std::vector<Tensor*> out = {&y};
  for (int run = 0; run < 3; ++run) {
    x.data_as<float>()[0] = static_cast<float>(run);
    ASSERT_TRUE((*square)->run_bound(in, out).is_ok());
    EXPECT_EQ(values_of<float>(y), (std::vector<float>{static_cast<float>(run * run), 4, 9, 16})) << run;
    ASSERT_TRUE((*add)->run_bound(in, out).is_ok());
    EXPECT_EQ(values_of<float>(y), (std::vector<float>{run + 0.5f, -1.5f, 3.5f, 4.5f})) << run;
  }
  // An unbound output is computed and dropped.
  std::vector<Tensor*> dropped = {nullptr};
  EXPECT_TRUE((*add)->run_bound(in, dropped).is_ok());
  // An output over the input's bytes: the general path decides (Add may write in place over x).
  Tensor x2 = make_tensor<float>({4}, {1, 2, 3, 4});
  std::vector<const Tensor*> in2 = {&x2};
  Tensor alias(DType::kF32, {4}, x2.data());
  std::vector<Tensor*> over = {&alias};
  Status st = (*add)->run_bound(in2, over);
  if (st.is_ok()) {
    EXPECT_EQ(values_of<float>(x2), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));
  } else {
    EXPECT_NE(st.to_string().find("is bound to the buffer of input"), std::string::npos) << st.to_string();
  }
  // Zero-size inputs and outputs.
  Tensor empty(DType::kF32, {0}, nullptr);
  std::vector<const Tensor*> in0 = {&empty};
  auto add0 = with_constant->prepare(in0, planned);
  ASSERT_TRUE(add0.is_ok()) << add0.status().to_string();
  Tensor y0(DType::kF32, {0}, nullptr);
  std::vector<Tensor*> out0 = {&y0};
  EXPECT_TRUE((*add0)->run_bound(in0, out0).is_ok());
}

TEST(PreparedRun, DataDependentOutputsComeBackThroughRun) {
  GraphBuilder b;
  b.input("x", DType::kF32, {6});
  b.node("NonZero", {"x"}, {"idx"});
  auto session = make_session(b.output("idx").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({6}, {0, 1, 0, 2, 3, 0});
  std::vector<const Tensor*> in = {&x};
  std::vector<runtime::PlannedOutput> planned(1);
  auto prepared = session->prepare(in, planned);
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  EXPECT_FALSE(planned[0].known);
  EXPECT_EQ(planned[0].dtype, DType::kI64);
  std::vector<Tensor> out;
  ASSERT_TRUE((*prepared)->run(in, out).is_ok());
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{1, 3, 4}));
  x.data_as<float>()[0] = 7;
  ASSERT_TRUE((*prepared)->run(in, out).is_ok());
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 3, 4}));
}

// Each PreparedRun holds its own run state: prepared runs of one signature on
// several threads, and plain runs beside them, never see each other's values.
TEST(PreparedRun, ConcurrentPreparedRunsGiveTheirOwnResults) {
  auto session = make_session(square_plus(64));
  ASSERT_TRUE(session);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Tensor x = Tensor::allocate(DType::kF32, {64, 4});
      Tensor y = Tensor::allocate(DType::kF32, {64, 4});
      std::vector<const Tensor*> in = {&x};
      std::vector<Tensor*> out = {&y};
      std::vector<runtime::PlannedOutput> planned(1);
      auto prepared = session->prepare(in, planned);
      if (!prepared.is_ok()) {
        ++mismatches;
        return;
      }
      for (int iter = 0; iter < 300; ++iter) {
        const float v = static_cast<float>(t * 1000 + iter);
        for (int64_t i = 0; i < 256; ++i) x.data_as<float>()[i] = v;
        std::vector<Tensor> plain;
        Status st = t % 2 ? session->run(in, plain) : (*prepared)->run_bound(in, out);
        if (!st.is_ok()) {
          ++mismatches;
          continue;
        }
        const float* got = t % 2 ? plain[0].data_as<float>() : y.data_as<float>();
        for (int64_t i = 0; i < 256; ++i) mismatches += got[i] != v * v + v;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Runtime, GraphOutputThatIsAnInputOrConstantIsCopied) {
  GraphBuilder b;
  b.input("x", DType::kF32, {2});
  b.constant("c", make_tensor<float>({2}, {7, 8}));
  b.node("Identity", {"x"}, {"y"});
  auto session = make_session(b.output("x").output("c").output("y").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({2}, {1, 2});
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(values_of<float>((*out)[1]), (std::vector<float>{7, 8}));
  EXPECT_EQ(values_of<float>((*out)[2]), (std::vector<float>{1, 2}));
  EXPECT_NE((*out)[0].data(), x.data());
  // Bound outputs get the same values copied in.
  std::vector<Tensor> bound = {Tensor::allocate(DType::kF32, {2}), Tensor::allocate(DType::kF32, {2}),
                               Tensor::allocate(DType::kF32, {2})};
  std::vector<Tensor*> bound_ptrs = {&bound[0], &bound[1], &bound[2]};
  std::vector<const Tensor*> positional = {&x};
  Status st = session->run_bound(positional, bound_ptrs);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(values_of<float>(bound[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(values_of<float>(bound[1]), (std::vector<float>{7, 8}));
  EXPECT_EQ(values_of<float>(bound[2]), (std::vector<float>{1, 2}));
}

TEST(Runtime, ConstantSubgraphsAreFoldedAtLoad) {
  GraphBuilder b;
  b.input("x", DType::kF32, {3});
  b.constant("k", make_tensor<float>({3}, {1, 2, 3}));
  b.node("Mul", {"k", "k"}, {"k2"}).node("Add", {"x", "k2"}, {"y"});
  auto session = make_session(b.output("y").build());
  ASSERT_TRUE(session);
  EXPECT_EQ(session->graph().nodes.size(), 1u);
  Tensor x = make_tensor<float>({3}, {1, 1, 1});
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{2, 5, 10}));
}

TEST(Runtime, DeadNodesAreRemoved) {
  GraphBuilder b;
  b.input("x", DType::kF32, {3});
  b.node("Relu", {"x"}, {"y"}).node("Exp", {"x"}, {"unused"});
  auto session = make_session(b.output("y").build());
  ASSERT_TRUE(session);
  ASSERT_EQ(session->graph().nodes.size(), 1u);
  EXPECT_EQ(session->graph().nodes[0].op_type, "Relu");
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    GraphBuilder b;
    b.input("a", DType::kF32, {-1, 3});
    session_ = make_session(b.node("Relu", {"a"}, {"b"}).output("b").build());
    ASSERT_TRUE(session_);
  }
  std::string error_for(std::vector<runtime::NamedInput> in) {
    auto out = session_->run(in);
    EXPECT_FALSE(out.is_ok());
    return out.status().to_string();
  }
  std::unique_ptr<Session> session_;
};

TEST_F(BadInput, MissingInputIsNamed) { EXPECT_NE(error_for({}).find("input 'a' is missing"), std::string::npos); }

TEST_F(BadInput, WrongDtypeIsNamed) {
  Tensor t = make_tensor<int32_t>({1, 3}, {1, 2, 3});
  EXPECT_NE(error_for({{"a", &t}}).find("input 'a' must be float32, got int32"), std::string::npos);
}

TEST_F(BadInput, WrongRankIsNamed) {
  Tensor t = make_tensor<float>({3}, {1, 2, 3});
  EXPECT_NE(error_for({{"a", &t}}).find("input 'a' must have rank 2"), std::string::npos);
}

TEST_F(BadInput, WrongDimensionIsNamed) {
  Tensor t = make_tensor<float>({1, 4}, {1, 2, 3, 4});
  EXPECT_NE(error_for({{"a", &t}}).find("input 'a' dimension 1 must be 3"), std::string::npos);
}

TEST_F(BadInput, UnknownInputIsNamed) {
  Tensor t = make_tensor<float>({1, 3}, {1, 2, 3});
  EXPECT_NE(error_for({{"a", &t}, {"zzz", &t}}).find("unknown input 'zzz'"), std::string::npos);
}

TEST(Runtime, ShapeMismatchBetweenNodesNamesTheNode) {
  GraphBuilder b;
  b.input("a", DType::kF32, {-1}).input("b", DType::kF32, {-1});
  auto graph = b.node("Add", {"a", "b"}, {"c"}).output("c").build();
  // Independent sizes (the builder names both "d0", which would be one size).
  graph->value(graph->find_value("b")).shape[0].symbol = "other";
  auto session = make_session(graph);
  ASSERT_TRUE(session);
  Tensor a = make_tensor<float>({2}, {1, 2});
  Tensor c = make_tensor<float>({3}, {1, 2, 3});
  std::vector<runtime::NamedInput> in = {{"a", &a}, {"b", &c}};
  auto out = session->run(in);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("(Add)"), std::string::npos) << out.status().to_string();
}

TEST(Runtime, UnsupportedOpIsReportedAtLoad) {
  GraphBuilder b;
  b.input("a", DType::kF32, {2});
  auto s = Session::create(b.node("NoSuchOp", {"a"}, {"b"}).output("b").build());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(s.status().message().find("NoSuchOp"), std::string::npos);
}


// Regressions from review: each of these once gave a wrong answer or crashed.

TEST(RuntimeRegression, DynamicViewKeepsItsSourceBufferAlive) {
  // r = Reshape(a, shp) is dynamic (shp is an input) and views a's arena buffer;
  // w must not be placed over a while r is still to be read.
  GraphBuilder b;
  b.input("x", DType::kF32, {4}).input("shp", DType::kI64, {1});
  b.node("Relu", {"x"}, {"a"}).node("Reshape", {"a", "shp"}, {"r"});
  b.node("Neg", {"x"}, {"w"}).node("Add", {"r", "w"}, {"y"});
  auto session = make_session(b.output("y").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({4}, {1, 2, 3, 4});
  Tensor shp = make_tensor<int64_t>({1}, {4});
  std::vector<runtime::NamedInput> in = {{"x", &x}, {"shp", &shp}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{0, 0, 0, 0}));
}

TEST(RuntimeRegression, NoInPlaceWhenAnotherInputSharesTheBuffer) {
  GraphBuilder b;
  b.input("x", DType::kF32, {2});
  b.constant("idx", make_tensor<int64_t>({2}, {1, 0}));
  b.node("Relu", {"x"}, {"a"}).node("ScatterElements", {"a", "idx", "a"}, {"s"}).node("Neg", {"s"}, {"y"});
  auto session = make_session(b.output("y").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({2}, {1, 2});
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<float>((*out)[0]), (std::vector<float>{-2, -1}));
}

TEST(RuntimeRegression, DynamicValueListedTwiceAsOutput) {
  GraphBuilder b;
  b.input("x", DType::kF32, {6});
  b.node("NonZero", {"x"}, {"idx"});
  auto session = make_session(b.output("idx").output("idx").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({6}, {0, 1, 0, 2, 3, 0});
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  auto out = session->run(in);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<int64_t>((*out)[0]), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(values_of<int64_t>((*out)[1]), (std::vector<int64_t>{1, 3, 4}));
}

TEST(RuntimeRegression, KernelBuiltForOneDtypeRejectsAnother) {
  GraphBuilder b;
  b.input("x", DType::kUndefined, {4});
  auto session = make_session(b.node("Neg", {"x"}, {"y"}).output("y").build());
  ASSERT_TRUE(session);
  Tensor xf = make_tensor<float>({4}, {1, 2, 3, 4});
  Tensor xd = make_tensor<double>({4}, {1, 2, 3, 4});
  std::vector<runtime::NamedInput> in1 = {{"x", &xf}}, in2 = {{"x", &xd}};
  ASSERT_TRUE(session->run(in1).is_ok());
  auto out = session->run(in2);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("built for input dtypes (float32), now given (float64)"), std::string::npos)
      << out.status().to_string();
}

TEST(RuntimeRegression, OutputBufferThatIsAlsoAnInputIsNotReused) {
  GraphBuilder b;
  b.input("x", DType::kF32, {2, 2});
  auto session = make_session(b.node("Transpose", {"x"}, {"y"}).output("y").build());
  ASSERT_TRUE(session);
  Tensor x = make_tensor<float>({2, 2}, {1, 2, 3, 4});
  std::vector<Tensor> outs;
  const Tensor* first[] = {&x};
  ASSERT_TRUE(session->run(first, outs).is_ok());
  const Tensor* again[] = {&outs[0]};
  ASSERT_TRUE(session->run(again, outs).is_ok());
  EXPECT_EQ(values_of<float>(outs[0]), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(BadInput, InputWithShapeButNoDataIsRejected) {
  Tensor t(DType::kF32, {100000, 3}, nullptr);
  EXPECT_NE(error_for({{"a", &t}}).find("input 'a' has no data"), std::string::npos);
}

TEST_F(BadInput, NegativeDimensionIsRejected) {
  Tensor t(DType::kF32, {-2, 3}, nullptr);
  EXPECT_NE(error_for({{"a", &t}}).find("negative dimension"), std::string::npos);
}

// A run per shape, largest first: every later plan runs in the first run's arena.
TEST(Runtime, PlansOfDifferentShapesShareOneArena) {
  GraphBuilder b;
  b.input("x", DType::kF32, {-1});
  b.node("Relu", {"x"}, {"a"}).node("Neg", {"x"}, {"b"});
  b.node("Concat", {"a", "b"}, {"y"}, {test::attr_int("axis", 0)});
  auto s = make_session(b.output("y").build());
  size_t first = 0;
  for (int64_t n = 4096; n >= 256; n -= 256) {
    Tensor x = Tensor::allocate(DType::kF32, {n});
    std::vector<runtime::NamedInput> in = {{"x", &x}};
    ASSERT_TRUE(s->run(in).is_ok());
    const runtime::ExecutorStats stats = s->stats();
    if (n == 4096) first = stats.idle_arena_capacity;
    EXPECT_EQ(stats.idle_arena_capacity, first) << n;
  }
  EXPECT_GE(first, size_t{2 * 4096 * sizeof(float)});  // a and b
  EXPECT_EQ(s->stats().plans_built, 16u);
}

// Weights of 4, 6 and 3 floats; w1 is read twice and counts once.
TEST(Runtime, LoadProgressCountsEachWeightOnceAndEnds) {
  GraphBuilder b;
  b.input("x", DType::kF32, {2, 2});
  b.constant("w1", make_tensor<float>({2, 2}, {1, 2, 3, 4}));
  b.constant("w2", make_tensor<float>({2, 3}, {1, 0, 1, 0, 1, 0}));
  b.constant("w3", make_tensor<float>({3}, {5, 6, 7}));
  b.node("MatMul", {"x", "w1"}, {"a"}).node("MatMul", {"a", "w1"}, {"b"}).node("MatMul", {"b", "w2"}, {"c"});
  b.node("Transpose", {"c"}, {"d"}).node("MatMul", {"w3", "d"}, {"y"});
  std::vector<std::pair<int64_t, int64_t>> calls;
  runtime::SessionOptions options;
  options.progress = [&](int64_t done, int64_t total) { calls.emplace_back(done, total); };
  ASSERT_NE(make_session(b.output("y").build(), options), nullptr);
  const std::vector<std::pair<int64_t, int64_t>> expected = {{0, 52}, {16, 52}, {40, 52}, {52, 52}};
  EXPECT_EQ(calls, expected);
}

TEST(RuntimeRegression, HugeConstantIsNotFoldedAtLoad) {
  // ConstantOfShape with a constant 2^40-element shape: folding must not try to allocate it.
  GraphBuilder b;
  b.input("x", DType::kF32, {1});
  b.constant("shape", make_tensor<int64_t>({2}, {1 << 20, 1 << 20}));
  b.node("ConstantOfShape", {"shape"}, {"big"}).node("Add", {"x", "big"}, {"y"});
  auto session = Session::create(b.output("y").build());
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  Tensor x = make_tensor<float>({1}, {1});
  std::vector<runtime::NamedInput> in = {{"x", &x}};
  auto out = (*session)->run(in);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("too large"), std::string::npos) << out.status().to_string();
}

}  // namespace
}  // namespace ember
