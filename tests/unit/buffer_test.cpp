// AlignedBuffer: alignment, capacity kept across smaller requests, geometric growth.
#include <gtest/gtest.h>

#include <cstdint>

#include "base/buffer.h"

namespace ember {
namespace {

TEST(AlignedBuffer, FirstAllocationIsExactAndAligned) {
  AlignedBuffer b(1000);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b.capacity(), align_up(1000));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kAlignment, 0u);
  AlignedBuffer empty(0);
  EXPECT_NE(empty.data(), nullptr);
}

TEST(AlignedBuffer, KeepsCapacityAndGrowsByHalfAgain) {
  AlignedBuffer b(64 * 1024);
  void* first = b.data();
  b.resize(1024);
  EXPECT_EQ(b.size(), 1024u);
  b.resize(64 * 1024);
  EXPECT_EQ(b.data(), first) << "growing back within the capacity must not reallocate";
  b.resize(64 * 1024 + 1);
  EXPECT_GE(b.capacity(), 96u * 1024) << "a buffer asked to grow takes half again";
  int reallocations = 0;
  void* last = b.data();
  for (size_t bytes = 64 * 1024; bytes < 64 * 1024 * 64; bytes += 4096) {  // a decode loop's growing scratch
    b.resize(bytes);
    if (b.data() != last) ++reallocations;
    last = b.data();
  }
  EXPECT_LE(reallocations, 12) << "growth by one page a step must reallocate O(log) times";
}

}  // namespace
}  // namespace ember
