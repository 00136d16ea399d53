// Gemm: Y = alpha * op(A) * op(B) + beta * C, with C broadcast to [M, N]. f32
// runs on the sgemm driver (a constant B packed once at creation); other
// numeric types and EMBER_REFERENCE=1 run gemm_ref.
#include <memory>
#include <utility>

#include "kernels/common/shape_util.h"
#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/matmul_ops.h"
#include "kernels/matmul/sgemm.h"

namespace ember::kernels {
namespace {

struct GemmGeometry {
  int64_t m = 0, n = 0, k = 0;
  Shape c_strides;  // element strides of C read as [M, N]
};

// Copies C broadcast into Y, where the product then accumulates with beta.
template <typename T, typename Gemm>
void gemm_with_bias(const GemmParams& base, const GemmGeometry& g, const T* a, const T* b, const T* c, T* y,
                    Gemm&& gemm_fn) {
  GemmParams p = base;
  if (c != nullptr && p.beta != 0.0f) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) y[i * g.n + j] = c[i * g.c_strides[0] + j * g.c_strides[1]];
    }
  } else {
    p.beta = 0.0f;
  }
  gemm_fn(p, a, b, y);
}

class GemmKernel final : public OpKernel {
 public:
  GemmKernel(DType dtype, bool trans_a, bool trans_b, float alpha, float beta, const sgemm::SgemmTable* table,
             sgemm::PackedWeight weight)
      : dtype_(dtype),
        trans_a_(trans_a),
        trans_b_(trans_b),
        alpha_(alpha),
        beta_(beta),
        table_(table),
        weight_(std::move(weight)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(GemmGeometry g, geometry(ctx));
    ctx.set_output(0, dtype_, Shape{g.m, g.n});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(GemmGeometry g, geometry(ctx));
    GemmParams p;
    p.trans_a = trans_a_;
    p.trans_b = trans_b_;
    p.m = g.m;
    p.n = g.n;
    p.k = g.k;
    p.lda = ctx.input(0).dim(1);
    p.ldb = ctx.input(1).dim(1);
    p.ldc = g.n;
    p.alpha = alpha_;
    p.beta = beta_;
    const bool has_c = ctx.has_input(2);
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    if (table_ != nullptr) {
      const float* c = has_c ? ctx.input(2).data_as<float>() : nullptr;
      gemm_with_bias<float>(p, g, a.data_as<float>(), b.data_as<float>(), c, y.data_as<float>(),
                            [&](const GemmParams& q, const float* qa, const float* qb, float* qy) {
                              if (weight_.empty()) {
                                sgemm::gemm(*table_, q, qa, qb, qy);
                              } else {
                                weight_.gemm(*table_, q, qa, qy);
                              }
                            });
      return Status::ok();
    }
    EMBER_SWITCH_NUMERIC(dtype_, T,
                         gemm_with_bias<T>(p, g, a.data_as<T>(), b.data_as<T>(),
                                           has_c ? ctx.input(2).data_as<T>() : nullptr, y.data_as<T>(),
                                           [](const GemmParams& q, const T* qa, const T* qb, T* qy) {
                                             gemm<T>(q, qa, qb, qy);
                                           }),
                         return internal_error("Gemm: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

  bool prepacked_input(size_t i) const override { return i == 1 && !weight_.empty(); }
  int64_t packed_bytes() const override { return weight_.bytes(); }

 private:
  Result<GemmGeometry> geometry(const KernelContext& ctx) const {
    const Shape& a = ctx.input(0).shape();
    const Shape& b = ctx.input(1).shape();
    if (a.size() != 2 || b.size() != 2) {
      return invalid_argument("A and B must be 2-D, got A {} and B {}", shape_to_string(a), shape_to_string(b));
    }
    GemmGeometry g;
    g.m = trans_a_ ? a[1] : a[0];
    g.k = trans_a_ ? a[0] : a[1];
    const int64_t b_k = trans_b_ ? b[1] : b[0];
    g.n = trans_b_ ? b[0] : b[1];
    if (g.k != b_k) {
      return invalid_argument("inner dimensions differ: op(A) of A {} has K={} but op(B) of B {} has K={}",
                              shape_to_string(a), g.k, shape_to_string(b), b_k);
    }
    g.c_strides = Shape{0, 0};
    if (ctx.has_input(2)) {
      const Shape& c = ctx.input(2).shape();
      const Shape out{g.m, g.n};
      bool ok = c.size() <= 2;
      for (size_t i = 0; ok && i < c.size(); ++i) ok = c[i] == 1 || c[i] == out[i + 2 - c.size()];
      if (!ok) return invalid_argument("C {} does not broadcast to [{},{}]", shape_to_string(c), g.m, g.n);
      g.c_strides = broadcast_strides(c, out);
    }
    return g;
  }

  DType dtype_;
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  const sgemm::SgemmTable* table_;  // null: gemm_ref
  sgemm::PackedWeight weight_;       // op(B) when B is constant and f32
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_gemm(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  const DType t = init.input_dtypes[0];
  for (size_t i = 1; i < 3 && i < init.input_dtypes.size(); ++i) {
    const DType other = init.input_dtypes[i];
    if (other != DType::kUndefined && other != t) {
      return invalid_argument("input '{}' is {} but A is {}", i == 1 ? "B" : "C", dtype_name(other), dtype_name(t));
    }
  }
  if (!dtype_is_float(t) && !dtype_is_int(t)) return not_implemented("dtype {} is not supported", dtype_name(t));
  ir::AttrReader attrs(init.node);
  const int64_t trans_a = attrs.get_int("transA", 0);
  const int64_t trans_b = attrs.get_int("transB", 0);
  const float alpha = attrs.get_float("alpha", 1.0f);
  const float beta = attrs.get_float("beta", 1.0f);
  // Opsets 1-6 flag broadcasting of C; accepting broadcastable C always is a superset.
  attrs.get_int("broadcast", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if ((trans_a != 0 && trans_a != 1) || (trans_b != 0 && trans_b != 1)) {
    return invalid_argument("transA and transB must be 0 or 1, got {} and {}", trans_a, trans_b);
  }
  const sgemm::SgemmTable* table = nullptr;
  sgemm::PackedWeight weight;
  if (t == DType::kF32 && !reference_mode()) {
    table = &sgemm::sgemm_table();
    const Tensor* b = init.constant_inputs.size() > 1 ? init.constant_inputs[1] : nullptr;
    if (b != nullptr && b->rank() == 2 && b->data() != nullptr) {
      const int64_t k = trans_b == 1 ? b->dim(1) : b->dim(0);
      const int64_t n = trans_b == 1 ? b->dim(0) : b->dim(1);
      weight = sgemm::PackedWeight(*table, b->data_as<float>(), b->dim(1), trans_b == 1, k, n);
    }
  }
  return std::unique_ptr<OpKernel>(
      std::make_unique<GemmKernel>(t, trans_a == 1, trans_b == 1, alpha, beta, table, std::move(weight)));
}

}  // namespace ember::kernels
