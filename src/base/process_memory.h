#pragma once
// Resident memory of this process, from Linux's /proc/self/status.
#include <cstdint>

namespace ember {

// The high-water mark of resident memory (VmHWM) in bytes; 0 where unavailable.
int64_t peak_resident_bytes();

}  // namespace ember
