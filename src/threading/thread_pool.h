#pragma once
// One process-wide pool of persistent workers that every session shares, so two
// sessions never run two pools fighting for the same cores. Workers spin briefly
// after each job (back-to-back kernels find them awake) and then park on a futex.
//
// A run limits how many threads its kernels use with ScopedThreadLimit (the
// session's option, else EMBER_NUM_THREADS, else one per physical core).
//
// Concurrent callers (two sessions, or ONNX Runtime's concurrent Run calls into
// the plugin EP) each open their own job: up to kMaxJobs jobs are open at once,
// each capped at its caller's limit minus one helpers. A worker joins whichever
// open job has the most helper places free, and when a job has no ranges left
// it moves on to another open job before it spins or parks. So a second caller
// gets the workers the first one does not hold at once, and the first one's
// workers as soon as its job runs out of ranges, instead of running alone while
// the other job holds the pool. pool_stats() counts how often callers met.
#include <cstddef>
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
// blocks whole; how many ranges there are and which thread runs which depends
// on the thread limit and on timing, so a kernel's result must not (kernels
// split only across independent outputs). Runs fn(0, n) on the calling thread
// when n <= grain, when one thread is allowed, or when kMaxJobs other callers'
// jobs are open. Otherwise the caller runs ranges too, with at most
// max_threads() - 1 workers helping; it returns once every range has run,
// without waiting for a worker that has not joined. A kernel picks `grain` so
// that one range is worth waking a thread for (measured per kernel family; see
// docs/architecture.md). Never allocates (per-thread scratch for a body:
// threading/scratch.h). fn throws only when an allocation fails (a scratch
// buffer past the memory limit): ranges not yet started are dropped, the job
// ends cleanly, and the exception (the caller's own, else the first a worker
// caught) leaves parallel_for on the calling thread.
void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

// Jobs open at once with workers; a caller past that runs its job alone.
inline constexpr int kMaxJobs = 16;

// What the pool has done since the process started (counters only grow; take
// differences). A job is a parallel_for call that reached the pool (more than
// one thread allowed and more than one range); calls run inline are not counted.
struct PoolStats {
  uint64_t jobs = 0;
  uint64_t concurrent_jobs = 0;  // opened while another caller's job was open
  uint64_t no_free_worker = 0;   // opened with every worker in other callers' jobs, or no job place free
  uint64_t alone = 0;            // ended with no worker having run a range (none free, or none woke in time)
  uint64_t helpers_wanted = 0;   // sum over jobs of the threads allowed (limit, at most one per range) - 1
  uint64_t helpers_joined = 0;   // sum over jobs of the workers that ran at least one of its ranges
  int workers = 0;               // worker threads now
  size_t scratch_bytes = 0;      // per-thread kernel scratch held now (threading/scratch.h)
};
PoolStats pool_stats();

// Joins every worker (each after the job it is in, if any; callers' jobs still
// open finish on their callers); the next parallel_for starts them again. For
// code about to be unloaded (the ORT plugin EP's ReleaseEpFactory): no thread
// may be left running in an unmapped library.
void shutdown_pool();

}  // namespace ember::threading
