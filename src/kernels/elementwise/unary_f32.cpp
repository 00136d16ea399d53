// The scalar level of the f32 unary microkernels (each kind's reference at
// float, which every SIMD level is tested against) and unary_table(Isa).
#include "kernels/common/isa_tables.h"
#include "kernels/elementwise/unary_reference.h"
#include "kernels/elementwise/unary_ukernels.h"

namespace ember::kernels {
namespace {

template <UnaryKind K>
void scalar_kernel(const float* x, float* y, int64_t n, const UnaryParams& p) {
  for (int64_t i = 0; i < n; ++i) y[i] = UnaryReference<K>::apply(x[i], p);
}

// Every kind of the op table has its math row.
constexpr int kMathRows = 0
#define EMBER_UNARY_MATH(Kind, reference, vector) +1
#include "kernels/elementwise/unary_math.inc"
#undef EMBER_UNARY_MATH
    ;
static_assert(kMathRows == static_cast<int>(UnaryKind::kCount), "a UnaryKind without its row in unary_math.inc");

void fill_unary_scalar(UnaryTable& t) {
#define EMBER_UNARY_MATH(Kind, reference, vector) \
  t.f32[static_cast<int>(UnaryKind::k##Kind)] = scalar_kernel<UnaryKind::k##Kind>;
#include "kernels/elementwise/unary_math.inc"
#undef EMBER_UNARY_MATH
}

}  // namespace

const UnaryTable& unary_table(Isa isa) {
  static const auto tables = build_isa_tables<UnaryTable>(fill_unary_scalar, fill_unary_avx2, fill_unary_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels
