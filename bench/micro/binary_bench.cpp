// Every BinaryKind of kernels/elementwise/binary_ukernels.h in its three operand
// forms: vv (same shape, also each row of a row-bias broadcast), vs and sv
// (one operand a scalar).
#include <iterator>
#include <memory>
#include <string>

#include "kernels/elementwise/binary_ukernels.h"
#include "micro_util.h"

namespace ember::bench {
namespace {

using kernels::BinaryF32Fn;
using kernels::BinaryKind;
using kernels::BinaryTable;

constexpr const char* kKindNames[] = {"add", "sub", "mul", "div", "max", "min"};
static_assert(std::size(kKindNames) == static_cast<size_t>(BinaryKind::kCount), "a BinaryKind has no name");

enum class Form { kVV, kVS, kSV };

struct FormInfo {
  Form form;
  const char* name;
  int64_t bytes;  // per output element: vv reads two f32 and writes one; vs/sv read one
};
constexpr FormInfo kForms[] = {{Form::kVV, "vv", 12}, {Form::kVS, "vs", 8}, {Form::kSV, "sv", 8}};

BinaryF32Fn pick(const BinaryTable& t, Form form, int kind) {
  switch (form) {
    case Form::kVV: return t.vv[kind];
    case Form::kVS: return t.vs[kind];
    case Form::kSV: return t.sv[kind];
  }
  return nullptr;
}

// Operands in [0.5, 4): Div never meets zero and the results stay ordinary.
MicroSetup binary_setup(Isa isa, Form form, int kind, int64_t n) {
  return [=] {
    const BinaryF32Fn fn = pick(kernels::binary_table(isa), form, kind);
    auto a = std::make_shared<MicroBuffer<float>>(n, 0.5f, 4.0f);
    auto b = std::make_shared<MicroBuffer<float>>(n, 0.5f, 4.0f);
    auto y = std::make_shared<MicroBuffer<float>>(n, 0.0f, 0.0f);
    return std::function<void()>([=] { fn(a->data(), b->data(), y->data(), n); });
  };
}

}  // namespace

void register_binary_benchmarks() {
  for (Isa isa : available_isas()) {
    for (const FormInfo& f : kForms) {
      for (int kind = 0; kind < static_cast<int>(BinaryKind::kCount); ++kind) {
        const std::string kernel = std::string(kKindNames[kind]) + "_" + f.name;
        for (int64_t n : kMicroSizes)
          register_micro("binary", kernel, isa, n, f.bytes, binary_setup(isa, f.form, kind, n));
      }
    }
  }
}

}  // namespace ember::bench
