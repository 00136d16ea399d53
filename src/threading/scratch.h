#pragma once
// Per-thread scratch for kernel bodies (the A blocks a GEMM packs, ...) that
// every thread holds at the largest size any thread has asked for.
//
// A plain thread_local buffer grows the first time its thread runs the kernel,
// and which thread runs which parallel_for range is up to the scheduler: a
// worker that woke late for a MatMul in every warm-up run first took a range,
// and allocated its pack buffer, in run 107 of a steady state that must not
// allocate (OrtEpAllocations.NoneFromTheLibraryPerRun, up to 1 process in 3 on a
// busy 2-core machine). Here the thread that asks for more than its buffer
// holds raises the id's size for every thread at once, on its own thread: every
// pool worker (given its buffers when it is created, on the creating thread)
// and every thread that has used scratch before. The run that first needs a
// size, which some thread always runs, therefore allocates for all, and later
// runs of the same shapes allocate nothing on any thread, whoever runs what.
//
// The cost is memory: each thread holds each id's largest size (counted by
// scratch_bytes()). A buffer another thread replaced is freed by its owner at
// its next scratch() call for that id, so it is never freed while in use.
#include <cstddef>

namespace ember::threading {

// One kind of scratch (one use site). Make one per site with new_scratch_id(),
// kept in a function-local or namespace-scope static.
struct ScratchId {
  int index = -1;
};

// A new id; at most kMaxScratchIds in a process (aborts past that: ids are
// made once per use site, never per call).
inline constexpr int kMaxScratchIds = 16;
ScratchId new_scratch_id();

// A 64-byte aligned buffer of at least `bytes` owned by the calling thread,
// valid until this thread's next scratch() call with the same id (calls with
// other ids, as nested kernels make, leave it alone). Contents are not kept
// when it grows. Allocates only when some thread asks for more than `id` has
// held so far; throws std::bad_alloc when memory runs out.
void* scratch(ScratchId id, size_t bytes);

// Bytes of scratch held by all threads together.
size_t scratch_bytes();

// For the pool: a thread's scratch, made on the creating thread (holding every
// id at its current size) and bound by the new thread before it runs anything,
// so that a worker that starts late allocates nothing when it does. A thread
// frees its own at exit; free_thread_scratch is for one never bound.
class ThreadScratch;
ThreadScratch* make_thread_scratch();
void bind_thread_scratch(ThreadScratch* scratch);
void free_thread_scratch(ThreadScratch* scratch);

}  // namespace ember::threading
