// Limits that fail cleanly: a run past the memory limit (EMBER_MEMORY_LIMIT /
// set_memory_limit), an allocator that fails (set_allocate_hook) and shapes
// whose size overflows int64 each end in an error Status naming what went
// wrong, and the session's next run works.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "graph_builder.h"
#include "op_test_util.h"
#include "runtime/session.h"

namespace ember {
namespace {

using test::GraphBuilder;

// y = x + x over float32[n].
std::unique_ptr<runtime::Session> doubling_session() {
  GraphBuilder b;
  b.input("x", DType::kF32, {-1});
  b.node("Add", {"x", "x"}, {"y"});
  return test::make_session(b.output("y").build(), true);
}

Result<std::vector<Tensor>> run(const runtime::Session& s, const Tensor& x) {
  runtime::NamedInput in[] = {{"x", &x}};
  return s.run(in);
}

Tensor filled(int64_t n, float v) { return test::make_tensor<float>({n}, std::vector<float>(static_cast<size_t>(n), v)); }

// Restores the process-wide settings a test changes.
class Limits : public ::testing::Test {
 protected:
  void SetUp() override { saved_limit_ = memory_limit(); }
  void TearDown() override {
    set_memory_limit(saved_limit_);
    set_allocate_hook(nullptr);
  }

 private:
  size_t saved_limit_ = 0;
};

TEST_F(Limits, ARunPastTheMemoryLimitFailsAndTheNextRunWorks) {
  auto session = doubling_session();
  ASSERT_TRUE(session);
  const Tensor big = filled(1 << 20, 1.0f), small = filled(1000, 2.0f);
  set_memory_limit(buffer_bytes_in_use() + (256 << 10));
  auto refused = run(*session, big);
  ASSERT_FALSE(refused) << "4 MiB of output under a 256 KiB allowance";
  EXPECT_NE(refused.status().message().find("memory limit"), std::string::npos) << refused.status().message();
  auto fits = run(*session, small);
  ASSERT_TRUE(fits) << fits.status().message();
  EXPECT_EQ(test::values_of<float>((*fits)[0]), std::vector<float>(1000, 4.0f));
  set_memory_limit(0);
  auto unlimited = run(*session, big);
  ASSERT_TRUE(unlimited) << unlimited.status().message();
  EXPECT_EQ((*unlimited)[0].data_as<float>()[(1 << 20) - 1], 2.0f);
}

void* failing_allocate(size_t, size_t) { return nullptr; }

TEST_F(Limits, AFailingAllocatorGivesAnErrorAndTheNextRunWorks) {
  auto session = doubling_session();
  ASSERT_TRUE(session);
  const Tensor x = filled(3000, 1.5f);
  set_allocate_hook(failing_allocate);
  auto failed = run(*session, x);
  ASSERT_FALSE(failed) << "a run of a new shape allocates";
  EXPECT_NE(failed.status().message().find("out of memory"), std::string::npos) << failed.status().message();
  set_allocate_hook(nullptr);
  auto ok = run(*session, x);
  ASSERT_TRUE(ok) << ok.status().message();
  EXPECT_EQ(test::values_of<float>((*ok)[0]), std::vector<float>(3000, 3.0f));
}

TEST_F(Limits, MemoryLimitCountsWhatBuffersHold) {
  const size_t before = buffer_bytes_in_use();
  {
    AlignedBuffer a(1000);
    EXPECT_EQ(buffer_bytes_in_use(), before + a.capacity());
    a.resize(100000);  // grows: the old block is given back
    EXPECT_EQ(buffer_bytes_in_use(), before + a.capacity());
    a.resize(10);  // never shrinks
    EXPECT_EQ(buffer_bytes_in_use(), before + a.capacity());
    AlignedBuffer b(std::move(a));
    EXPECT_EQ(a.capacity(), 0u);
    EXPECT_EQ(buffer_bytes_in_use(), before + b.capacity());
    a = AlignedBuffer(64);
    EXPECT_EQ(buffer_bytes_in_use(), before + b.capacity() + a.capacity());
    a = std::move(b);
    EXPECT_EQ(buffer_bytes_in_use(), before + a.capacity());
  }
  EXPECT_EQ(buffer_bytes_in_use(), before) << "every byte counted is given back";
}

TEST_F(Limits, ShapesWhoseSizeOverflowsAreRefused) {
  // Expand to a shape given at run time: 2^40 x 2^40 elements overflows int64.
  GraphBuilder b;
  b.input("x", DType::kF32, {1});
  b.input("shape", DType::kI64, {2});
  b.node("Expand", {"x", "shape"}, {"y"});
  auto session = test::make_session(b.output("y").build(), true);
  ASSERT_TRUE(session);
  const Tensor x = filled(1, 1.0f);
  for (std::vector<int64_t> dims : {std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40},
                                    std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 2}}) {
    const Tensor shape = test::make_tensor<int64_t>({2}, dims);
    runtime::NamedInput in[] = {{"x", &x}, {"shape", &shape}};
    auto refused = session->run(in);
    ASSERT_FALSE(refused) << "Expand to " << shape_to_string(dims);
    EXPECT_NE(refused.status().message().find("64 bits"), std::string::npos) << refused.status().message();
  }
  const Tensor shape = test::make_tensor<int64_t>({2}, {2, 3});
  runtime::NamedInput in[] = {{"x", &x}, {"shape", &shape}};
  auto ok = session->run(in);
  ASSERT_TRUE(ok) << ok.status().message();
  EXPECT_EQ(test::values_of<float>((*ok)[0]), std::vector<float>(6, 1.0f));
}

