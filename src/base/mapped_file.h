#pragma once
// Read-only memory maps of whole files, and the release of pages nobody will
// read again (initializers a kernel copied into its own layout at creation).
//
// A file truncated while mapped makes reads of its lost pages raise SIGBUS.
// Ember's SIGBUS handler (installed with the first map, chaining to any handler
// before it) maps a page of zeros over a lost page of a live MappedFile and
// counts the fault on it, so the read finishes with zeros instead of killing
// the process; whoever read the map checks faulted() afterwards and reports the
// file (Session::run does, for the maps its weights live in). A SIGBUS outside
// every live map goes to the previous handler, or kills as it would have. A file
// replaced by rename keeps its old contents mapped. Not detected: a file
// rewritten in place, and the part of a truncation inside the new last page
// (the kernel zeroes that tail without a fault).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"

namespace ember {

// A read-only private map of a whole file (empty files map to an empty span).
// Live maps are registered so release_mapped_pages can tell file pages (which
// the kernel re-reads from the file if touched again) from heap memory, and so
// the SIGBUS handler can find them.
class MappedFile : public std::enable_shared_from_this<MappedFile> {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

  // Pages read after the file lost them (truncated underneath); they read as zeros.
  bool faulted() const { return faults_.load(std::memory_order_acquire) != 0; }
  // io_error naming the file and the first lost offset when faulted(), else ok.
  Status check() const;

  // The live map holding `p`, or null.
  static std::shared_ptr<const MappedFile> containing(const void* p);

 private:
  friend struct MappedFileFaults;
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  int slot_ = -1;  // in the SIGBUS handler's table; -1: not there (empty file, or the table was full)
  std::atomic<uint64_t> faults_{0};
  std::atomic<uint64_t> first_fault_offset_{0};
};

// When [data, data + bytes) lies inside a live MappedFile, drops the whole
// pages it covers from this process's resident memory (madvise MADV_DONTNEED:
// clean file pages are unmapped, and read again from the file if touched) and
// returns the bytes released; 0 for any other memory, which is left alone.
size_t release_mapped_pages(const void* data, size_t bytes);

}  // namespace ember
