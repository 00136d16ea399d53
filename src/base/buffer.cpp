#include "base/buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace ember {

void AlignedBuffer::Free::operator()(void* p) const { std::free(p); }

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
  const size_t want = data_ ? std::max(bytes, capacity_ + capacity_ / 2) : bytes;
  // Always hand out at least one aligned block so a zero-size tensor still has a valid pointer.
  void* p;
  size_t got;
  if (want >= kHugePage) {
    got = (want + kHugePage - 1) / kHugePage * kHugePage;
    p = std::aligned_alloc(kHugePage, got);
    if (p) madvise(p, got, MADV_HUGEPAGE);
  } else {
    got = align_up(want == 0 ? 1 : want);
    p = std::aligned_alloc(kAlignment, got);
  }
  if (!p) throw std::bad_alloc();
  data_.reset(p);
  size_ = bytes;
  capacity_ = got;
}

}  // namespace ember
