// GuardedBuffer (guard_buffer.h): the elements touch the chosen guard page, and
// one element outside either end is a SIGSEGV, natively and under QEMU's user
// mode, which the microkernel suites rely on to catch overruns.
// ctest: emulated CPUs
#include "guard_buffer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <utility>
#include <vector>

namespace ember::test {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(GuardedBuffer, ElementsTouchTheChosenGuard) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1024}, size_t{1025}}) {
    const GuardedBuffer<float> end(n, GuardAt::kEnd), start(n, GuardAt::kStart);
    EXPECT_EQ(address(end.data() + n) % page, 0u) << n;
    EXPECT_EQ(address(start.data()) % page, 0u) << n;
    ASSERT_EQ(end.size(), n);
    for (float v : end) EXPECT_EQ(v, 0.0f);
    for (float v : start) EXPECT_EQ(v, 0.0f);
  }
  const std::vector<uint16_t> values = {1, 2, 3};
  const GuardedBuffer<uint16_t> copied(values, GuardAt::kEnd), filled(3, 9, GuardAt::kStart);
  EXPECT_EQ(std::vector<uint16_t>(copied.begin(), copied.end()), values);
  EXPECT_EQ(std::vector<uint16_t>(filled.begin(), filled.end()), (std::vector<uint16_t>{9, 9, 9}));
}

TEST(GuardedBuffer, MoveKeepsTheMapping) {
  GuardedBuffer<int32_t> a(5, 7, GuardAt::kEnd);
  const int32_t* p = a.data();
  GuardedBuffer<int32_t> b(std::move(a));
  EXPECT_EQ(b.data(), p);
  GuardedBuffer<int32_t> c(1, GuardAt::kStart);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c[4], 7);
}

void touch(float* p, bool write) {
  volatile float* v = p;
  if (write) {
    *v = 1.0f;
  } else {
    static_cast<void>(*v);
  }
}

// The default "fast" death-test style forks without exec, so under QEMU the
// child stays emulated (a re-exec would run natively). Reads past the end fault
// unless masked loads fault on masked-out lanes (QEMU as Haswell-v4), where the
// end guard is readable.
TEST(GuardedBufferDeathTest, OneElementOutsideEitherEndFaults) {
  const bool end_readable = guard_detail::masked_loads_fault_past_lanes();
  for (bool write : {false, true}) {
    GuardedBuffer<float> end(7, GuardAt::kEnd), start(7, GuardAt::kStart), empty(0, GuardAt::kEnd);
    touch(end.data() + 6, write);
    touch(start.data(), write);
    EXPECT_EXIT(touch(start.data() - 1, write), testing::KilledBySignal(SIGSEGV), "") << "before the start";
    if (write || !end_readable) {
      EXPECT_EXIT(touch(end.data() + 7, write), testing::KilledBySignal(SIGSEGV), "") << "past the end";
      EXPECT_EXIT(touch(empty.data(), write), testing::KilledBySignal(SIGSEGV), "") << "zero elements";
    }
  }
}

}  // namespace
}  // namespace ember::test
