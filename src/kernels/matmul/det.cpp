// Det: the determinant of each square matrix in the trailing two dims, by LU
// decomposition with partial pivoting in double precision.
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace ember::kernels {
namespace {

// Factors the n x n row-major matrix `a` in place and returns its determinant.
double lu_determinant(double* a, int64_t n) {
  double det = 1.0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r) {
      if (std::fabs(a[r * n + k]) > std::fabs(a[pivot * n + k])) pivot = r;
    }
    const double p = a[pivot * n + k];
    if (p == 0.0) return 0.0;
    if (pivot != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(a[k * n + c], a[pivot * n + c]);
      det = -det;
    }
    det *= p;
    for (int64_t r = k + 1; r < n; ++r) {
      const double f = a[r * n + k] / p;
      if (f == 0.0) continue;
      for (int64_t c = k + 1; c < n; ++c) a[r * n + c] -= f * a[k * n + c];
    }
  }
  return det;
}

class DetKernel final : public OpKernel {
 public:
  explicit DetKernel(DType dtype) : dtype_(dtype) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) {
      return invalid_argument("X must be a batch of square matrices [*, M, M], got {}", x.describe());
    }
    ctx.set_output(0, dtype_, Shape(x.shape().begin(), x.shape().end() - 2));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t n = x.dim(x.rank() - 1);
    const int64_t count = ctx.output(0).numel();
    std::vector<double> work(static_cast<size_t>(n * n));
    EMBER_SWITCH_FLOAT(dtype_, T, {
      const T* src = x.data_as<T>();
      T* dst = ctx.output(0).data_as<T>();
      for (int64_t b = 0; b < count; ++b) {
        for (int64_t i = 0; i < n * n; ++i) {
          work[static_cast<size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(src[b * n * n + i]));
        }
        dst[b] = static_cast<T>(static_cast<compute_t<T>>(lu_determinant(work.data(), n)));
      }
    }, return internal_error("Det: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_det(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType dtype = init.input_dtypes[0];
  if (!dtype_is_float(dtype)) {
    return not_implemented("X has dtype {}; Det supports float types only", dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<DetKernel>(dtype));
}

}  // namespace ember::kernels
