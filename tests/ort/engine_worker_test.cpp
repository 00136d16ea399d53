// `ember serve`'s engine thread (server/engine_worker.h) under load: request
// threads submit jobs (n choices, greedy and sampled, stop strings), wait on
// their events and cancel some midway, while others join and leave. Every job
// that runs to its end gets the text, finish reasons and usage it gets when
// it runs alone; every cancelled one ends "cancelled"; and the KV pool is
// empty at the end. Also built with ThreadSanitizer (ctest tsan.EngineWorker).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/buffer.h"
#include "genai/engine.h"
#include "genai/tokenizer.h"
#include "greedy_reference.h"
#include "server/engine_worker.h"

namespace ember::server {
namespace {

using fixtures::DecoderFixtureSpec;

struct Outcome {
  std::vector<std::string> text;  // per choice
  std::vector<std::string> finish_reason;
  std::vector<std::string> error;
  int64_t completion_tokens = 0;
  bool operator==(const Outcome&) const = default;
};

// Waits for every event of `job`; with `cancel_after` > 0, cancels it after that many.
Outcome collect(Job& job, int cancel_after = 0) {
  Outcome out;
  out.text.resize(static_cast<size_t>(job.n()));
  out.finish_reason.resize(static_cast<size_t>(job.n()));
  out.error.resize(static_cast<size_t>(job.n()));
  std::vector<ChoiceEvent> events;
  int seen = 0;
  while (!job.done()) {
    events.clear();
    if (!job.wait(events, std::chrono::milliseconds(100))) continue;
    for (ChoiceEvent& e : events) {
      out.text[static_cast<size_t>(e.choice)] += e.text;
      if (e.finished) {
        out.finish_reason[static_cast<size_t>(e.choice)] = e.finish_reason;
        out.error[static_cast<size_t>(e.choice)] = e.error;
      }
      if (++seen == cancel_after) job.cancel();
    }
  }
  out.completion_tokens = job.usage().completion_tokens;
  return out;
}

struct Fixture {
  std::string dir = fixtures::make_test_fixture([] {
    DecoderFixtureSpec s = fixtures::spec("qwen2", "int4");
    s.max_length = 256;
    return s;
  }());
  genai::Tokenizer tokenizer = [] {
    auto t = genai::Tokenizer::from_file(EMBER_SOURCE_DIR "/models/default/tokenizer.json");
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    return std::move(*t);
  }();
  GenerationMetrics metrics;

