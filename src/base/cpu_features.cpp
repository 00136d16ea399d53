#include "base/cpu_features.h"

#include <cpuid.h>

#include <cstdint>
#include <cstring>

namespace ember {
namespace {

uint64_t read_xcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  f.sse42 = c & bit_SSE4_2;
  bool osxsave = c & bit_OSXSAVE;
  bool cpu_avx = c & bit_AVX;
  bool cpu_fma = c & bit_FMA;
  bool cpu_f16c = c & bit_F16C;
  uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  bool ymm_state = (xcr0 & 0x6) == 0x6;           // SSE and AVX state
  bool zmm_state = ymm_state && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  f.avx = cpu_avx && ymm_state;
  f.fma = cpu_fma && f.avx;
  f.f16c = cpu_f16c && f.avx;
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &c, &d);
    f.avx2 = (b & bit_AVX2) && f.avx;
    f.avx512f = (b & bit_AVX512F) && zmm_state;
    f.avx512bw = (b & bit_AVX512BW) && f.avx512f;
    f.avx512vl = (b & bit_AVX512VL) && f.avx512f;
    f.avx512dq = (b & bit_AVX512DQ) && f.avx512f;
    f.avx512vnni = (c & bit_AVX512VNNI) && f.avx512f;
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
    f.avx512bf16 = (a1 & (1u << 5)) && f.avx512f;
    f.avx_vnni = (a1 & (1u << 4)) && f.avx;
  }
  __get_cpuid(0x80000000, &a, &b, &c, &d);
  if (a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002 + leaf, &a, &b, &c, &d);
      std::memcpy(brand + leaf * 16, &a, 4);
      std::memcpy(brand + leaf * 16 + 4, &b, 4);
      std::memcpy(brand + leaf * 16 + 8, &c, 4);
      std::memcpy(brand + leaf * 16 + 12, &d, 4);
    }
    f.brand = brand;
    while (!f.brand.empty() && f.brand.back() == ' ') f.brand.pop_back();
  }
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(sse42, "sse4.2");
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avx_vnni, "avxvnni");
  return s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace ember
