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
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "base/cpu_topology.h"
#include "threading/scratch.h"

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
constexpr int kMaxWorkers = 255;
// A job's gate: kClosed | kDone | helpers allowed << kCapShift | helpers inside.
constexpr uint32_t kClosed = 1u << 31;  // the caller is ending the job: no one joins
constexpr uint32_t kDone = 1u << 30;    // no ranges left: joining is pointless
constexpr uint32_t kCapShift = 16;
constexpr uint32_t kInsideMask = (1u << kCapShift) - 1;

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

void futex_wake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

int helpers_allowed(uint32_t gate) { return static_cast<int>((gate >> kCapShift) & 0xff); }
int helpers_inside(uint32_t gate) { return static_cast<int>(gate & kInsideMask); }

// One caller's parallel_for. The caller writes the fields while the gate is
// closed and opens it with a release store; a worker reads them only after its
// compare-exchange on the gate let it in, and the caller reuses the place only
// after closing the gate and seeing no worker inside.
struct alignas(64) Job {
  std::atomic<bool> taken{false};  // a caller owns this place
  std::atomic<uint32_t> gate{kClosed};
  const FunctionRef<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int64_t chunk = 0;
  std::atomic<int> helped{0};  // workers that ran at least one range
  // The first exception a worker's range threw (a failed allocation): the
  // caller rethrows it once no worker is inside.
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  alignas(64) std::atomic<int64_t> next{0};
};

struct alignas(64) Counters {
  std::atomic<uint64_t> jobs{0}, concurrent_jobs{0}, no_free_worker{0}, alone{0}, helpers_wanted{0},
      helpers_joined{0};
};

