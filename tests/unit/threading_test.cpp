#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/cpu_topology.h"
#include "threading/scratch.h"
#include "threading/thread_pool.h"

namespace ember::threading {
namespace {

// Records which thread ran each index; checks every index ran exactly once.
void expect_exact_cover(int64_t n, int64_t grain, int threads) {
  ScopedThreadLimit limit(threads);
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int> bad_ranges{0};
  parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    if (begin >= end || end > n) bad_ranges.fetch_add(1);
    if (end != n && (end - begin) % grain != 0) bad_ranges.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  EXPECT_EQ(bad_ranges.load(), 0) << "n=" << n << " grain=" << grain;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i << " n=" << n;
}

TEST(ThreadPool, CoversEveryIndexOnceWithGrainMultiples) {
  for (int threads : {1, 2, 3, 4}) {
    for (int64_t n : {0, 1, 7, 16, 17, 100, 1000, 4097}) {
      for (int64_t grain : {1, 8, 64}) expect_exact_cover(n, grain, threads);
    }
  }
}

TEST(ThreadPool, SmallWorkStaysOnTheCallingThread) {
  ScopedThreadLimit limit(4);
  const std::thread::id caller = std::this_thread::get_id();
  bool other_thread = false;
  int calls = 0;
  parallel_for(100, 100, [&](int64_t begin, int64_t end) {
    ++calls;
    other_thread |= std::this_thread::get_id() != caller;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(other_thread);
}

TEST(ThreadPool, UsesWorkersWhenAllowed) {
  ScopedThreadLimit limit(2);
  const std::thread::id caller = std::this_thread::get_id();
  // Each range waits until another thread has started one, so the job finishes
  // only if a worker really joins (a parked worker must be woken).
  std::atomic<int> started{0};
  std::atomic<bool> saw_worker{false};
  parallel_for(2, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) saw_worker = true;
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::this_thread::get_id() == caller && !saw_worker.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(saw_worker.load());
}

TEST(ThreadPool, OneThreadLimitRunsInline) {
  ScopedThreadLimit limit(1);
  EXPECT_EQ(max_threads(), 1);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> foreign{0};
  parallel_for(1 << 16, 1, [&](int64_t, int64_t) { foreign += std::this_thread::get_id() != caller; });
  EXPECT_EQ(foreign.load(), 0);
}

TEST(ThreadPool, NestedCallsRunInlineAndLimitsRestore) {
  {
    ScopedThreadLimit outer(3);
    EXPECT_EQ(max_threads(), 3);
    {
      ScopedThreadLimit inner(2);
      EXPECT_EQ(max_threads(), 2);
    }
    EXPECT_EQ(max_threads(), 3);
    std::atomic<int> inner_threads_seen{0};
    std::atomic<int64_t> total{0};
    parallel_for(64, 8, [&](int64_t begin, int64_t end) {
      inner_threads_seen = std::max(inner_threads_seen.load(), max_threads());
      parallel_for(end - begin, 1, [&](int64_t b, int64_t e) { total += e - b; });
    });
    EXPECT_EQ(inner_threads_seen.load(), 1);
    EXPECT_EQ(total.load(), 64);
  }
  EXPECT_EQ(max_threads(), default_num_threads());
}

TEST(ThreadPool, ManyCallersAtOnce) {
  // Callers whose jobs overlap share the workers; every job still completes
  // exactly once.
  std::vector<std::thread> callers;
  std::atomic<int64_t> sum{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      ScopedThreadLimit limit(2);
      for (int rep = 0; rep < 200; ++rep) {
        parallel_for(1000, 10, [&](int64_t begin, int64_t end) { sum += end - begin; });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(sum.load(), 4 * 200 * 1000);
}

TEST(ThreadPool, ManyBackToBackJobs) {
  ScopedThreadLimit limit(2);
  int64_t total = 0;
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 20000; ++rep) {
    parallel_for(64, 16, [&](int64_t begin, int64_t end) { sum += end - begin; });
    total += 64;
  }
  EXPECT_EQ(sum.load(), total);
}

TEST(ThreadPool, LimitHoldsWhenABiggerJobRanBefore) {
  // A worker woken for an 8-thread job that joins the next, 2-thread job late
  // must not take part in it.
  int worst = 0;
  for (int rep = 0; rep < 2000; ++rep) {
    {
      ScopedThreadLimit wide(8);
      parallel_for(64, 1, [](int64_t, int64_t) {});
    }
    ScopedThreadLimit narrow(2);
    std::mutex m;
    std::vector<std::thread::id> ids;
    parallel_for(64, 1, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lock(m);
      if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end()) {
        ids.push_back(std::this_thread::get_id());
      }
    });
    worst = std::max(worst, static_cast<int>(ids.size()));
  }
  EXPECT_LE(worst, 2);
}

TEST(ThreadPool, ExceptionOnTheCallerEndsTheJobCleanly) {
  ScopedThreadLimit limit(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int64_t> done{0};
  // Workers are slow, so the caller surely claims a range of its own and throws
  // while a worker may still be inside the job.
  EXPECT_THROW(parallel_for(1 << 12, 1, [&](int64_t begin, int64_t end) {
                 if (std::this_thread::get_id() == caller) throw std::runtime_error("kernel failed");
                 std::this_thread::sleep_for(std::chrono::milliseconds(2));
                 done += end - begin;
               }),
               std::runtime_error);
  EXPECT_EQ(max_threads(), 2) << "the caller is no longer inside a job";
  std::atomic<int64_t> sum{0};
  parallel_for(1000, 10, [&](int64_t begin, int64_t end) { sum += end - begin; });
  EXPECT_EQ(sum.load(), 1000);
}

// Waits (up to 5 s, so that a broken pool fails instead of hanging) until
// `done` returns true.
template <class Done>
bool wait_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// The threads that ran a job's ranges, and how often each index ran.
struct JobRecord {
  explicit JobRecord(int64_t n) : hits(static_cast<size_t>(n)) {}
  std::mutex mutex;
  std::vector<std::thread::id> threads;
  std::vector<std::atomic<int>> hits;
  std::atomic<int> foreign{0};  // distinct threads other than the caller

  void ran(int64_t begin, int64_t end, std::thread::id caller) {
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    const std::thread::id self = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(mutex);
    if (std::find(threads.begin(), threads.end(), self) != threads.end()) return;
    threads.push_back(self);
    if (self != caller) foreign.fetch_add(1);
  }
  bool covered_once() const {
    return std::all_of(hits.begin(), hits.end(), [](const std::atomic<int>& h) { return h.load() == 1; });
  }
};

PoolStats stats_since(const PoolStats& before) {
  PoolStats now = pool_stats();
  now.jobs -= before.jobs;
  now.concurrent_jobs -= before.concurrent_jobs;
  now.no_free_worker -= before.no_free_worker;
  now.alone -= before.alone;
  now.helpers_wanted -= before.helpers_wanted;
  now.helpers_joined -= before.helpers_joined;
  return now;
}

TEST(ThreadPool, ConcurrentCallersEachGetWorkers) {
  {
    ScopedThreadLimit wide(5);  // at least 4 workers: room for two jobs of 2 helpers
    parallel_for(64, 1, [](int64_t, int64_t) {});
  }
  ASSERT_GE(pool_stats().workers, 4);
  const PoolStats before = pool_stats();
  // Each range waits until both jobs have a worker, so both finish early only
  // if the two jobs ran at once with workers of their own (a worker is in one
  // job at a time).
  JobRecord a(6), b(6);
  const auto both_helped = [&] { return a.foreign.load() > 0 && b.foreign.load() > 0; };
  const auto caller = [&](JobRecord& record) {
    ScopedThreadLimit limit(3);
    const std::thread::id self = std::this_thread::get_id();
    parallel_for(6, 1, [&](int64_t begin, int64_t end) {
      record.ran(begin, end, self);
      wait_until(both_helped);
    });
  };
  std::thread ta(caller, std::ref(a)), tb(caller, std::ref(b));
  ta.join();
  tb.join();
  EXPECT_TRUE(both_helped()) << "workers in job a: " << a.foreign.load() << ", in job b: " << b.foreign.load();
  EXPECT_TRUE(a.covered_once());
  EXPECT_TRUE(b.covered_once());
  EXPECT_LE(a.threads.size(), 3u);
  EXPECT_LE(b.threads.size(), 3u);
  const PoolStats delta = stats_since(before);
  EXPECT_EQ(delta.jobs, 2u);
  EXPECT_EQ(delta.concurrent_jobs, 1u) << "the second job opened while the first was open";
  EXPECT_EQ(delta.no_free_worker, 0u);
  EXPECT_EQ(delta.alone, 0u);
  EXPECT_EQ(delta.helpers_wanted, 4u);
  EXPECT_GE(delta.helpers_joined, 2u);
}

TEST(ThreadPool, StatsCountAJobThatFoundEveryWorkerBusy) {
  shutdown_pool();  // the next job starts exactly the 2 workers it may use
  const PoolStats before = pool_stats();
  // Job a holds both workers until job b has ended, so b runs alone.
  JobRecord a(6), b(1000);
  std::atomic<bool> b_done{false};
  std::thread ta([&] {
    ScopedThreadLimit limit(3);
    const std::thread::id self = std::this_thread::get_id();
    parallel_for(6, 1, [&](int64_t begin, int64_t end) {
      a.ran(begin, end, self);
      wait_until([&] { return b_done.load(); });
    });
  });
  ASSERT_TRUE(wait_until([&] { return a.foreign.load() == 2; })) << "job a's two workers never joined";
  {
    ScopedThreadLimit limit(2);
    const std::thread::id self = std::this_thread::get_id();
    parallel_for(1000, 10, [&](int64_t begin, int64_t end) { b.ran(begin, end, self); });
  }
  b_done = true;
  ta.join();
  EXPECT_TRUE(a.covered_once());
  EXPECT_TRUE(b.covered_once());
  EXPECT_EQ(b.foreign.load(), 0);
  const PoolStats delta = stats_since(before);
  EXPECT_EQ(delta.workers, 2);
  EXPECT_EQ(delta.jobs, 2u);
  EXPECT_EQ(delta.concurrent_jobs, 1u);
  EXPECT_EQ(delta.no_free_worker, 1u) << "job b found both workers in job a";
  EXPECT_EQ(delta.alone, 1u) << "job b";
  EXPECT_EQ(delta.helpers_wanted, 3u);
  EXPECT_EQ(delta.helpers_joined, 2u) << "job a's";
}

TEST(ThreadPool, AWorkerMovesToAnotherOpenJobWhenItsJobRunsOut) {
  shutdown_pool();
  // Job a holds both workers until job b is open; b's caller then waits in its
  // first range for a worker, which can only be one of a's once a ends.
  JobRecord a(6), b(4);
  std::atomic<bool> b_open{false};
  std::thread ta([&] {
    ScopedThreadLimit limit(3);
    const std::thread::id self = std::this_thread::get_id();
    parallel_for(6, 1, [&](int64_t begin, int64_t end) {
      a.ran(begin, end, self);
      wait_until([&] { return b_open.load(); });
    });
  });
  ASSERT_TRUE(wait_until([&] { return a.foreign.load() == 2; })) << "job a's two workers never joined";
  const PoolStats before = pool_stats();
  {
    ScopedThreadLimit limit(2);
    const std::thread::id self = std::this_thread::get_id();
    parallel_for(4, 1, [&](int64_t begin, int64_t end) {
      b.ran(begin, end, self);
      if (std::this_thread::get_id() != self) return;
      b_open = true;
      wait_until([&] { return b.foreign.load() > 0; });
    });
  }
  ta.join();
  EXPECT_EQ(b.foreign.load(), 1) << "no worker of job a moved on to job b";
  EXPECT_TRUE(a.covered_once());
  EXPECT_TRUE(b.covered_once());
  const PoolStats delta = stats_since(before);
  EXPECT_EQ(delta.no_free_worker, 1u);
  EXPECT_EQ(delta.alone, 0u);
}

// A range that throws (an allocation past the memory limit) on a worker ends
// the job and the exception leaves parallel_for on the caller; the pool then
// runs the next job whole. Every range throws on a worker thread, so the test
// does not depend on which thread took which range.
TEST(ThreadPool, AnExceptionOnAWorkerReachesTheCaller) {
  ScopedThreadLimit limit(2);
  int thrown_on_workers = 0;
  for (int attempt = 0; attempt < 50; ++attempt) {
    const std::thread::id caller = std::this_thread::get_id();
    try {
      parallel_for(64, 1, [&](int64_t, int64_t) {
        if (std::this_thread::get_id() != caller) throw std::runtime_error("worker");
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // leaves ranges for a worker
      });
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "worker");
      ++thrown_on_workers;
    }
    std::vector<std::atomic<int>> hits(100);
    parallel_for(100, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  EXPECT_GT(thrown_on_workers, 0) << "no worker ever joined in 50 jobs";
}

TEST(ThreadPool, ManyConcurrentCallersLoseNoRange) {
  // Callers with different limits open and close jobs at once, more callers
  // than cores: every index of every job runs exactly once, no job uses more
  // threads than its limit, and nothing deadlocks.
  constexpr int kCallers = 6;
  constexpr int kJobs = 1000;
  const PoolStats before = pool_stats();
  std::atomic<int> bad_jobs{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < kJobs; ++rep) {
        const int threads = 2 + (t + rep) % 3;
        const int64_t n = 1 + (rep * 397 + t * 131) % 3000;
        const int64_t grain = rep % 3 == 0 ? 1 : rep % 3 == 1 ? 7 : 64;
        ScopedThreadLimit limit(threads);
        JobRecord record(n);
        const std::thread::id self = std::this_thread::get_id();
        parallel_for(n, grain, [&](int64_t begin, int64_t end) { record.ran(begin, end, self); });
        if (!record.covered_once() || static_cast<int>(record.threads.size()) > threads) bad_jobs.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(bad_jobs.load(), 0);
  const PoolStats delta = stats_since(before);
  EXPECT_LE(delta.jobs, uint64_t{kCallers * kJobs});
  EXPECT_LE(delta.helpers_joined, delta.helpers_wanted);
  EXPECT_LE(delta.alone, delta.jobs);
}

// ---- scratch ----

TEST(Scratch, AWorkerFirstUsingAnIdAllocatesNothing) {
  // The flake this guards against: a worker that woke late in every warm-up
  // run first ran a GEMM range in a later run and grew its pack buffer there.
  static const ScratchId id = new_scratch_id();
  constexpr size_t kBytes = 300 * 1024;
  shutdown_pool();
  ScopedThreadLimit limit(2);
  parallel_for(2, 1, [](int64_t, int64_t) {});  // starts the worker
  auto* first = static_cast<unsigned char*>(scratch(id, kBytes));  // the caller's "first run"
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  std::fill(first, first + kBytes, 1);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> worker_ran{false};
  std::atomic<int64_t> grew{-1};
  parallel_for(2, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() == caller) {
      wait_until([&] { return worker_ran.load(); });
      return;
    }
    const size_t held = scratch_bytes();
    auto* mine = static_cast<unsigned char*>(scratch(id, kBytes));
    grew = static_cast<int64_t>(scratch_bytes()) - static_cast<int64_t>(held);
    std::fill(mine, mine + kBytes, 2);
    worker_ran = true;
  });
  ASSERT_TRUE(worker_ran.load());
  EXPECT_LE(grew.load(), 0) << "the worker allocated its scratch when it first used it";
  EXPECT_EQ(first[kBytes - 1], 1) << "threads share no scratch";
  EXPECT_EQ(scratch(id, kBytes), first) << "a size held is reused";
}

TEST(Scratch, ABufferReplacedByAnotherThreadStaysValidUntilItsOwnerAsksAgain) {
  static const ScratchId id = new_scratch_id();
  std::atomic<int> step{0};
  std::atomic<bool> intact{false}, grown{false};
  std::thread owner([&] {
    auto* small = static_cast<unsigned char*>(scratch(id, 64));
    std::fill(small, small + 64, 7);
    step = 1;
    wait_until([&] { return step.load() == 2; });
    // Another thread raised the id: this thread's old buffer is still its own.
    intact = std::all_of(small, small + 64, [](unsigned char c) { return c == 7; });
    const size_t held = scratch_bytes();
    scratch(id, 1 << 20);
    grown = scratch_bytes() > held;
  });
  ASSERT_TRUE(wait_until([&] { return step.load() == 1; }));
  scratch(id, 1 << 20);
  step = 2;
  owner.join();
  EXPECT_TRUE(intact.load());
  EXPECT_FALSE(grown.load()) << "the raise gave the owner its buffer already";
}

TEST(ThreadPool, DefaultIsPhysicalCores) {
  if (std::getenv("EMBER_NUM_THREADS") != nullptr) GTEST_SKIP() << "EMBER_NUM_THREADS is set";
  EXPECT_EQ(default_num_threads(), std::max(1, cpu_topology().physical_cores));
}

}  // namespace
}  // namespace ember::threading
