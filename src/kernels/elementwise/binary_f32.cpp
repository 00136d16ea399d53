// Scalar f32 binary microkernels and binary_table(Isa).
//
// Max/Min keep the reference semantics of the variadic ops: a NaN in either
// operand propagates (the first operand's NaN when both are NaN, as
// `(a != a || a > b) ? a : b` gives), and on equal operands the second is
// returned, so max(+0, -0) is -0. ONNX Runtime propagates NaN the same way.
#include "kernels/common/isa_tables.h"
#include "kernels/elementwise/binary_ukernels.h"

namespace ember::kernels {
namespace {

struct AddF { static float apply(float a, float b) { return a + b; } };
struct SubF { static float apply(float a, float b) { return a - b; } };
struct MulF { static float apply(float a, float b) { return a * b; } };
struct DivF { static float apply(float a, float b) { return a / b; } };
struct MaxF { static float apply(float a, float b) { return (a != a || a > b) ? a : b; } };
struct MinF { static float apply(float a, float b) { return (a != a || a < b) ? a : b; } };

template <class Op>
void f32_vbinary_scalar(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op::apply(a[i], b[i]);
}
template <class Op>
void f32_vbinaryc_scalar(const float* a, const float* b, float* y, int64_t n) {
  const float c = *b;
  for (int64_t i = 0; i < n; ++i) y[i] = Op::apply(a[i], c);
}
template <class Op>
void f32_vrbinaryc_scalar(const float* a, const float* b, float* y, int64_t n) {
  const float c = *a;
  for (int64_t i = 0; i < n; ++i) y[i] = Op::apply(c, b[i]);
}

template <BinaryKind K, class Op>
void set_entry(BinaryTable& t) {
  constexpr int k = static_cast<int>(K);
  t.vv[k] = f32_vbinary_scalar<Op>;
  t.vs[k] = f32_vbinaryc_scalar<Op>;
  t.sv[k] = f32_vrbinaryc_scalar<Op>;
}

void fill_binary_scalar(BinaryTable& t) {
  set_entry<BinaryKind::kAdd, AddF>(t);
  set_entry<BinaryKind::kSub, SubF>(t);
  set_entry<BinaryKind::kMul, MulF>(t);
  set_entry<BinaryKind::kDiv, DivF>(t);
  set_entry<BinaryKind::kMax, MaxF>(t);
  set_entry<BinaryKind::kMin, MinF>(t);
}

}  // namespace

const BinaryTable& binary_table(Isa isa) {
  static const auto tables = build_isa_tables<BinaryTable>(fill_binary_scalar, fill_binary_avx2, fill_binary_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels
