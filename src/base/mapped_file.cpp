#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

namespace ember {
namespace {

// Start -> (end, file) of every live map.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, std::pair<uintptr_t, const MappedFile*>> maps;
};

Registry& registry() {
  static Registry* r = new Registry();  // outlives maps released during static destruction
  return *r;
}

constexpr uint64_t kNoFault = std::numeric_limits<uint64_t>::max();

// The SIGBUS handler's view of the live maps: a fixed table of atomics (a
// signal handler may not lock). A slot is claimed by its file pointer, then
// published by its begin address; unregistering clears begin first.
constexpr int kSlots = 1024;
struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<MappedFile*> file{nullptr};
};
Slot slots[kSlots];
std::atomic<int> used{0};  // slots [0, used) may be live
uintptr_t page_size = 0;
struct sigaction previous {};

}  // namespace

struct MappedFileFaults {
  static void install() {
    static std::once_flag once;
    std::call_once(once, [] {
      page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
      ::sigaction(SIGBUS, nullptr, &previous);  // before ours is live, so a SIGBUS meanwhile chains correctly
      struct sigaction action {};
      action.sa_sigaction = on_sigbus;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&action.sa_mask);
      ::sigaction(SIGBUS, &action, nullptr);
    });
  }

  static int add(MappedFile* file) {
    for (int i = 0; i < kSlots; ++i) {
      MappedFile* none = nullptr;
      if (!slots[i].file.compare_exchange_strong(none, file, std::memory_order_acq_rel)) continue;
      slots[i].end.store(reinterpret_cast<uintptr_t>(file->data_) + file->size_, std::memory_order_release);
      slots[i].begin.store(reinterpret_cast<uintptr_t>(file->data_), std::memory_order_release);
      int high = used.load(std::memory_order_acquire);
      while (high < i + 1 && !used.compare_exchange_weak(high, i + 1, std::memory_order_acq_rel)) {
      }
      return i;
    }
    return -1;  // full: this map reads as before, and a truncation kills as before
  }

  static void remove(int slot) {
    slots[slot].begin.store(0, std::memory_order_release);
    slots[slot].end.store(0, std::memory_order_release);
    slots[slot].file.store(nullptr, std::memory_order_release);
  }

  static void on_sigbus(int signal, siginfo_t* info, void* context) {
    const int saved_errno = errno;
    // Only a read of a page the file no longer has (not a SIGBUS sent by kill).
    if (info->si_code == BUS_ADRERR && take_fault(reinterpret_cast<uintptr_t>(info->si_addr))) {
      errno = saved_errno;
      return;  // the read runs again, on the page of zeros
    }
    if (previous.sa_flags & SA_SIGINFO) {
      if (previous.sa_sigaction) previous.sa_sigaction(signal, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
      previous.sa_handler(signal);
    } else {
      // No handler before ours: the default action, when the read runs again
      // and faults again, or (a sent signal) when this handler returns.
      struct sigaction fallback {};
      fallback.sa_handler = SIG_DFL;
      sigemptyset(&fallback.sa_mask);
      ::sigaction(SIGBUS, &fallback, nullptr);
      if (info->si_code <= 0) ::raise(SIGBUS);
    }
    errno = saved_errno;
  }

  // Maps zeros over the page of `address` when a live map holds it, and counts the fault there.
  static bool take_fault(uintptr_t address) {
    const int n = used.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      MappedFile* file = slots[i].file.load(std::memory_order_acquire);
      const uintptr_t begin = slots[i].begin.load(std::memory_order_acquire);
      if (!file || begin == 0 || address < begin || address >= slots[i].end.load(std::memory_order_acquire)) continue;
      const uintptr_t page = address / page_size * page_size;
      void* zeros = ::mmap(reinterpret_cast<void*>(page), page_size, PROT_READ,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (zeros == MAP_FAILED) return false;
      // The lowest lost offset, whatever order the pages were read in.
      uint64_t first = file->first_fault_offset_.load(std::memory_order_acquire);
      while (page - begin < first &&
             !file->first_fault_offset_.compare_exchange_weak(first, page - begin, std::memory_order_acq_rel)) {
      }
      file->faults_.fetch_add(1, std::memory_order_acq_rel);
      return true;
    }
    return false;
  }
};

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("'{}' is not a regular file", path);
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->first_fault_offset_.store(kNoFault);
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return io_error("cannot map '{}': {}", path, std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->size_ = static_cast<size_t>(st.st_size);
    MappedFileFaults::install();
    file->slot_ = MappedFileFaults::add(file.get());
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().maps[reinterpret_cast<uintptr_t>(p)] = {reinterpret_cast<uintptr_t>(p) + file->size_, file.get()};
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (!data_) return;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().maps.erase(reinterpret_cast<uintptr_t>(data_));
  }
  if (slot_ >= 0) MappedFileFaults::remove(slot_);
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

Status MappedFile::check() const {
  if (!faulted()) return Status::ok();
  return io_error("'{}' was truncated while it was mapped: its bytes from offset {} are gone (they read as zeros, "
                  "so results that used them are wrong); load the model again from a complete file",
                  path_, first_fault_offset_.load(std::memory_order_acquire));
}

std::shared_ptr<const MappedFile> MappedFile::containing(const void* p) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto it = registry().maps.upper_bound(at);
  if (it == registry().maps.begin()) return nullptr;
  --it;
  if (at >= it->second.first) return nullptr;
  return it->second.second->weak_from_this().lock();  // null once its last owner let go
}

size_t release_mapped_pages(const void* data, size_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().maps.upper_bound(begin);
    if (it == registry().maps.begin()) return 0;
    --it;
    if (end > it->second.first) return 0;
  }
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last <= first) return 0;
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

}  // namespace ember
