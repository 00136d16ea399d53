#include "threading/scratch.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "base/buffer.h"

namespace ember::threading {

struct ScratchBlock {
  AlignedBuffer buffer;
  ScratchBlock* next_retired = nullptr;
};

class ThreadScratch {
 public:
  // The thread's current block per id: replaced by a raising thread, read by
  // the owner without the lock.
  std::atomic<ScratchBlock*> blocks[kMaxScratchIds] = {};
  // Bit i: retired[i] holds blocks the owner may still be using (under the lock).
  std::atomic<unsigned> retired_ids{0};
  ScratchBlock* retired[kMaxScratchIds] = {};
  ThreadScratch* prev = nullptr;  // the registry's list (under the lock)
  ThreadScratch* next = nullptr;
};

namespace {

struct Registry {
  std::mutex mutex;
  ThreadScratch* head = nullptr;
  size_t sizes[kMaxScratchIds] = {};  // each id's largest size asked for, rounded as grown
  size_t bytes = 0;                   // held by all threads
  std::atomic<int> ids{0};
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may exit after static destructors
  return *r;
}

// Under the lock.
ScratchBlock* new_block(Registry& r, size_t bytes) {
  auto block = std::make_unique<ScratchBlock>();
  block->buffer.resize(bytes);  // may throw AllocationError (the memory limit)
  r.bytes += block->buffer.capacity();
  return block.release();
}

void free_block(Registry& r, ScratchBlock* block) {
  r.bytes -= block->buffer.capacity();
  delete block;
}

void free_retired(Registry& r, ThreadScratch* s, int id) {
  for (ScratchBlock* b = s->retired[id]; b != nullptr;) {
    ScratchBlock* next = b->next_retired;
    free_block(r, b);
    b = next;
  }
  s->retired[id] = nullptr;
  s->retired_ids.fetch_and(~(1u << id), std::memory_order_relaxed);
}

}  // namespace

void free_thread_scratch(ThreadScratch* s) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  (s->prev ? s->prev->next : r.head) = s->next;
  if (s->next) s->next->prev = s->prev;
  for (int id = 0; id < kMaxScratchIds; ++id) {
    free_retired(r, s, id);
    if (ScratchBlock* b = s->blocks[id].load(std::memory_order_relaxed)) free_block(r, b);
  }
  delete s;
}

namespace {

// The thread's scratch, released when the thread exits.
struct Holder {
  ThreadScratch* scratch = nullptr;
  ~Holder() {
    if (scratch) free_thread_scratch(scratch);
  }
};
thread_local Holder t_holder;

size_t capacity(const ScratchBlock* b) { return b ? b->buffer.capacity() : 0; }

// Raises `id` to at least `bytes` for every thread; returns the caller's block.
ScratchBlock* raise(ThreadScratch* self, int id, size_t bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  size_t& size = r.sizes[id];
  const size_t before = size;
  // Half again, like AlignedBuffer: growing shapes (decode steps) raise O(log) times.
  if (bytes > size) size = size == 0 ? bytes : std::max(bytes, size + size / 2);
  for (ThreadScratch* s = r.head; s != nullptr; s = s->next) {
    if (capacity(s->blocks[id].load(std::memory_order_relaxed)) >= size) continue;
    ScratchBlock* block;
    try {
      block = new_block(r, size);
    } catch (...) {
      size = before;  // past the memory limit: later, smaller requests are not held to this size
      throw;
    }
    ScratchBlock* old = s->blocks[id].exchange(block, std::memory_order_acq_rel);
    if (old == nullptr) continue;
    if (s == self) {
      free_block(r, old);  // this call ends the caller's use of its previous block
    } else {
      old->next_retired = s->retired[id];
      s->retired[id] = old;
      s->retired_ids.fetch_or(1u << id, std::memory_order_relaxed);
    }
  }
  return self->blocks[id].load(std::memory_order_relaxed);
}

}  // namespace

ScratchId new_scratch_id() {
  const int index = registry().ids.fetch_add(1, std::memory_order_relaxed);
  if (index >= kMaxScratchIds) {
    std::fprintf(stderr, "ember: more than %d scratch ids\n", kMaxScratchIds);
    std::abort();
  }
  return ScratchId{index};
}

ThreadScratch* make_thread_scratch() {
  Registry& r = registry();
  auto* s = new ThreadScratch();
  std::lock_guard<std::mutex> lock(r.mutex);
  try {
    for (int id = 0; id < kMaxScratchIds; ++id) {
      if (r.sizes[id] > 0) s->blocks[id].store(new_block(r, r.sizes[id]), std::memory_order_relaxed);
    }
  } catch (...) {
    for (auto& block : s->blocks) {
      if (ScratchBlock* b = block.load(std::memory_order_relaxed)) free_block(r, b);
    }
    delete s;
    throw;
  }
  s->next = r.head;
  if (r.head) r.head->prev = s;
  r.head = s;
  return s;
}

void bind_thread_scratch(ThreadScratch* scratch) {
  if (t_holder.scratch) free_thread_scratch(t_holder.scratch);
  t_holder.scratch = scratch;
}

void* scratch(ScratchId id, size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  ThreadScratch* self = t_holder.scratch;
  if (self == nullptr) self = t_holder.scratch = make_thread_scratch();
  if ((self->retired_ids.load(std::memory_order_relaxed) >> id.index) & 1u) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    free_retired(r, self, id.index);
  }
  ScratchBlock* block = self->blocks[id.index].load(std::memory_order_acquire);
  if (capacity(block) < bytes) block = raise(self, id.index, bytes);
  return block->buffer.data();
}

size_t scratch_bytes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.bytes;
}

}  // namespace ember::threading
