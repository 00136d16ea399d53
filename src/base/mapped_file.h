#pragma once
// Read-only memory maps of whole files, and the release of pages nobody will
// read again (initializers a kernel copied into its own layout at creation).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"

namespace ember {

// A read-only private map of a whole file (empty files map to an empty span).
// Live maps are registered so release_mapped_pages can tell file pages (which
// the kernel re-reads from the file if touched again) from heap memory.
class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// When [data, data + bytes) lies inside a live MappedFile, drops the whole
// pages it covers from this process's resident memory (madvise MADV_DONTNEED:
// clean file pages are unmapped, and read again from the file if touched) and
// returns the bytes released; 0 for any other memory, which is left alone.
size_t release_mapped_pages(const void* data, size_t bytes);

}  // namespace ember
