#pragma once
// What the CPU and OS support, read once from CPUID and XCR0. Nothing else in
// Ember decodes CPUID bits.
#include <string>

namespace ember {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;
  std::string vendor;
  std::string brand;

  std::string describe() const;  // "avx2 fma f16c avx512f ..."
};

// Detected once; AVX/AVX-512 bits are set only when XCR0 shows the OS saves
// the corresponding register state.
const CpuFeatures& cpu_features();

}  // namespace ember