class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static destructors
    return *pool;
  }

  // Runs one job with up to `threads` participants (the caller is one).
  void run(int64_t n, int64_t chunk, int threads, FunctionRef<void(int64_t, int64_t)> fn) {
    const int helpers = ensure_workers(std::min(threads - 1, kMaxWorkers));
    counters_.jobs.fetch_add(1, std::memory_order_relaxed);
    counters_.helpers_wanted.fetch_add(static_cast<uint64_t>(threads - 1), std::memory_order_relaxed);
    Job* job = helpers > 0 ? take_place() : nullptr;
    if (job == nullptr) {  // more than kMaxJobs callers at once (or no worker could be started)
      if (helpers > 0) counters_.no_free_worker.fetch_add(1, std::memory_order_relaxed);
      counters_.alone.fetch_add(1, std::memory_order_relaxed);
      fn(0, n);
      return;
    }
    if (open_jobs_.fetch_add(1, std::memory_order_acq_rel) > 0) {
      counters_.concurrent_jobs.fetch_add(1, std::memory_order_relaxed);
      if (free_workers() <= 0) counters_.no_free_worker.fetch_add(1, std::memory_order_relaxed);
    }
    job->fn = &fn;
    job->n = n;
    job->chunk = chunk;
    job->next.store(0, std::memory_order_relaxed);
    job->helped.store(0, std::memory_order_relaxed);
    job->gate.store(static_cast<uint32_t>(helpers) << kCapShift, std::memory_order_release);
    // Sequentially consistent with the loads of sleeping_ and spinning_ below
    // (and a worker's decrement of spinning_ and increment of sleeping_ before
    // its last look at the word): either the caller counts the worker as
    // spinning or sleeping, or the worker sees the new word. A release
    // operation could pass the loads and lose the wake-up.
    job_word_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
      const int wake = helpers - spinning_.load(std::memory_order_seq_cst);
      if (wake > 0) futex_wake(&job_word_, wake);
    }
    // Workers that have not joined by the end are not waited for: one that
    // wakes late finds the gate closed. The end runs even if fn throws here, so
    // no worker is left running fn from an unwound frame.
    struct JobEnd {
      Pool& pool;
      Job& job;
      std::exception_ptr& worker_error;
      ~JobEnd() {
        if (std::uncaught_exceptions() > 0) job.next.fetch_add(job.n, std::memory_order_relaxed);  // drop the rest
        job.gate.fetch_or(kClosed, std::memory_order_acq_rel);
        while (helpers_inside(job.gate.load(std::memory_order_acquire)) != 0) cpu_relax();
        if (job.failed.load(std::memory_order_acquire)) {
          worker_error = std::move(job.error);
          job.error = nullptr;
          job.failed.store(false, std::memory_order_relaxed);
        }
        const int helped = job.helped.load(std::memory_order_relaxed);
        if (helped == 0) pool.counters_.alone.fetch_add(1, std::memory_order_relaxed);
        pool.counters_.helpers_joined.fetch_add(static_cast<uint64_t>(helped), std::memory_order_relaxed);
        pool.open_jobs_.fetch_sub(1, std::memory_order_acq_rel);
        job.taken.store(false, std::memory_order_release);
      }
    };
    std::exception_ptr worker_error;
    {
      JobEnd end{*this, *job, worker_error};
      work(*job, /*helper=*/false);
    }
    if (worker_error) std::rethrow_exception(worker_error);
  }

  // Stops and joins every worker once it has left the job it is in (if any);
  // the next job starts new ones.
  void shutdown() {
    std::lock_guard<std::mutex> growing(growth_mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
    // A new word: spinning, parked and not yet started workers all see a
    // change, and each sees stopping_.
    job_word_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(&job_word_, INT_MAX);
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    worker_count_.store(0, std::memory_order_release);
    stopping_.store(false, std::memory_order_relaxed);
  }

  PoolStats stats() const {
    PoolStats s;
    s.jobs = counters_.jobs.load(std::memory_order_relaxed);
    s.concurrent_jobs = counters_.concurrent_jobs.load(std::memory_order_relaxed);
    s.no_free_worker = counters_.no_free_worker.load(std::memory_order_relaxed);
    s.alone = counters_.alone.load(std::memory_order_relaxed);
    s.helpers_wanted = counters_.helpers_wanted.load(std::memory_order_relaxed);
    s.helpers_joined = counters_.helpers_joined.load(std::memory_order_relaxed);
    s.workers = worker_count_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  Pool() {
    // Where workers run once they drop their start pin: the CPUs the process
    // may use (not a caller's own mask, which may be a single pinned CPU).
    CPU_ZERO(&process_cpus_);
    for (const LogicalCpu& cpu : cpu_topology().cpus) CPU_SET(cpu.id, &process_cpus_);
  }

  Job* take_place() {
    for (Job& job : jobs_) {
      if (!job.taken.load(std::memory_order_relaxed) && !job.taken.exchange(true, std::memory_order_acquire)) {
        return &job;
      }
    }
    return nullptr;
  }

  // Workers not inside any job now (a snapshot, for the counters).
  int free_workers() const {
    int inside = 0;
    for (const Job& job : jobs_) inside += helpers_inside(job.gate.load(std::memory_order_relaxed));
    return worker_count_.load(std::memory_order_relaxed) - inside;
  }

  // Grows the pool to `count` workers if it can; returns how many of them
  // there are (a system out of threads leaves the job to the workers that exist).
  int ensure_workers(int count) {
    if (worker_count_.load(std::memory_order_acquire) >= count) return count;
    std::lock_guard<std::mutex> growing(growth_mutex_);
    std::lock_guard<std::mutex> placing(placement_mutex_);
    while (static_cast<int>(workers_.size()) < count) {
      const int index = static_cast<int>(workers_.size());
      // The word before the job that needs this worker is published: a thread
      // that starts late still sees that job's word as new.
      const uint32_t seen = job_word_.load(std::memory_order_relaxed);
      // Its scratch is made here, at every size asked for so far, so that a
      // worker that starts late allocates nothing when it does.
      ThreadScratch* scratch = make_thread_scratch();
      try {
        workers_.emplace_back([this, scratch, seen] {
          bind_thread_scratch(scratch);
          release_start_cpu();
          worker_loop(seen);
        });
      } catch (const std::system_error&) {
        free_thread_scratch(scratch);
        break;
      }
      place_away_from_caller(workers_.back(), index);
    }
    worker_count_.store(static_cast<int>(workers_.size()), std::memory_order_release);
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

  // Runs ranges of `job` until none is left; returns how many this thread ran.
  // A helper that catches an exception from a range keeps the first one for
  // the caller and drops the ranges not yet started.
  static int64_t work(Job& job, bool helper) {
    struct InJob {
      bool outer = t_in_job;
      InJob() { t_in_job = true; }
      ~InJob() { t_in_job = outer; }
    } in_job;
    const FunctionRef<void(int64_t, int64_t)>& fn = *job.fn;
    const int64_t n = job.n, chunk = job.chunk;
    int64_t ranges = 0;
    for (;; ++ranges) {
      const int64_t begin = job.next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) break;
      try {
        fn(begin, std::min(n, begin + chunk));
      } catch (...) {
        if (!helper) throw;  // the caller's own: JobEnd drops the rest as it unwinds
        if (!job.failed.exchange(true, std::memory_order_acq_rel)) job.error = std::current_exception();
        job.next.fetch_add(n, std::memory_order_relaxed);
        ++ranges;
        break;
      }
    }
    if ((job.gate.load(std::memory_order_relaxed) & kDone) == 0) job.gate.fetch_or(kDone, std::memory_order_relaxed);
    return ranges;
  }

  enum class Helped { kJoined, kFull, kNone };

  void worker_loop(uint32_t seen) {
    Micros spin = kInitialSpin;
    Helped helped = Helped::kJoined;
    for (;;) {
      // A worker that found only jobs with every place taken was not needed
      // and parks at once. One that helped, or came when the job had ended
      // (woken late: the next job needs it awake), spins first.
      seen = wait_for_change(seen, helped != Helped::kFull ? &spin : nullptr);
      if (stopping_.load(std::memory_order_seq_cst)) return;
      helped = help_open_jobs();
    }
  }

  // Joins open jobs with helper places free, the one with the most first,
  // until none is left. A job opened after the word this worker last read
  // changes the word again, so none is missed.
  Helped help_open_jobs() {
    Helped helped = Helped::kNone;
    while (!stopping_.load(std::memory_order_relaxed)) {
      Job* best = nullptr;
      uint32_t best_gate = 0;
      int most_free = 0;
      for (Job& job : jobs_) {
        const uint32_t gate = job.gate.load(std::memory_order_relaxed);
        if ((gate & (kClosed | kDone)) != 0) continue;
        const int free = helpers_allowed(gate) - helpers_inside(gate);
        if (free <= 0 && helped == Helped::kNone) helped = Helped::kFull;
        if (free > most_free) {
          best = &job;
          best_gate = gate;
          most_free = free;
        }
      }
      if (best == nullptr) break;
      // The gate may have moved on, even to a later job in the same place: the
      // exchange succeeds only on a value with a free place, and the job read
      // after it is the one that place belongs to.
      if (!best->gate.compare_exchange_strong(best_gate, best_gate + 1, std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
        continue;
      }
      if (work(*best, /*helper=*/true) > 0) best->helped.fetch_add(1, std::memory_order_relaxed);
      best->gate.fetch_sub(1, std::memory_order_release);
      helped = Helped::kJoined;
    }
    return helped;
  }

  // Spins for *spin (adapting it), or parks at once when spin is null.
  uint32_t wait_for_change(uint32_t seen, Micros* spin) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + (spin ? *spin : Micros{0});
    if (spin != nullptr) {
      // Counted so that a caller wakes only the helpers the spinning workers
      // do not cover (a worker stops counting before it counts as sleeping).
      spinning_.fetch_add(1, std::memory_order_seq_cst);
      for (int i = 0;; ++i) {
        const uint32_t word = job_word_.load(std::memory_order_acquire);
        if (word != seen) {
          spinning_.fetch_sub(1, std::memory_order_relaxed);
          return word;
        }
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
        cpu_relax();
      }
      spinning_.fetch_sub(1, std::memory_order_seq_cst);
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

  std::mutex growth_mutex_;     // held while workers are started or joined
  std::mutex placement_mutex_;  // held while a new worker's start CPU is chosen
  cpu_set_t process_cpus_{};
  std::vector<std::thread> workers_;  // under growth_mutex_
  std::atomic<int> worker_count_{0};
  Job jobs_[kMaxJobs];
  alignas(64) std::atomic<uint32_t> job_word_{0};  // bumped when a job opens (and at shutdown)
  alignas(64) std::atomic<int> sleeping_{0};
  std::atomic<int> spinning_{0};
  alignas(64) std::atomic<int> open_jobs_{0};
  std::atomic<bool> stopping_{false};
  Counters counters_;
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

PoolStats pool_stats() {
  PoolStats s = Pool::instance().stats();
  s.scratch_bytes = scratch_bytes();
  return s;
}

}  // namespace ember::threading
