#include "threading/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "base/cpu_topology.h"

namespace ember::threading {
namespace {

// How long a worker spins after a job before parking, adapted per worker: a
// job that arrives soon after parking (within 4 spin times) doubles the spin,
// one that arrives later halves it. Kernels of one run follow each other within
// microseconds, so spinning keeps workers awake across a run; long gaps between
// runs (sampling, I/O) shrink the spin so an idle session does not burn a core.
using Micros = std::chrono::microseconds;
constexpr Micros kMinSpin{10};
constexpr Micros kInitialSpin{50};
constexpr Micros kMaxSpin{1000};
constexpr int kMaxWorkers = 255;  // the worker count shares the job word with the generation
constexpr uint32_t kWorkerBits = 8;
// gate_: kClosed | helpers of the open job << kHelperShift | workers inside.
constexpr uint32_t kClosed = 1u << 31;
constexpr uint32_t kHelperShift = 23;
constexpr uint32_t kCountMask = (1u << kHelperShift) - 1;

thread_local int t_limit = 0;        // 0: no ScopedThreadLimit active
thread_local bool t_in_job = false;  // inside a parallel_for body

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static destructors
    return *pool;
  }

  // Runs one job with up to `threads` participants (the caller is one).
  void run(int64_t n, int64_t chunk, int threads, FunctionRef<void(int64_t, int64_t)> fn) {
    std::unique_lock<std::mutex> busy(dispatch_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) {
      fn(0, n);  // another caller holds the pool: do the work here instead of waiting
      return;
    }
    const int helpers = ensure_workers(std::min(threads - 1, kMaxWorkers));
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    next_.store(0, std::memory_order_relaxed);
    // Open the gate for this job's helpers, keeping the count of late workers
    // still passing through it from an earlier job.
    uint32_t gate = gate_.load(std::memory_order_relaxed);
    while (!gate_.compare_exchange_weak(gate, (gate & kCountMask) | (static_cast<uint32_t>(helpers) << kHelperShift),
                                        std::memory_order_release, std::memory_order_relaxed)) {
    }
    generation_ += 1;
    // Sequentially consistent with the load of sleeping_ below (and a worker's
    // increment of sleeping_ before its last look at the word): either the
    // caller sees the worker going to sleep and wakes it, or the worker sees
    // the new job. A release store could pass the load and lose the wake-up.
    job_word_.store((generation_ << kWorkerBits) | static_cast<uint32_t>(helpers), std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&job_word_);
    // Workers that have not joined by the end are not waited for: a parked
    // worker that wakes late finds the gate closed. The end runs even if fn
    // throws here, so no worker is left running fn from an unwound frame.
    struct JobEnd {
      Pool& pool;
      ~JobEnd() {
        pool.gate_.fetch_or(kClosed, std::memory_order_acq_rel);
        while ((pool.gate_.load(std::memory_order_acquire) & kCountMask) != 0) cpu_relax();
      }
    } end{*this};
    work();
  }

