// f32 binary microkernels, 16 lanes, 4 vectors per iteration; tails with masked
// loads and stores. Every op is one IEEE operation per lane, so results are
// bit-identical to the scalar table.
#include <immintrin.h>

#include "kernels/elementwise/binary_ukernels.h"

namespace ember::kernels {
namespace {

struct AddV { static __m512 apply(__m512 a, __m512 b) { return _mm512_add_ps(a, b); } };
struct SubV { static __m512 apply(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); } };
struct MulV { static __m512 apply(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); } };
struct DivV { static __m512 apply(__m512 a, __m512 b) { return _mm512_div_ps(a, b); } };
// VMAXPS returns the second operand when either is NaN or both are zero; the
// reference returns a when a is NaN, so put a back in those lanes.
struct MaxV {
  static __m512 apply(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
  }
};
struct MinV {
  static __m512 apply(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_min_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
  }
};

__mmask16 tail_mask(int64_t remaining) { return static_cast<__mmask16>((1u << remaining) - 1u); }

template <class Op>
void f32_vbinary_avx512_u64(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 r0 = Op::apply(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    const __m512 r1 = Op::apply(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
    const __m512 r2 = Op::apply(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
    const __m512 r3 = Op::apply(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));
    _mm512_storeu_ps(y + i, r0);
    _mm512_storeu_ps(y + i + 16, r1);
    _mm512_storeu_ps(y + i + 32, r2);
    _mm512_storeu_ps(y + i + 48, r3);
  }
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Op::apply(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, Op::apply(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

// Reverse = false: y = op(a[i], *b); true: y = op(*a, b[i]).
template <class Op, bool Reverse>
void f32_vbinaryc_avx512_u64(const float* a, const float* b, float* y, int64_t n) {
  const __m512 c = _mm512_set1_ps(Reverse ? *a : *b);
  const float* x = Reverse ? b : a;
  auto f = [c](__m512 v) { return Reverse ? Op::apply(c, v) : Op::apply(v, c); };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 r0 = f(_mm512_loadu_ps(x + i));
    const __m512 r1 = f(_mm512_loadu_ps(x + i + 16));
    const __m512 r2 = f(_mm512_loadu_ps(x + i + 32));
    const __m512 r3 = f(_mm512_loadu_ps(x + i + 48));
    _mm512_storeu_ps(y + i, r0);
    _mm512_storeu_ps(y + i + 16, r1);
    _mm512_storeu_ps(y + i + 32, r2);
    _mm512_storeu_ps(y + i + 48, r3);
  }
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

template <BinaryKind K, class Op>
void set_entry(BinaryTable& t) {
  constexpr int k = static_cast<int>(K);
  t.vv[k] = f32_vbinary_avx512_u64<Op>;
  t.vs[k] = f32_vbinaryc_avx512_u64<Op, false>;
  t.sv[k] = f32_vbinaryc_avx512_u64<Op, true>;
}

}  // namespace

void fill_binary_avx512(BinaryTable& t) {
  set_entry<BinaryKind::kAdd, AddV>(t);
  set_entry<BinaryKind::kSub, SubV>(t);
  set_entry<BinaryKind::kMul, MulV>(t);
  set_entry<BinaryKind::kDiv, DivV>(t);
  set_entry<BinaryKind::kMax, MaxV>(t);
  set_entry<BinaryKind::kMin, MinV>(t);
}

}  // namespace ember::kernels
