#include "base/buffer.h"

#include <cstdlib>
#include <new>

namespace ember {

void AlignedBuffer::Free::operator()(void* p) const { std::free(p); }

void AlignedBuffer::resize(size_t bytes) {
  if (bytes <= size_ && data_) {
    size_ = bytes;
    return;
  }
  // Always hand out at least one aligned block so a zero-size tensor still has a valid pointer.
  void* p = std::aligned_alloc(kAlignment, align_up(bytes == 0 ? 1 : bytes));
  if (!p) throw std::bad_alloc();
  data_.reset(p);
  size_ = bytes;
}

}  // namespace ember
