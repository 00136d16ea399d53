#pragma once
// One process-wide pool of persistent workers that every session shares, so two
// sessions never run two pools fighting for the same cores. Workers spin briefly
// after each job (back-to-back kernels find them awake) and then park on a futex.
//
// A run limits how many threads its kernels use with ScopedThreadLimit (the
// session's option, else EMBER_NUM_THREADS, else one per physical core).
#include <cstdint>

#include "threading/function_ref.h"

namespace ember::threading {

// EMBER_NUM_THREADS when set (>= 1), else the physical cores this process may use.
int default_num_threads();

// The number of threads parallel_for may use when called from this thread:
// the innermost ScopedThreadLimit, else default_num_threads(); 1 inside a
// parallel_for body (no nested parallelism).
int max_threads();

class ScopedThreadLimit {
 public:
  explicit ScopedThreadLimit(int num_threads);  // <= 0: default_num_threads()
  ~ScopedThreadLimit();
  ScopedThreadLimit(const ScopedThreadLimit&) = delete;
  ScopedThreadLimit& operator=(const ScopedThreadLimit&) = delete;

 private:
  int previous_;
};

// Calls fn(begin, end) over disjoint ranges that cover [0, n) exactly once. Every
// range but the last is a multiple of `grain` long, so a kernel can keep SIMD
// blocks whole. Runs fn(0, n) on the calling thread when n <= grain, when one
// thread is allowed, or when the pool is busy with another caller's job. A
// kernel picks `grain` so that one range is worth waking a thread for (measured
// per kernel family; see docs/architecture.md). Never allocates. fn must not
// throw (kernel bodies never do); if it throws on the calling thread, the job
// still ends cleanly before the exception leaves parallel_for.
void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

// Joins every worker (after the job in progress, if any); the next parallel_for
// starts them again. For code about to be unloaded (the ORT plugin EP's
// ReleaseEpFactory): no thread may be left running in an unmapped library.
void shutdown_pool();

}  // namespace ember::threading
