#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/cpu_topology.h"
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
  // Callers that find the pool busy run their job themselves; every job still
  // completes exactly once.
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

TEST(ThreadPool, DefaultIsPhysicalCores) {
  if (std::getenv("EMBER_NUM_THREADS") != nullptr) GTEST_SKIP() << "EMBER_NUM_THREADS is set";
  EXPECT_EQ(default_num_threads(), std::max(1, cpu_topology().physical_cores));
}

}  // namespace
}  // namespace ember::threading
