// f32 binary microkernels, 8 lanes, 4 vectors per iteration; tails with masked
// loads and stores. Every op is one IEEE operation per lane, so results are
// bit-identical to the scalar table.
#include <immintrin.h>

#include "kernels/elementwise/binary_ukernels.h"

namespace ember::kernels {
namespace {

struct AddV { static __m256 apply(__m256 a, __m256 b) { return _mm256_add_ps(a, b); } };
struct SubV { static __m256 apply(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); } };
struct MulV { static __m256 apply(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); } };
struct DivV { static __m256 apply(__m256 a, __m256 b) { return _mm256_div_ps(a, b); } };
// VMAXPS returns the second operand when either is NaN or both are zero; the
// reference returns a when a is NaN, so put a back in those lanes.
struct MaxV {
  static __m256 apply(__m256 a, __m256 b) {
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
};
struct MinV {
  static __m256 apply(__m256 a, __m256 b) {
    return _mm256_blendv_ps(_mm256_min_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
};

// All-ones in the first `remaining` (< 8) lanes, for VMASKMOVPS.
__m256i tail_mask(int64_t remaining) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(remaining)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <class Op>
void f32_vbinary_avx2_u32(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 r0 = Op::apply(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    const __m256 r1 = Op::apply(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    const __m256 r2 = Op::apply(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
    const __m256 r3 = Op::apply(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
    _mm256_storeu_ps(y + i, r0);
    _mm256_storeu_ps(y + i + 8, r1);
    _mm256_storeu_ps(y + i + 16, r2);
    _mm256_storeu_ps(y + i + 24, r3);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Op::apply(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, Op::apply(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

// Reverse = false: y = op(a[i], *b); true: y = op(*a, b[i]).
template <class Op, bool Reverse>
void f32_vbinaryc_avx2_u32(const float* a, const float* b, float* y, int64_t n) {
  const __m256 c = _mm256_set1_ps(Reverse ? *a : *b);
  const float* x = Reverse ? b : a;
  auto f = [c](__m256 v) { return Reverse ? Op::apply(c, v) : Op::apply(v, c); };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 r0 = f(_mm256_loadu_ps(x + i));
    const __m256 r1 = f(_mm256_loadu_ps(x + i + 8));
    const __m256 r2 = f(_mm256_loadu_ps(x + i + 16));
    const __m256 r3 = f(_mm256_loadu_ps(x + i + 24));
    _mm256_storeu_ps(y + i, r0);
    _mm256_storeu_ps(y + i + 8, r1);
    _mm256_storeu_ps(y + i + 16, r2);
    _mm256_storeu_ps(y + i + 24, r3);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, f(_mm256_maskload_ps(x + i, m)));
  }
}

template <BinaryKind K, class Op>
void set_entry(BinaryTable& t) {
  constexpr int k = static_cast<int>(K);
  t.vv[k] = f32_vbinary_avx2_u32<Op>;
  t.vs[k] = f32_vbinaryc_avx2_u32<Op, false>;
  t.sv[k] = f32_vbinaryc_avx2_u32<Op, true>;
}

}  // namespace

void fill_binary_avx2(BinaryTable& t) {
  set_entry<BinaryKind::kAdd, AddV>(t);
  set_entry<BinaryKind::kSub, SubV>(t);
  set_entry<BinaryKind::kMul, MulV>(t);
  set_entry<BinaryKind::kDiv, DivV>(t);
  set_entry<BinaryKind::kMax, MaxV>(t);
  set_entry<BinaryKind::kMin, MinV>(t);
}

}  // namespace ember::kernels
