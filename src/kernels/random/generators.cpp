// RandomUniform(Like), RandomNormal(Like) and Bernoulli: values drawn from
// RandomSource in row-major order, one draw (or gauss()) per element, computed as the ONNX reference implementation
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

// RandomUniform(Like) and RandomNormal(Like): numpy's rand() (uniform) or
// randn() (normal) cast to the dtype, then scaled and shifted in that dtype:
// u * (high - low) + low, or z * scale + mean. The shape is the input's (the
// Like ops) or the `shape` attribute.
class RandomFillKernel final : public OpKernel {
 public:
  struct Params {
    bool normal = false;
    DType dtype = DType::kF32;
    double scale = 1.0;  // high - low, or scale
    double shift = 0.0;  // low, or mean
    std::optional<uint32_t> seed;
    std::optional<Shape> shape;  // nullopt: input 0's
  };

  explicit RandomFillKernel(Params p) : p_(std::move(p)) {}

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, p_.dtype, p_.shape ? *p_.shape : ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    RandomSource source = RandomSource::from(p_.seed);
    Tensor& y = ctx.output(0);
    const int64_t n = y.numel();
    EMBER_SWITCH_FLOAT(p_.dtype, T, {
      using C = compute_t<T>;
      const C scale = static_cast<C>(p_.scale);
      const C shift = static_cast<C>(p_.shift);
      T* out = y.data_as<T>();
      for (int64_t i = 0; i < n; ++i) {
        const double draw = p_.normal ? source.next_gauss() : source.next_double();
        const C u = static_cast<C>(static_cast<T>(static_cast<C>(draw)));
        out[i] = static_cast<T>(static_cast<C>(static_cast<C>(static_cast<T>(u * scale)) + shift));
      }
    }, return internal_error("{}: unexpected dtype {}", p_.normal ? "RandomNormal" : "RandomUniform",
                             dtype_name(p_.dtype)));
    return Status::ok();
  }

 private:
  Params p_;
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

// Reads the distribution's attributes (low/high or mean/scale) and the seed.
Status read_fill_attrs(const ir::Node& node, RandomFillKernel::Params& p) {
  if (!dtype_is_float(p.dtype)) {
    return not_implemented("output dtype {} is not supported (float types only)", dtype_name(p.dtype));
  }
  ir::AttrReader attrs(node);
  if (p.normal) {
    p.scale = attrs.get_float("scale", 1.0f);
    p.shift = attrs.get_float("mean", 0.0f);
  } else {
    const float low = attrs.get_float("low", 0.0f);
    const float high = attrs.get_float("high", 1.0f);
    p.scale = static_cast<double>(high) - static_cast<double>(low);
    p.shift = low;
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  EMBER_ASSIGN_OR_RETURN(p.seed, read_seed(node, true));
  return Status::ok();
}

KernelResult create_like(const KernelInit& init, bool normal) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  RandomFillKernel::Params p;
  p.normal = normal;
  EMBER_ASSIGN_OR_RETURN(p.dtype, output_dtype(init));
  EMBER_RETURN_IF_ERROR(read_fill_attrs(init.node, p));
  return std::unique_ptr<OpKernel>(std::make_unique<RandomFillKernel>(std::move(p)));
}

// RandomUniform / RandomNormal: no inputs; `shape` (required) and `dtype` (float by default).
KernelResult create_from_shape(const KernelInit& init, bool normal) {
  RandomFillKernel::Params p;
  p.normal = normal;
  ir::AttrReader attrs(init.node);
  const int64_t dtype = attrs.get_int("dtype", static_cast<int64_t>(DType::kF32));
  const bool has_shape = attrs.has("shape");
  const std::vector<int64_t> shape = attrs.get_ints("shape");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (!dtype_is_known(static_cast<int32_t>(dtype))) return invalid_argument("dtype {} is not a known tensor type", dtype);
  p.dtype = static_cast<DType>(dtype);
  if (!has_shape) return invalid_argument("attribute 'shape' is required");
  for (int64_t d : shape) {
    if (d < 0) return invalid_argument("attribute 'shape' has a negative dimension {}", d);
  }
  p.shape = Shape(shape.begin(), shape.end());
  EMBER_RETURN_IF_ERROR(read_fill_attrs(init.node, p));
  return std::unique_ptr<OpKernel>(std::make_unique<RandomFillKernel>(std::move(p)));
}

}  // namespace

KernelResult create_random_uniform_like(const KernelInit& init) { return create_like(init, false); }
KernelResult create_random_normal_like(const KernelInit& init) { return create_like(init, true); }
KernelResult create_random_uniform(const KernelInit& init) { return create_from_shape(init, false); }
KernelResult create_random_normal(const KernelInit& init) { return create_from_shape(init, true); }

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
