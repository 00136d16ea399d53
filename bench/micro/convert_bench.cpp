// The f32 <-> f16/bf16 conversions of kernels/common/convert.h.
#include <memory>

#include "kernels/common/convert.h"
#include "micro_util.h"

namespace ember::bench {
namespace {

// Every conversion reads one element and writes one: 2 + 4 bytes.
constexpr int64_t kConvertBytes = 6;

using F32Buffer = MicroBuffer<float>;
using U16Buffer = MicroBuffer<uint16_t>;

// From 16-bit to f32: the input is an f32 buffer converted once (ordinary finite
// values, no NaN), so the timed loop sees what a model's activations look like.
MicroSetup from_16(Isa isa, int64_t n, bool bf16) {
  return [=] {
    const kernels::ConvertTable& t = kernels::convert_table(isa);
    auto src = std::make_shared<F32Buffer>(n, -4.0f, 4.0f);
    auto x = std::make_shared<U16Buffer>(n, 0.0f, 0.0f);
    auto y = std::make_shared<F32Buffer>(n, 0.0f, 0.0f);
    (bf16 ? t.f32_to_bf16 : t.f32_to_f16)(src->data(), x->data(), n);
    auto fn = bf16 ? t.bf16_to_f32 : t.f16_to_f32;
    return std::function<void()>([=] { fn(x->data(), y->data(), n); });
  };
}

MicroSetup to_16(Isa isa, int64_t n, bool bf16) {
  return [=] {
    const kernels::ConvertTable& t = kernels::convert_table(isa);
    auto x = std::make_shared<F32Buffer>(n, -4.0f, 4.0f);
    auto y = std::make_shared<U16Buffer>(n, 0.0f, 0.0f);
    auto fn = bf16 ? t.f32_to_bf16 : t.f32_to_f16;
    return std::function<void()>([=] { fn(x->data(), y->data(), n); });
  };
}

}  // namespace

void register_convert_benchmarks() {
  for (Isa isa : available_isas()) {
    for (int64_t n : kMicroSizes) {
      register_micro("convert", "f16_to_f32", isa, n, kConvertBytes, from_16(isa, n, false));
      register_micro("convert", "f32_to_f16", isa, n, kConvertBytes, to_16(isa, n, false));
      register_micro("convert", "bf16_to_f32", isa, n, kConvertBytes, from_16(isa, n, true));
      register_micro("convert", "f32_to_bf16", isa, n, kConvertBytes, to_16(isa, n, true));
    }
  }
}

}  // namespace ember::bench
