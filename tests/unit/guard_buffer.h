#pragma once
// Microkernel test buffers against PROT_NONE guard pages (MLAS's
// MatrixGuardBuffer idea): a read or write one element outside the buffer
// faults (SIGSEGV, a failed ctest) instead of passing silently, which a
// sentinel cannot promise for reads. Both guards are always mapped; `GuardAt`
// says which one the elements touch, so a suite that loops over kBothGuards
// catches overruns and underruns. qemu-x86_64's user mode maps guest pages
// with the host's mprotect, so the guards fault there too, with one exception
// handled below (masked loads).
//
// Alignment: kStart puts the first element on a page boundary; kEnd aligns it
// only to alignof(T) (an f32 buffer of 7 starts 28 bytes before a page). The
// microkernels read and write caller memory with unaligned or masked loads and
// stores (aligned ones only touch their own stack tiles), so kEnd doubles as the
// unaligned-pointer case; a buffer a kernel requires aligned would need kStart.
#include <immintrin.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstring>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace ember::test {

namespace guard_detail {

inline sigjmp_buf probe_jump;
inline void probe_fault(int) { siglongjmp(probe_jump, 1); }

__attribute__((target("avx"))) inline float masked_load_lane0(const float* p) {
  return _mm_cvtss_f32(_mm_maskload_ps(p, _mm_setr_epi32(-1, 0, 0, 0)));
}

// vmaskmovps never faults on masked-out lanes on a CPU (Intel SDM: "faults will
// not occur due to referencing any memory location if the corresponding mask
// bit for that memory location is 0"), and the AVX2 kernels' tails rely on it.
// QEMU 7.2's user mode loads the whole vector: lane 0 set, 4 bytes before a
// PROT_NONE page, is a SIGSEGV under -cpu Haswell-v4 (measured). Where that
// happens, the end guard is PROT_READ: writes past the end still fault, reads
// there go unseen (the native run catches them).
inline bool masked_loads_fault_past_lanes() {
  static const bool faults = [] {
    if (!__builtin_cpu_supports("avx")) return false;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* base = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    auto* bytes = static_cast<std::byte*>(base);
    mprotect(bytes + page, page, PROT_NONE);
    struct sigaction on_fault = {}, previous = {};
    on_fault.sa_handler = probe_fault;
    sigemptyset(&on_fault.sa_mask);
    sigaction(SIGSEGV, &on_fault, &previous);
    volatile bool faulted = false;
    if (sigsetjmp(probe_jump, 1) == 0) {
      // volatile: a load whose value is unused would be dropped.
      volatile float lane0 = masked_load_lane0(reinterpret_cast<const float*>(bytes + page) - 1);
      static_cast<void>(lane0);
    } else {
      faulted = true;
    }
    sigaction(SIGSEGV, &previous, nullptr);
    munmap(base, 2 * page);
    return faulted;
  }();
  return faults;
}

}  // namespace guard_detail

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
    const bool readable_end = guard_detail::masked_loads_fault_past_lanes();
    if ((data_bytes && mprotect(map_ + page, data_bytes, PROT_READ | PROT_WRITE) != 0) ||
        (readable_end && mprotect(map_ + page + data_bytes, page, PROT_READ) != 0)) {
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
