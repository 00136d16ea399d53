// LpNormalization: x divided by its L1 or L2 norm along one axis, accumulated in
// double. A zero norm gives 0 rather than 0/0 (the spec's reference does so).
#include <cmath>
#include <memory>

#include "kernels/common/shape_util.h"
#include "kernels/norm/norm_ops.h"

namespace ember::kernels {
namespace {

template <typename T>
void lp_normalize(const T* x, T* y, int64_t outer, int64_t dim, int64_t inner, int p) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * dim * inner + i;
      double acc = 0;
      for (int64_t j = 0; j < dim; ++j) {
        const double v = static_cast<double>(static_cast<compute_t<T>>(x[base + j * inner]));
        acc += p == 1 ? std::fabs(v) : v * v;
      }
      const double norm = p == 1 ? acc : std::sqrt(acc);
      for (int64_t j = 0; j < dim; ++j) {
        const double v = static_cast<double>(static_cast<compute_t<T>>(x[base + j * inner]));
        y[base + j * inner] = static_cast<T>(static_cast<compute_t<T>>(norm == 0 ? 0.0 : v / norm));
      }
    }
  }
}

class LpNormKernel final : public OpKernel {
 public:
  LpNormKernel(DType dtype, int64_t axis, int p) : dtype_(dtype), axis_(axis), p_(p) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_RETURN_IF_ERROR(normalize_axis(axis_, x.rank()).status());
    ctx.set_output(0, dtype_, x.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(axis_, x.rank()));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
    EMBER_SWITCH_FLOAT(dtype_, T,
                       lp_normalize(x.data_as<T>(), ctx.output(0).data_as<T>(), outer, x.dim(axis), inner, p_),
                       return internal_error("LpNormalization: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  int64_t axis_;
  int p_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_lp_normalization(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_float_inputs(init, 1, true));
  ir::AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", -1);
  const int64_t p = attrs.get_int("p", 2);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (p != 1 && p != 2) return invalid_argument("p must be 1 or 2, got {}", p);
  return std::unique_ptr<OpKernel>(std::make_unique<LpNormKernel>(init.input_dtypes[0], axis, static_cast<int>(p)));
}

}  // namespace ember::kernels
