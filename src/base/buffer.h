#pragma once
// 64-byte aligned heap buffers: the arena behind a plan and owned tensor storage.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

namespace ember {

// What AlignedBuffer throws when it cannot allocate: the memory limit would be
// passed, the size overflows, or the allocator failed. A session turns it into
// an error Status carrying what().
class AllocationError : public std::bad_alloc {
 public:
  explicit AllocationError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// The bytes AlignedBuffers (tensors, plan arenas, KV caches) may hold at once
// in this process; 0: no limit. EMBER_MEMORY_LIMIT sets it at start, in bytes
// or with a K, M or G suffix ("8G").
void set_memory_limit(size_t bytes);
size_t memory_limit();
size_t buffer_bytes_in_use();
// The allocation function AlignedBuffer calls instead of std::aligned_alloc;
// nullptr restores it. For tests of allocation failure.
using AllocateFn = void* (*)(size_t alignment, size_t bytes);
void set_allocate_hook(AllocateFn fn);

inline constexpr size_t kAlignment = 64;
// Transparent huge page size: large buffers are aligned to it and offered to THP.
inline constexpr size_t kHugePage = size_t{2} << 20;

inline size_t align_up(size_t n, size_t a = kAlignment) { return (n + a - 1) / a * a; }

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { resize(bytes); }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::move(other.data_)), size_(other.size_), capacity_(other.capacity_) {
    other.size_ = other.capacity_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  ~AlignedBuffer();

  // Makes size() `bytes`, discarding the contents when it has to grow. Never
  // shrinks the allocation. The first allocation is exact; growing one that
  // exists takes half again (a scratch or arena buffer asked to grow is in a
  // loop of growing shapes, such as decode steps), so a sequence of growing
  // sizes allocates O(log) times. Throws AllocationError when it cannot.
  void resize(size_t bytes);
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ember
