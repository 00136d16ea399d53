#include "kernels/common/convert.h"

#include "base/dtype.h"
#include "kernels/common/isa_tables.h"

namespace ember::kernels {
namespace {

void f16_to_f32_scalar(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Float16::to_float(x[i]);
}
void f32_to_f16_scalar(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Float16::from_float(x[i]);
}
void bf16_to_f32_scalar(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = BFloat16::to_float(x[i]);
}
void f32_to_bf16_scalar(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = BFloat16::from_float(x[i]);
}

void fill_convert_scalar(ConvertTable& t) {
  t.f16_to_f32 = f16_to_f32_scalar;
  t.f32_to_f16 = f32_to_f16_scalar;
  t.bf16_to_f32 = bf16_to_f32_scalar;
  t.f32_to_bf16 = f32_to_bf16_scalar;
}

}  // namespace

const ConvertTable& convert_table(Isa isa) {
  static const auto tables = build_isa_tables<ConvertTable>(fill_convert_scalar, fill_convert_avx2, fill_convert_avx512);
  return select_table(tables, isa);
}

}  // namespace ember::kernels
