// No heap allocation from libember_ort_ep.so per Run: this executable replaces
// the malloc family for the whole process (the dlopened ONNX Runtime and EP
// libraries included) and attributes each call made while counting to the code
// that asked for it: the first frame of its backtrace outside this executable
// (the hooks) and libstdc++ (operator new, std::string's growth). ORT's own
// allocations inside a Compute (the output tensors it creates when the EP asks
// for them) are ORT's, as they are for ORT's CPU kernels. A separate
// executable, since the replacement allocator is process-wide.
#include <gtest/gtest.h>

#if !defined(EMBER_SANITIZED)

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "model_builder.h"
#include "ort_reference.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);

namespace {

std::atomic<bool> g_counting{false};
struct Range {
  std::atomic<uintptr_t> begin{0}, end{0};
  bool contains(uintptr_t pc) const {
    return pc >= begin.load(std::memory_order_relaxed) && pc < end.load(std::memory_order_relaxed);
  }
};
Range g_library, g_executable, g_libstdcxx;
std::atomic<uint64_t> g_from_library{0};
thread_local bool t_in_hook = false;

// Deep enough for malloc <- operator new <- std::vector/AlignedBuffer <- Ember code.
constexpr int kFrames = 12;
// The stacks of the first library allocations, kept for the failure message
// (symbolizing inside the hook would allocate).
constexpr int kKeptStacks = 4;
struct KeptStack {
  void* frames[kFrames];
  int depth = 0;
  long thread = 0;  // kernel thread id
  int run = 0;      // the run in progress when it allocated
};
KeptStack g_kept[kKeptStacks];
std::atomic<int> g_run{-1};  // -1 while creating the session

void attribute() {
  if (!g_counting.load(std::memory_order_relaxed) || t_in_hook) return;
  t_in_hook = true;
  void* frames[kFrames];
  const int n = backtrace(frames, kFrames);
  for (int i = 1; i < n; ++i) {
    const auto pc = reinterpret_cast<uintptr_t>(frames[i]);
    if (g_executable.contains(pc) || g_libstdcxx.contains(pc)) continue;
    if (g_library.contains(pc)) {
      const uint64_t index = g_from_library.fetch_add(1, std::memory_order_relaxed);
      if (index < kKeptStacks) {
        KeptStack& kept = g_kept[index];
        std::copy(frames, frames + n, kept.frames);
        kept.depth = n;
        kept.thread = syscall(SYS_gettid);
        kept.run = g_run.load(std::memory_order_relaxed);
      }
    }
    break;
  }
  t_in_hook = false;
}

// The kept stacks as `library+offset symbol` lines (addr2line -e LIBRARY
// OFFSET names the source line), marking the thread that ran the test.
std::string kept_stacks(uint64_t count, long test_thread) {
  std::ostringstream out;
  for (uint64_t k = 0; k < std::min<uint64_t>(count, kKeptStacks); ++k) {
    const KeptStack& kept = g_kept[k];
    out << "allocation " << k << " in run " << kept.run << " on thread " << kept.thread
        << (kept.thread == test_thread ? " (the test's)" : " (another: an Ember worker?)") << "\n";
    for (int i = 1; i < kept.depth; ++i) {
      Dl_info info{};
      out << "  #" << i << " ";
      if (dladdr(kept.frames[i], &info) != 0 && info.dli_fname != nullptr) {
        const char* slash = std::strrchr(info.dli_fname, '/');
        out << (slash ? slash + 1 : info.dli_fname) << "+0x" << std::hex
            << (reinterpret_cast<uintptr_t>(kept.frames[i]) - reinterpret_cast<uintptr_t>(info.dli_fbase)) << std::dec;
        if (info.dli_sname != nullptr) out << " " << info.dli_sname;
      } else {
        out << kept.frames[i];
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace

extern "C" void* malloc(size_t n) {
  attribute();
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t count, size_t n) {
  attribute();
  return __libc_calloc(count, n);
}
extern "C" void* realloc(void* p, size_t n) {
  attribute();
  return __libc_realloc(p, n);
}
extern "C" void* aligned_alloc(size_t alignment, size_t n) {
  attribute();
  return __libc_memalign(alignment, n);
}
extern "C" int posix_memalign(void** out, size_t alignment, size_t n) {
  attribute();
  *out = __libc_memalign(alignment, n);
  return *out || n == 0 ? 0 : ENOMEM;
}
extern "C" void* memalign(size_t alignment, size_t n) {
  attribute();
  return __libc_memalign(alignment, n);
}

namespace ember::ortref {
namespace {

constexpr const char* kEp = "EmberExecutionProvider";

// The address ranges of the EP library, this executable (dl_iterate_phdr lists
// it first) and libstdc++.
struct Search {
  int visited = 0;
  int found = 0;
};

int find_ranges(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  Range* range = search->visited++ == 0                   ? &g_executable
                 : std::strstr(name, "libember_ort_ep.so") ? &g_library
                 : std::strstr(name, "libstdc++")          ? &g_libstdcxx
                                                           : nullptr;
  if (!range) return 0;
  uintptr_t begin = UINTPTR_MAX, end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    begin = std::min<uintptr_t>(begin, info->dlpi_addr + ph.p_vaddr);
    end = std::max<uintptr_t>(end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  range->begin = begin;
  range->end = end;
  ++search->found;
  return 0;
}

// Allocations the library makes while creating a session for `model`, and in
// 1000 runs after a warm-up (the first run plans and sizes every thread's
// kernel scratch). A failure lists the first allocations' stacks: a worker's
// first range of a kernel in a late run was the flake once, when pack buffers
// were plain thread_locals (threading/scratch.h).
void expect_no_allocation_per_run(const std::string& model) {
  OrtOptions options;
  options.plugin_ep = kEp;
  options.disable_cpu_ep_fallback = true;
  options.plugin_ep_options = {{"num_threads", "2"}};
  g_from_library = 0;
  g_counting = true;
  auto session = OrtSession::load_from_bytes({reinterpret_cast<const uint8_t*>(model.data()), model.size()}, options);
  g_counting = false;
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  // Non-vacuity: making the Ember session allocates, and is seen doing so.
  EXPECT_GT(g_from_library.load(), 0u);
  const Tensor x = random_f32({64, 128}, 2), y = random_f32({128}, 3);
  const std::vector<OrtInput> inputs{{"x", &x}, {"y", &y}};
  auto prepared = (*session)->prepare(inputs);
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*session)->run_prepared(*prepared).is_ok());
  g_from_library = 0;
  g_counting = true;
  Status st;
  for (int i = 0; i < 1000 && st.is_ok(); ++i) {
    g_run = i;
    st = (*session)->run_prepared(*prepared);
  }
  g_counting = false;
  g_run = -1;
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const uint64_t allocations = g_from_library.load();
  EXPECT_EQ(allocations, 0u) << "allocations made by libember_ort_ep.so in 1000 runs; the first:\n"
                             << kept_stacks(allocations, syscall(SYS_gettid));
}

TEST(OrtEpAllocations, NoneFromTheLibraryPerRun) {
  void* primer[4];
  backtrace(primer, 4);  // loads the unwinder (which allocates) before counting
  ASSERT_TRUE(register_ep_library("ember", EMBER_ORT_EP_LIBRARY).is_ok());
  Search search;
  dl_iterate_phdr(find_ranges, &search);
  ASSERT_EQ(search.found, 3) << "libember_ort_ep.so, this executable or libstdc++ is not mapped";
  {
    SCOPED_TRACE("a compiled partition: Add, Relu, MatMul on an initializer (both threads), Softmax");
    ModelBuilder b(17);
    b.add_input("x", DType::kF32, {64, 128});
    b.add_input("y", DType::kF32, {128});
    b.add_initializer("w", random_f32({128, 96}, 1));
    b.add_output("z", DType::kF32, {64, 96});
    b.add_node("Add", {"x", "y"}, {"s"});
    b.add_node("Relu", {"s"}, {"r"});
    b.add_node("MatMul", {"r", "w"}, {"m"});
    b.add_node("Softmax", {"m"}, {"z"}, {attr_int("axis", -1)});
    expect_no_allocation_per_run(b.serialize());
  }
  {
    SCOPED_TRACE("a node claimed alone (a kernel of the EP's registry): Add with broadcast");
    ModelBuilder b(17);
    b.add_input("x", DType::kF32, {64, 128});
    b.add_input("y", DType::kF32, {128});
    b.add_output("z", DType::kF32, {64, 128});
    b.add_node("Add", {"x", "y"}, {"z"});
    expect_no_allocation_per_run(b.serialize());
  }
  EXPECT_TRUE(unregister_ep_library("ember").is_ok());
}

}  // namespace
}  // namespace ember::ortref

#else

TEST(OrtEpAllocations, NoneFromTheLibraryPerRun) {
  GTEST_SKIP() << "replaces malloc, which AddressSanitizer owns in this build";
}

#endif
