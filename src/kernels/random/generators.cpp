// RandomUniformLike and Bernoulli: values drawn from RandomSource in row-major
// order, one double per element, computed as the ONNX reference implementation
// computes them from numpy's RandomState (so a seed gives the reference's values).
#include <cmath>
#include <memory>

#include "kernels/random/random_ops.h"

namespace ember::kernels::random_ops {
namespace {

// The output dtype: the `dtype` attribute when set, else the input's.
Result<DType> output_dtype(const KernelInit& init) {
  ir::AttrReader attrs(init.node);
  const int64_t attr = attrs.get_int("dtype", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (attr == 0) return init.input_dtypes[0];
  if (!dtype_is_known(static_cast<int32_t>(attr))) return invalid_argument("dtype {} is not a known tensor type", attr);
  return static_cast<DType>(attr);
}

class RandomUniformLikeKernel final : public OpKernel {
 public:
  RandomUniformLikeKernel(DType dtype, double low, double high, std::optional<uint32_t> seed)
      : dtype_(dtype), low_(low), high_(high), seed_(seed) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, dtype_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    RandomSource source = RandomSource::from(seed_);
    Tensor& y = ctx.output(0);
    const int64_t n = y.numel();
    EMBER_SWITCH_FLOAT(dtype_, T, {
      using C = compute_t<T>;
      // numpy: rand() cast to the dtype, then scaled and shifted in that dtype.
      const C range = static_cast<C>(high_ - low_);
      const C low = static_cast<C>(low_);
      T* out = y.data_as<T>();
      for (int64_t i = 0; i < n; ++i) {
        const C u = static_cast<C>(static_cast<T>(static_cast<C>(source.next_double())));
        out[i] = static_cast<T>(static_cast<C>(static_cast<C>(static_cast<T>(u * range)) + low));
      }
    }, return internal_error("RandomUniformLike: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  double low_;
  double high_;
  std::optional<uint32_t> seed_;
};

// numpy's binomial(1, p) by inversion (legacy RandomState): one draw at least
// per element, p == 0 included; for p > 0.5 it counts failures of 1 - p.
int64_t binomial_one(RandomSource& source, double p) {
  const bool flip = p > 0.5;
  const double pp = flip ? 1.0 - p : p;
  const double q = 1.0 - pp;
  const double qn = std::exp(std::log(q));
  const auto bound = static_cast<int64_t>(std::min(1.0, pp + 10.0 * std::sqrt(pp * q + 1)));
  int64_t x = 0;
  double px = qn;
  double u = source.next_double();
  while (u > px) {
    ++x;
    if (x > bound) {
      x = 0;
      px = qn;
      u = source.next_double();
    } else {
      u -= px;
      px = ((1 - x + 1) * pp * px) / (static_cast<double>(x) * q);
    }
  }
  return flip ? 1 - x : x;
}

class BernoulliKernel final : public OpKernel {
 public:
  BernoulliKernel(DType dtype, std::optional<uint32_t> seed) : dtype_(dtype), seed_(seed) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, dtype_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& p = ctx.input(0);
    const int64_t n = p.numel();
    for (int64_t i = 0; i < n; ++i) {
      const double v = read_double(p, i);
      if (!(v >= 0.0 && v <= 1.0)) return invalid_argument("input[{}] = {} is not a probability in [0, 1]", i, v);
    }
    RandomSource source = RandomSource::from(seed_);
    EMBER_SWITCH_ALL(dtype_, T, {
      T* out = ctx.output(0).data_as<T>();
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<T>(static_cast<compute_t<T>>(binomial_one(source, read_double(p, i))));
      }
    }, return internal_error("Bernoulli: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  DType dtype_;
  std::optional<uint32_t> seed_;
};

}  // namespace

KernelResult create_random_uniform_like(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_ASSIGN_OR_RETURN(const DType dtype, output_dtype(init));
  if (!dtype_is_float(dtype)) {
    return not_implemented("output dtype {} is not supported (float types only)", dtype_name(dtype));
  }
  ir::AttrReader attrs(init.node);
  const float low = attrs.get_float("low", 0.0f);
  const float high = attrs.get_float("high", 1.0f);
  EMBER_RETURN_IF_ERROR(attrs.status());
  EMBER_ASSIGN_OR_RETURN(const std::optional<uint32_t> seed, read_seed(init.node, true));
  return std::unique_ptr<OpKernel>(std::make_unique<RandomUniformLikeKernel>(dtype, low, high, seed));
}

KernelResult create_bernoulli(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  if (!dtype_is_float(init.input_dtypes[0])) {
    return invalid_argument("input has dtype {}; Bernoulli takes float probabilities",
                            dtype_name(init.input_dtypes[0]));
  }
  EMBER_ASSIGN_OR_RETURN(const DType dtype, output_dtype(init));
  if (!(dtype_is_float(dtype) || dtype_is_int(dtype) || dtype == DType::kBool)) {
    return not_implemented("output dtype {} is not supported", dtype_name(dtype));
  }
  EMBER_ASSIGN_OR_RETURN(const std::optional<uint32_t> seed, read_seed(init.node, true));
  return std::unique_ptr<OpKernel>(std::make_unique<BernoulliKernel>(dtype, seed));
}

}  // namespace ember::kernels::random_ops