  // Stops and joins every worker once the running job (if any) has ended; the
  // next job starts new ones.
  void shutdown() {
    std::lock_guard<std::mutex> idle(dispatch_mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
    generation_ += 1;
    // A new word with no helpers wanted: spinning, parked and not yet started
    // workers all see a change, none joins a job, and each sees stopping_.
    job_word_.store(generation_ << kWorkerBits, std::memory_order_seq_cst);
    futex_wake_all(&job_word_);
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stopping_.store(false, std::memory_order_relaxed);
  }

 private:
  Pool() {
    // Where workers run once they drop their start pin: the CPUs the process
    // may use (not a caller's own mask, which may be a single pinned CPU).
    CPU_ZERO(&process_cpus_);
    for (const LogicalCpu& cpu : cpu_topology().cpus) CPU_SET(cpu.id, &process_cpus_);
  }

  // Grows the pool to `count` workers if it can; returns how many there are
  // (a system out of threads leaves the job to the workers that exist).
  int ensure_workers(int count) {
    std::lock_guard<std::mutex> placing(placement_mutex_);
    while (static_cast<int>(workers_.size()) < count) {
      const int index = static_cast<int>(workers_.size());
      // The word before the job that needs this worker is published: a thread
      // that starts late still sees that job as new.
      const uint32_t seen = job_word_.load(std::memory_order_relaxed);
      try {
        workers_.emplace_back([this, index, seen] {
          release_start_cpu();
          worker_loop(index, seen);
        });
      } catch (const std::system_error&) {
        break;
      }
      place_away_from_caller(workers_.back(), index);
    }
    return std::min(count, static_cast<int>(workers_.size()));
  }

  // A new thread starts on its creator's CPU, and Linux took up to tens of
  // milliseconds to move it: in about one short process in three, a 2-thread
  // run took the 1-thread time because the worker shared the caller's CPU
  // (sigmoid over 64 Ki floats: 7.5 us vs 14.5 us p50 over 300 runs). So a
  // worker starts pinned to a CPU other than the caller's (cpu_order(): one per
  // physical core first) and drops the pin once it runs there.
  void place_away_from_caller(std::thread& t, int index) {
    const int caller_cpu = sched_getcpu();
    std::vector<int> others;
    for (int cpu : cpu_topology().cpu_order()) {
      if (cpu != caller_cpu && CPU_ISSET(cpu, &process_cpus_)) others.push_back(cpu);
    }
    if (others.empty()) return;
    cpu_set_t start;
    CPU_ZERO(&start);
    CPU_SET(others[static_cast<size_t>(index) % others.size()], &start);
    pthread_setaffinity_np(t.native_handle(), sizeof(start), &start);
  }

  void release_start_cpu() {
    // Wait until the creator has decided; then run anywhere the process may.
    std::lock_guard<std::mutex> placed(placement_mutex_);
    if (CPU_COUNT(&process_cpus_) > 0) sched_setaffinity(0, sizeof(process_cpus_), &process_cpus_);
  }

  void work() {
    struct InJob {
      bool outer = t_in_job;
      InJob() { t_in_job = true; }
      ~InJob() { t_in_job = outer; }
    } in_job;
    const FunctionRef<void(int64_t, int64_t)>& fn = *fn_;
    for (;;) {
      const int64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
      if (begin >= n_) break;
      fn(begin, std::min(n_, begin + chunk_));
    }
  }

  static bool is_helper(int index, uint32_t word) {
    return index < static_cast<int>(word & ((1u << kWorkerBits) - 1));
  }

  void worker_loop(int index, uint32_t seen) {
    Micros spin = kInitialSpin;
    bool asked = true;
    for (;;) {
      // A worker the last job did not ask for parks at once instead of spinning.
      seen = wait_for_change(seen, asked ? &spin : nullptr);
      if (stopping_.load(std::memory_order_seq_cst)) return;
      asked = is_helper(index, seen);
      if (!asked) continue;
      // Joining may land in a later job than the one that woke us; the job
      // fields read after joining are always those of the open job, and the
      // gate says whether this worker is one of that job's helpers.
      const uint32_t gate = gate_.fetch_add(1, std::memory_order_acquire);
      if ((gate & kClosed) == 0 && index < static_cast<int>((gate >> kHelperShift) & 0xff)) work();
      gate_.fetch_sub(1, std::memory_order_release);
    }
  }

  // Spins for *spin (adapting it), or parks at once when spin is null.
  uint32_t wait_for_change(uint32_t seen, Micros* spin) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + (spin ? *spin : Micros{0});
    for (int i = 0; spin != nullptr; ++i) {
      const uint32_t word = job_word_.load(std::memory_order_acquire);
      if (word != seen) return word;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
      cpu_relax();
    }
    for (;;) {
      sleeping_.fetch_add(1, std::memory_order_seq_cst);
      uint32_t word = job_word_.load(std::memory_order_seq_cst);
      if (word == seen) {
        futex_wait(&job_word_, seen);
        word = job_word_.load(std::memory_order_acquire);
      }
      sleeping_.fetch_sub(1, std::memory_order_relaxed);
      if (word != seen) {
        if (spin) {
          const auto waited = std::chrono::steady_clock::now() - start;
          *spin = waited < 4 * *spin ? std::min(kMaxSpin, 2 * *spin) : std::max(kMinSpin, *spin / 2);
        }
        return word;
      }
    }
  }

  std::mutex dispatch_mutex_;  // one job at a time
  std::mutex placement_mutex_;  // held while a new worker's start CPU is chosen
  cpu_set_t process_cpus_{};
  std::vector<std::thread> workers_;
  // The current job, published by the release store to job_word_.
  const FunctionRef<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 0;
  uint32_t generation_ = 0;
  alignas(64) std::atomic<uint32_t> job_word_{0};  // generation << 8 | helpers wanted
  alignas(64) std::atomic<int64_t> next_{0};
  alignas(64) std::atomic<uint32_t> gate_{kClosed};
  alignas(64) std::atomic<int> sleeping_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace

int default_num_threads() {
  static const int n = [] {
    if (const char* env = std::getenv("EMBER_NUM_THREADS"); env != nullptr && *env != '\0') {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (*end == '\0' && v >= 1 && v <= kMaxWorkers + 1) return static_cast<int>(v);
      std::fprintf(stderr, "ember: EMBER_NUM_THREADS=%s is not a count in 1..%d; ignored\n", env, kMaxWorkers + 1);
    }
    return std::max(1, cpu_topology().physical_cores);
  }();
  return n;
}

int max_threads() {
  if (t_in_job) return 1;
  return t_limit > 0 ? t_limit : default_num_threads();
}

ScopedThreadLimit::ScopedThreadLimit(int num_threads) : previous_(t_limit) {
  t_limit = num_threads > 0 ? std::min(num_threads, kMaxWorkers + 1) : default_num_threads();
}

ScopedThreadLimit::~ScopedThreadLimit() { t_limit = previous_; }

void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (n <= grain) {  // before the thread-local limit and the division: small ops' common case
    fn(0, n);
    return;
  }
  const int64_t max_ranges = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<int64_t>(max_threads(), max_ranges));
  if (threads <= 1) {
    fn(0, n);
    return;
  }
  // Two ranges per thread: a thread that wakes late leaves its second range to
  // the others instead of holding up the whole job.
  const int64_t ranges = std::min<int64_t>(max_ranges, 2 * threads);
  const int64_t per_range = (n + ranges - 1) / ranges;
  const int64_t chunk = (per_range + grain - 1) / grain * grain;
  Pool::instance().run(n, chunk, threads, fn);
}

void shutdown_pool() { Pool::instance().shutdown(); }

}  // namespace ember::threading
