#include "kernels/matmul/fused_matmul.h"

#include <memory>
#include <string>
#include <utility>

#include "kernels/common/shape_util.h"
#include "kernels/elementwise/binary_ukernels.h"
#include "kernels/matmul/matmul_geometry.h"
#include "kernels/matmul/sgemm.h"

namespace ember::kernels {
namespace {

struct Activation {
  UnaryKind kind;
  std::string_view name;
};

constexpr Activation kActivations[] = {
    {UnaryKind::kRelu, "Relu"},         {UnaryKind::kTanh, "Tanh"},         {UnaryKind::kSigmoid, "Sigmoid"},
    {UnaryKind::kGelu, "Gelu"},         {UnaryKind::kGeluTanh, "GeluTanh"}, {UnaryKind::kSilu, "Silu"},
};

// What the epilogue of one run reads; built on the stack in run().
struct EpilogueContext {
  const float* bias;
  BinaryF32Fn add;
  UnaryF32Fn activation;  // null: none
};

void bias_activation_epilogue(const void* ctx, int64_t /*row0*/, int64_t rows, int64_t col0, int64_t cols, float* c,
                              int64_t ldc) {
  const auto& e = *static_cast<const EpilogueContext*>(ctx);
  const UnaryParams params;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = c + r * ldc;
    e.add(row, e.bias + col0, row, cols);
    if (e.activation != nullptr) e.activation(row, row, cols, params);
  }
}

class FusedMatMulKernel final : public OpKernel {
 public:
  FusedMatMulKernel(std::string name, const sgemm::SgemmTable& table, sgemm::PackedWeight weight, BinaryF32Fn add,
                    UnaryF32Fn activation)
      : name_(std::move(name)), table_(table), weight_(std::move(weight)), add_(add), activation_(activation) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    const Shape& bias = ctx.input(2).shape();
    bool row = !bias.empty() && bias.size() <= g.out_shape.size() && bias.back() == g.n;
    for (size_t i = 0; row && i + 1 < bias.size(); ++i) row = bias[i] == 1;
    if (!row) {
      return invalid_argument("FusedMatMul node '{}': bias {} is not a row of N={} for output {}", name_,
                              shape_to_string(bias), g.n, shape_to_string(g.out_shape));
    }
    ctx.set_output(0, DType::kF32, std::move(g.out_shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    GemmParams p;
    p.m = g.m * shape_numel(g.batch);
    p.n = g.n;
    p.k = g.k;
    p.lda = g.k;
    p.ldc = g.n;
    const EpilogueContext e{ctx.input(2).data_as<float>(), add_, activation_};
    weight_.gemm(table_, p, ctx.input(0).data_as<float>(), ctx.output(0).data_as<float>(),
                 {bias_activation_epilogue, &e});
    return Status::ok();
  }

  bool prepacked_input(size_t i) const override { return i == 1; }
  int64_t packed_bytes() const override { return weight_.bytes(); }

 private:
  std::string name_;
  const sgemm::SgemmTable& table_;
  sgemm::PackedWeight weight_;
  BinaryF32Fn add_;
  UnaryF32Fn activation_;
};

}  // namespace

std::optional<std::string_view> fused_matmul_activation(UnaryKind kind) {
  for (const Activation& a : kActivations) {
    if (a.kind == kind) return a.name;
  }
  return std::nullopt;
}

Result<std::unique_ptr<OpKernel>> create_fused_matmul(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  constexpr const char* kNames[] = {"A", "B", "bias"};
  for (size_t i = 0; i < 3; ++i) {
    if (init.input_dtypes[i] != DType::kF32) {
      return invalid_argument("input '{}' is {}, expected float32", kNames[i], dtype_name(init.input_dtypes[i]));
    }
  }
  const Tensor* b = init.constant_inputs.size() > 1 ? init.constant_inputs[1] : nullptr;
  if (b == nullptr || b->data() == nullptr || b->rank() != 2) {
    return invalid_argument("B must be a constant 2-D tensor{}",
                            b == nullptr ? "" : ", got shape " + shape_to_string(b->shape()));
  }
  ir::AttrReader attrs(init.node);
  const std::string name = attrs.get_string("activation", "");
  EMBER_RETURN_IF_ERROR(attrs.status());
  UnaryF32Fn activation = nullptr;
  if (!name.empty()) {
    for (const Activation& a : kActivations) {
      if (a.name == name) activation = unary_table().get(a.kind);
    }
    if (activation == nullptr) return invalid_argument("activation '{}' is not supported", name);
  }
  const sgemm::SgemmTable& table = sgemm::sgemm_table();
  sgemm::PackedWeight weight(table, b->data_as<float>(), b->dim(1), false, b->dim(0), b->dim(1));
  const BinaryF32Fn add = binary_table().vv[static_cast<int>(BinaryKind::kAdd)];
  return std::unique_ptr<OpKernel>(
      std::make_unique<FusedMatMulKernel>(init.node.name, table, std::move(weight), add, activation));
}

}  // namespace ember::kernels