  std::unique_ptr<EngineWorker> worker(genai::EngineOptions options = {}) {
    auto engine = genai::Engine::load(dir, options);
    EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
    if (!engine.is_ok()) return nullptr;
    return std::make_unique<EngineWorker>(std::move(*engine), tokenizer, metrics);
  }
};

// Every fourth job is cancelled: greedy and 150 tokens long, alternately as
// soon as it is admitted and after its second event.
bool cancelled(int i) { return i % 4 == 3; }

// Job `i` of a varied set: prompt lengths 1-60, 4-24 new tokens, n of 1-3,
// greedy or sampled, some with a stop string.
JobSpec job_spec(int i, int vocab) {
  JobSpec s;
  if (cancelled(i)) {
    s.prompt = fixtures::prompt_tokens(5 + i, vocab, i);
    s.params.max_new_tokens = 150;
    s.n = 1 + i % 2;
    return s;
  }
  s.prompt = fixtures::prompt_tokens(1 + (i * 13) % 60, vocab, i);
  s.params.max_new_tokens = 4 + (i * 7) % 21;
  s.n = 1 + i % 3;
  if (i % 2 == 1) {
    s.params.sampling.greedy = false;
    s.params.sampling.temperature = 0.8f;
    s.params.sampling.top_k = 40;
    s.params.sampling.seed = 1000 + static_cast<uint64_t>(i);
  }
  if (i % 5 == 4) s.stop = {"e"};
  return s;
}

TEST(EngineWorker, ConcurrentJobsEqualJobsAloneAndCancelledOnesEnd) {
  Fixture f;
  genai::EngineOptions options;
  options.block_size = 4;
  options.kv_tokens = 256;  // a few long jobs fill it: 3-10 preemptions a run here
  auto worker = f.worker(options);
  ASSERT_TRUE(worker);
  const int vocab = worker->engine().config().vocab_size;
  constexpr int kThreads = 6, kJobsPerThread = 4, kJobs = kThreads * kJobsPerThread;

  std::vector<Outcome> alone(kJobs);
  for (int i = 0; i < kJobs; ++i) {
    if (cancelled(i)) continue;
    auto job = worker->submit(job_spec(i, vocab));
    ASSERT_TRUE(job.is_ok()) << job.status().to_string();
    alone[static_cast<size_t>(i)] = collect(**job);
  }

  std::vector<Outcome> together(kJobs);
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kJobsPerThread; ++k) {
        const int i = t + kThreads * k;
        auto job = worker->submit(job_spec(i, vocab));
        if (!job.is_ok()) {
          ++refused;
          continue;
        }
        if (cancelled(i) && i % 8 == 3) (*job)->cancel();
        together[static_cast<size_t>(i)] = collect(**job, cancelled(i) ? 2 : 0);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(refused.load(), 0);

  for (int i = 0; i < kJobs; ++i) {
    const Outcome& got = together[static_cast<size_t>(i)];
    if (cancelled(i)) {
      // A cancel after two events races the engine thread: on a loaded machine
      // the job may have run its 150 tokens first. One at admission cannot lose.
      const int64_t full = 150 * static_cast<int64_t>(got.text.size());
      const bool ran_out = i % 8 != 3 && got.completion_tokens == full;
      for (const std::string& reason : got.finish_reason) {
        EXPECT_EQ(reason, ran_out ? "length" : "cancelled") << "job " << i;
      }
      if (!ran_out) {
        EXPECT_LT(got.completion_tokens, full) << "job " << i;
      }
      continue;
    }
    EXPECT_EQ(got, alone[static_cast<size_t>(i)]) << "job " << i;
    for (const std::string& reason : got.finish_reason) EXPECT_TRUE(reason == "length" || reason == "stop") << reason;
  }
  EXPECT_EQ(worker->active_jobs(), 0);
  // The worker publishes its stats after each step; wait for the step that ended the last job.
  for (int tries = 0; tries < 100 && worker->stats().running > 0; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const genai::EngineStats stats = worker->stats();
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.waiting, 0);
  EXPECT_EQ(stats.pool.referenced_blocks, 0);
}

void* failing_allocate(size_t, size_t) { return nullptr; }

// A step that fails (every allocation does, as at the memory limit) ends each
// running choice with finish reason "error" and the step's message; once
// allocations work again the worker serves the next job as before.
TEST(EngineWorker, AFailedStepEndsItsChoicesWithTheError) {
  Fixture f;
  auto worker = f.worker();
  ASSERT_TRUE(worker);
  const int vocab = worker->engine().config().vocab_size;
  JobSpec spec;
  spec.prompt = fixtures::prompt_tokens(20, vocab, 1);
  spec.params.max_new_tokens = 150;
  spec.n = 2;
  set_allocate_hook(failing_allocate);
  auto failing = worker->submit(spec);
  ASSERT_TRUE(failing.is_ok()) << failing.status().to_string();
  const Outcome failed = collect(**failing);
  set_allocate_hook(nullptr);
  for (size_t c = 0; c < 2; ++c) {
    EXPECT_EQ(failed.finish_reason[c], "error") << "choice " << c;
    EXPECT_NE(failed.error[c].find("the engine's step failed"), std::string::npos) << failed.error[c];
    EXPECT_NE(failed.error[c].find("out of memory"), std::string::npos) << failed.error[c];
  }
  spec.params.max_new_tokens = 6;
  auto next = worker->submit(spec);
  ASSERT_TRUE(next.is_ok()) << next.status().to_string();
  const Outcome served = collect(**next);
  for (size_t c = 0; c < 2; ++c) {
    EXPECT_EQ(served.finish_reason[c], "length") << "choice " << c;
    EXPECT_EQ(served.error[c], "") << "choice " << c;
  }
  EXPECT_EQ(served.completion_tokens, 12);
}

}  // namespace
}  // namespace ember::server