// Expand (which allocates) and Reshape (a view) to a shape whose length is
// only known at run time: past kMaxRank each run is refused naming the node.
TEST_F(Limits, RanksPastTheBoundAreRefusedAtRunTime) {
  for (const char* op : {"Expand", "Reshape"}) {
    GraphBuilder b;
    b.input("x", DType::kF32, {1});
    b.input("shape", DType::kI64, {-1});
    b.node(op, {"x", "shape"}, {"y"});
    auto session = test::make_session(b.output("y").build(), true);
    ASSERT_TRUE(session);
    const Tensor x = filled(1, 1.0f);
    const Tensor past = test::make_tensor<int64_t>({int64_t{kMaxRank + 1}}, std::vector<int64_t>(kMaxRank + 1, 1));
    runtime::NamedInput refused_in[] = {{"x", &x}, {"shape", &past}};
    auto refused = session->run(refused_in);
    ASSERT_FALSE(refused) << op;
    const std::string message = refused.status().message();
    EXPECT_NE(message.find(std::string("(") + op + "): output 0 would have rank 65, past the 64 dims"), std::string::npos)
        << message;
    const Tensor at_bound = test::make_tensor<int64_t>({int64_t{kMaxRank}}, std::vector<int64_t>(kMaxRank, 1));
    runtime::NamedInput in[] = {{"x", &x}, {"shape", &at_bound}};
    auto ok = session->run(in);
    ASSERT_TRUE(ok) << op << ": " << ok.status().message();
    EXPECT_EQ((*ok)[0].rank(), 64) << op;
  }
}

TEST_F(Limits, AnAllocationPastTheLimitThrowsAllocationErrorNamingIt) {
  set_memory_limit(buffer_bytes_in_use() + 1000);
  try {
    AlignedBuffer too_big(1 << 20);
    FAIL() << "allocated past the limit";
  } catch (const AllocationError& e) {
    EXPECT_NE(std::string(e.what()).find("memory limit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tensor::allocate(DType::kF32, {int64_t{1} << 31, int64_t{1} << 31, 4}), AllocationError);
  EXPECT_THROW(Tensor::allocate(DType::kF32, {-3}), AllocationError);
}

}  // namespace
}  // namespace ember
