#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace ember {
namespace {

// Start -> end of every live map.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, uintptr_t> maps;
};

Registry& registry() {
  static Registry* r = new Registry();  // outlives maps released during static destruction
  return *r;
}

}  // namespace

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("'{}' is not a regular file", path);
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return io_error("cannot map '{}': {}", path, std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->size_ = static_cast<size_t>(st.st_size);
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().maps[reinterpret_cast<uintptr_t>(p)] = reinterpret_cast<uintptr_t>(p) + file->size_;
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
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

size_t release_mapped_pages(const void* data, size_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().maps.upper_bound(begin);
    if (it == registry().maps.begin()) return 0;
    --it;
    if (end > it->second) return 0;
  }
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last <= first) return 0;
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

}  // namespace ember
