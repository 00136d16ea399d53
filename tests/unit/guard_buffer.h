#pragma once
// Microkernel test buffers against PROT_NONE guard pages (MLAS's
// MatrixGuardBuffer idea): a read or write one element outside the buffer
// faults (SIGSEGV, a failed ctest) instead of passing silently, which a
// sentinel cannot promise for reads. Both guards are always mapped; `GuardAt`
// says which one the elements touch, so a suite that loops over kBothGuards
// catches overruns and underruns. Works the same under qemu-x86_64's user mode,
// which maps guest pages with the host's mprotect.
//
// Alignment: kStart puts the first element on a page boundary; kEnd aligns it
// only to alignof(T) (an f32 buffer of 7 starts 28 bytes before a page). The
// microkernels read and write caller memory with unaligned or masked loads and
// stores (aligned ones only touch their own stack tiles), so kEnd doubles as the
// unaligned-pointer case; a buffer a kernel requires aligned would need kStart.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace ember::test {

enum class GuardAt { kEnd, kStart };
inline constexpr GuardAt kBothGuards[] = {GuardAt::kEnd, GuardAt::kStart};

inline const char* guard_name(GuardAt at) { return at == GuardAt::kEnd ? "guard at end" : "guard at start"; }

template <typename T>
class GuardedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "guarded buffers hold plain kernel data");

 public:
  // `n` zeroed elements.
  explicit GuardedBuffer(size_t n, GuardAt at = GuardAt::kEnd) : size_(n) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data_bytes = (n * sizeof(T) + page - 1) / page * page;
    map_bytes_ = data_bytes + 2 * page;
    void* base = mmap(nullptr, map_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    map_ = static_cast<std::byte*>(base);
    if (data_bytes && mprotect(map_ + page, data_bytes, PROT_READ | PROT_WRITE) != 0) {
      munmap(map_, map_bytes_);
      throw std::bad_alloc();
    }
    data_ = reinterpret_cast<T*>(at == GuardAt::kStart ? map_ + page : map_ + page + data_bytes - n * sizeof(T));
  }
  GuardedBuffer(size_t n, T fill, GuardAt at) : GuardedBuffer(n, at) {
    for (T& v : span()) v = fill;
  }
  GuardedBuffer(std::span<const T> values, GuardAt at) : GuardedBuffer(values.size(), at) {
    if (!values.empty()) std::memcpy(data_, values.data(), values.size_bytes());
  }

  GuardedBuffer(GuardedBuffer&& o) noexcept
      : map_(std::exchange(o.map_, nullptr)), map_bytes_(o.map_bytes_), data_(o.data_), size_(o.size_) {}
  GuardedBuffer& operator=(GuardedBuffer&& o) noexcept {
    std::swap(map_, o.map_);
    std::swap(map_bytes_, o.map_bytes_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  ~GuardedBuffer() {
    if (map_) munmap(map_, map_bytes_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  std::byte* map_ = nullptr;
  size_t map_bytes_ = 0;
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ember::test
