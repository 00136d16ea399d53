#pragma once
// 64-byte aligned heap buffers: the arena behind a plan and owned tensor storage.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ember {

inline constexpr size_t kAlignment = 64;
// Transparent huge page size: large buffers are aligned to it and offered to THP.
inline constexpr size_t kHugePage = size_t{2} << 20;

inline size_t align_up(size_t n, size_t a = kAlignment) { return (n + a - 1) / a * a; }

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { resize(bytes); }
  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;

  // Makes size() `bytes`, discarding the contents when it has to grow. Never
  // shrinks the allocation. The first allocation is exact; growing one that
  // exists takes half again (a scratch or arena buffer asked to grow is in a
  // loop of growing shapes, such as decode steps), so a sequence of growing
  // sizes allocates O(log) times.
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
