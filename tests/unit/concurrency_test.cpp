// Sessions under concurrent callers: runs of many input shapes from several
// threads on one session, and several sessions at once, each bit-identical to
// the same run made alone. The graph mixes the kernel families a decoder
// layer uses (MatMul, bias, SiLU, residual, LayerNormalization, attention-like
// scores with Softmax), with symbolic batch and sequence dims, so concurrent
// runs plan, allocate and split work over the shared pool at different shapes.
// scripts/test_sanitized.sh runs this suite under ThreadSanitizer.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "graph_builder.h"
#include "op_test_util.h"
#include "runtime/session.h"

namespace ember {
namespace {

using test::GraphBuilder;

constexpr int64_t kWidth = 64;

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kF32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

// x: float[batch, seq, 64] -> norm: float[batch, seq, 64], attn: float[batch, seq, seq].
std::shared_ptr<ir::Graph> layer_graph(uint32_t weight_seed) {
  GraphBuilder b;
  b.input("x", DType::kF32, {-1, -1, kWidth});
  b.constant("w1", random_tensor({kWidth, 2 * kWidth}, weight_seed));
  b.constant("b1", random_tensor({2 * kWidth}, weight_seed + 1));
  b.constant("w2", random_tensor({2 * kWidth, kWidth}, weight_seed + 2));
  b.constant("gamma", random_tensor({kWidth}, weight_seed + 3));
  b.constant("beta", random_tensor({kWidth}, weight_seed + 4));
  b.node("MatMul", {"x", "w1"}, {"h0"})
      .node("Add", {"h0", "b1"}, {"h1"})
      .node("Sigmoid", {"h1"}, {"gate"})
      .node("Mul", {"h1", "gate"}, {"silu"})
      .node("MatMul", {"silu", "w2"}, {"h2"})
      .node("Add", {"h2", "x"}, {"res"})
      .node("LayerNormalization", {"res", "gamma", "beta"}, {"norm"}, {test::attr_int("axis", -1)})
      .node("Transpose", {"norm"}, {"norm_t"}, {test::attr_ints("perm", {0, 2, 1})})
      .node("MatMul", {"norm", "norm_t"}, {"scores"})
      .node("Softmax", {"scores"}, {"attn"}, {test::attr_int("axis", -1)});
  return b.output("norm").output("attn").build();
}

std::unique_ptr<runtime::Session> make_session(uint32_t weight_seed, int num_threads) {
  runtime::SessionOptions options;
  options.num_threads = num_threads;
  auto session = runtime::Session::create(layer_graph(weight_seed), options);
  EXPECT_TRUE(session.is_ok()) << session.status().to_string();
  return session.is_ok() ? std::move(session).value() : nullptr;
}

// (batch, seq): single tokens, odd lengths past every SIMD width, prefill-sized.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 1}, {1, 7}, {2, 16}, {3, 33}, {1, 64}, {4, 5}, {2, 1}};

struct Case {
  Tensor x;
  std::vector<Tensor> expected;  // the outputs of a run made alone
};

std::vector<Case> cases_alone(const runtime::Session& session) {
  std::vector<Case> cases;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    Case c{random_tensor({kShapes[i].first, kShapes[i].second, kWidth}, 100 + static_cast<uint32_t>(i)), {}};
    std::vector<const Tensor*> in = {&c.x};
    Status st = session.run(in, c.expected);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    cases.push_back(std::move(c));
  }
  return cases;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// `runs` runs on `session` from this thread, walking the cases from `offset`;
// returns how many failed or differed from the run made alone.
int run_and_compare(const runtime::Session& session, const std::vector<Case>& cases, int runs, size_t offset) {
  int mismatches = 0;
  std::vector<Tensor> out;
  for (int r = 0; r < runs; ++r) {
    const Case& c = cases[(offset + static_cast<size_t>(r)) % cases.size()];
    std::vector<const Tensor*> in = {&c.x};
    if (!session.run(in, out).is_ok() || out.size() != c.expected.size()) {
      ++mismatches;
      continue;
    }
    for (size_t k = 0; k < out.size(); ++k) mismatches += same_bits(out[k], c.expected[k]) ? 0 : 1;
  }
  return mismatches;
}

TEST(Concurrency, ThreadsRunningOneSessionAtManyShapesMatchRunsAlone) {
  for (int num_threads : {1, 2}) {
    auto session = make_session(7, num_threads);
    ASSERT_TRUE(session);
    const std::vector<Case> cases = cases_alone(*session);
    constexpr int kThreads = 4, kRuns = 21;
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { mismatches[t] = run_and_compare(*session, cases, kRuns, static_cast<size_t>(t)); });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(mismatches[t], 0) << "thread " << t << ", sessions of " << num_threads << " threads";
    }
  }
}

TEST(Concurrency, SessionsRunningAtOnceMatchRunsAlone) {
  // Three sessions (two of one graph, one of other weights), two callers each.
  std::vector<std::unique_ptr<runtime::Session>> sessions;
  for (uint32_t seed : {7u, 7u, 11u}) sessions.push_back(make_session(seed, 2));
  std::vector<std::vector<Case>> cases;
  for (const auto& s : sessions) {
    ASSERT_TRUE(s);
    cases.push_back(cases_alone(*s));
  }
  ASSERT_FALSE(same_bits(cases[0][1].expected[0], cases[2][1].expected[0])) << "the weights differ, so must outputs";
  constexpr int kCallersPerSession = 2, kRuns = 14;
  std::vector<int> mismatches(sessions.size() * kCallersPerSession, 0);
  std::vector<std::thread> threads;
  for (size_t s = 0; s < sessions.size(); ++s) {
    for (int c = 0; c < kCallersPerSession; ++c) {
      size_t slot = s * kCallersPerSession + static_cast<size_t>(c);
      threads.emplace_back([&, s, slot] { mismatches[slot] = run_and_compare(*sessions[s], cases[s], kRuns, slot); });
    }
  }
  for (auto& th : threads) th.join();
  for (size_t i = 0; i < mismatches.size(); ++i) {
    EXPECT_EQ(mismatches[i], 0) << "session " << i / kCallersPerSession << ", caller " << i % kCallersPerSession;
  }
}

TEST(Concurrency, PreparedRunsOfDifferentShapesAtOnceMatchRunsAlone) {
  auto session = make_session(7, 2);
  ASSERT_TRUE(session);
  const std::vector<Case> cases = cases_alone(*session);
  std::vector<int> mismatches(cases.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cases.size(); ++i) {
    threads.emplace_back([&, i] {
      const Tensor* in[] = {&cases[i].x};
      std::vector<runtime::PlannedOutput> planned(2);
      auto prepared = session->prepare(in, planned);
      if (!prepared.is_ok()) {
        mismatches[i] = 1;
        return;
      }
      std::vector<Tensor> bound = {Tensor::allocate(planned[0].dtype, planned[0].shape),
                                   Tensor::allocate(planned[1].dtype, planned[1].shape)};
      Tensor* outs[] = {&bound[0], &bound[1]};
      for (int r = 0; r < 10; ++r) {
        if (!(*prepared)->run_bound(in, outs).is_ok()) {
          ++mismatches[i];
          continue;
        }
        for (size_t k = 0; k < bound.size(); ++k) mismatches[i] += same_bits(bound[k], cases[i].expected[k]) ? 0 : 1;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(mismatches[i], 0) << "shape case " << i;
}

}  // namespace
}  // namespace ember
