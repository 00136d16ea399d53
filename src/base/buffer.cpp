#include "base/buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string_view>

#include <fmt/format.h>

namespace ember {
namespace {

std::atomic<size_t> g_in_use{0};
std::atomic<AllocateFn> g_allocate{nullptr};

// EMBER_MEMORY_LIMIT: bytes, or a number with a K, M or G suffix; 0 or unset: none.
size_t limit_from_environment() {
  const char* text = std::getenv("EMBER_MEMORY_LIMIT");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  const std::string_view suffix(end);
  const int shift = suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : suffix.empty() ? 0 : -1;
  if (end == text || shift < 0 || value > (~0ull >> shift)) {
    fmt::print(stderr, "ember: ignoring EMBER_MEMORY_LIMIT='{}' (bytes, or a number with K, M or G)\n", text);
    return 0;
  }
  return static_cast<size_t>(value << shift);
}

std::atomic<size_t>& limit() {
  static std::atomic<size_t> bytes{limit_from_environment()};
  return bytes;
}

}  // namespace

void set_memory_limit(size_t bytes) { limit().store(bytes); }
size_t memory_limit() { return limit().load(); }
size_t buffer_bytes_in_use() { return g_in_use.load(); }
void set_allocate_hook(AllocateFn fn) { g_allocate.store(fn); }

void AlignedBuffer::Free::operator()(void* p) const { std::free(p); }

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    g_in_use.fetch_sub(capacity_);
    data_ = std::move(other.data_);
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() { g_in_use.fetch_sub(capacity_); }

// Buffers of kHugePage and more (activations of real models, the arena) are
// placed on 2 MiB boundaries and offered to transparent huge pages (Debian's
// default THP mode is `madvise`): streaming kernels then miss the TLB once per
// 2 MiB instead of once per 4 KiB. Same-shape f32 Add over 1 Mi elements
// (ember_micro binary/add_vv/avx512/1Mi): 186 us -> 147 us. The cost is up to
// 2 MiB of rounding per such buffer.
void AlignedBuffer::resize(size_t bytes) {
  if (bytes <= capacity_ && data_) {
    size_ = bytes;
    return;
  }
  if (bytes > (size_t{1} << 62)) throw AllocationError(fmt::format("cannot allocate {} bytes", bytes));
  const size_t want = data_ ? std::max(bytes, capacity_ + capacity_ / 2) : bytes;
  // Always hand out at least one aligned block so a zero-size tensor still has a valid pointer.
  const size_t alignment = want >= kHugePage ? kHugePage : kAlignment;
  const size_t got = want >= kHugePage ? (want + kHugePage - 1) / kHugePage * kHugePage : align_up(want == 0 ? 1 : want);
  // The new block is counted before it exists and the old one until it is freed, so the limit holds at every moment.
  const size_t in_use = g_in_use.fetch_add(got) + got;
  const size_t cap = memory_limit();
  if (cap && in_use > cap) {
    g_in_use.fetch_sub(got);
    throw AllocationError(fmt::format("allocating {} bytes would pass the memory limit of {} bytes "
                                      "(EMBER_MEMORY_LIMIT; {} bytes in use)", got, cap, in_use - got));
  }
  const AllocateFn hook = g_allocate.load();
  void* p = hook ? hook(alignment, got) : std::aligned_alloc(alignment, got);
  if (!p) {
    g_in_use.fetch_sub(got);
    throw AllocationError(fmt::format("out of memory: a buffer of {} bytes is too large to allocate", got));
  }
  if (alignment == kHugePage) madvise(p, got, MADV_HUGEPAGE);
  g_in_use.fetch_sub(capacity_);
  data_.reset(p);
  size_ = bytes;
  capacity_ = got;
}

}  // namespace ember
