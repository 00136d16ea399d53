// LabelEncoder (ai.onnx.ml 2-4): maps each element through keys -> values, with a
// default for keys not listed. Keys and values come from the typed list
// attributes or (opset 4) from tensor attributes of any dtype.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/ml/ml_ops.h"

namespace ember::kernels::ml_ops {
namespace {

enum class KeyKind { kString, kInt, kFloat };

KeyKind key_kind(DType t) {
  if (t == DType::kString) return KeyKind::kString;
  return dtype_is_int(t) ? KeyKind::kInt : KeyKind::kFloat;
}

// Float keys compare as Python's dict does for numbers (0.0 == -0.0), and NaN
// finds a NaN key, as in ONNX Runtime.
uint64_t float_key(double v) {
  if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
  if (v == 0) v = 0;
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

class LabelEncoderKernel final : public OpKernel {
 public:
  LabelEncoderKernel(const Tensor& keys, Tensor values, Tensor default_value)
      : kind_(key_kind(keys.dtype())), values_(std::move(values)), default_(std::move(default_value)) {
    for (int64_t i = 0; i < keys.numel(); ++i) {
      // A repeated key maps to its last value, as Python's dict(zip(keys, values)) does.
      switch (kind_) {
        case KeyKind::kString: strings_[keys.data_as<std::string>()[i]] = i; break;
        case KeyKind::kInt: ints_[read_int(keys, i)] = i; break;
        case KeyKind::kFloat: floats_[float_key(read_double(keys, i))] = i; break;
      }
    }
  }

  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, values_.dtype(), ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const bool strings = values_.dtype() == DType::kString;
    const size_t esize = dtype_size(values_.dtype());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t at = lookup(x, i);
      const Tensor& from = at < 0 ? default_ : values_;
      const int64_t k = at < 0 ? 0 : at;
      if (strings) {
        y.data_as<std::string>()[i] = from.data_as<std::string>()[k];
      } else {
        std::memcpy(static_cast<std::byte*>(y.data()) + static_cast<size_t>(i) * esize,
                    static_cast<const std::byte*>(from.data()) + static_cast<size_t>(k) * esize, esize);
      }
    }
    return Status::ok();
  }

 private:
  // The position of x[i] among the keys, or -1.
  int64_t lookup(const Tensor& x, int64_t i) const {
    switch (kind_) {
      case KeyKind::kString: {
        auto it = strings_.find(x.data_as<std::string>()[i]);
        return it == strings_.end() ? -1 : it->second;
      }
      case KeyKind::kInt: {
        auto it = ints_.find(read_int(x, i));
        return it == ints_.end() ? -1 : it->second;
      }
      case KeyKind::kFloat: {
        auto it = floats_.find(float_key(read_double(x, i)));
        return it == floats_.end() ? -1 : it->second;
      }
    }
    return -1;
  }

  KeyKind kind_;
  Tensor values_;
  Tensor default_;  // one element of the values' dtype
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<int64_t, int64_t> ints_;
  std::unordered_map<uint64_t, int64_t> floats_;
};

Tensor strings_tensor(const std::vector<std::string>& v) {
  Tensor t = Tensor::allocate(DType::kString, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<std::string>());
  return t;
}

template <typename T>
Tensor numbers_tensor(const std::vector<T>& v) {
  Tensor t = Tensor::allocate(dtype_of<T>, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<T>());
  return t;
}

// The one of keys_strings / keys_int64s / keys_floats / keys_tensor (or values_*) that is set.
Result<Tensor> read_mapping_side(ir::AttrReader& attrs, std::string_view side) {
  std::vector<Tensor> given;
  const std::string prefix(side);
  if (attrs.has(prefix + "_strings")) given.push_back(strings_tensor(attrs.get_strings(prefix + "_strings")));
  if (attrs.has(prefix + "_int64s")) given.push_back(numbers_tensor(attrs.get_ints(prefix + "_int64s")));
  if (attrs.has(prefix + "_floats")) given.push_back(numbers_tensor(attrs.get_floats(prefix + "_floats")));
  if (const Tensor* t = attrs.get_tensor(prefix + "_tensor")) given.push_back(t->clone());
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (given.size() != 1) {
    return invalid_model("exactly one of {0}_strings, {0}_int64s, {0}_floats and {0}_tensor must be set, got {1}",
                         side, given.size());
  }
  if (given[0].rank() != 1) return invalid_model("{}_tensor must be 1-D, got {}", side, given[0].describe());
  return std::move(given[0]);
}

// The default for keys not found: default_tensor with values_tensor, else the
// default_* attribute of the values' type with the spec's defaults.
Result<Tensor> read_default(ir::AttrReader& attrs, const Tensor& values, bool values_from_tensor) {
  if (values_from_tensor) {
    const Tensor* t = attrs.get_tensor("default_tensor");
    if (!t) {
      EMBER_RETURN_IF_ERROR(attrs.status());
      return not_implemented("values_tensor without default_tensor (the spec's implicit default) is not supported");
    }
    if (t->dtype() != values.dtype() || t->numel() != 1) {
      return invalid_model("default_tensor must be one {} value, got {}", dtype_name(values.dtype()), t->describe());
    }
    Tensor d = t->clone();
    d.set_shape({1});
    return d;
  }
  Tensor d;
  switch (values.dtype()) {
    case DType::kString: d = strings_tensor({attrs.get_string("default_string", "_Unused")}); break;
    case DType::kI64: d = numbers_tensor(std::vector<int64_t>{attrs.get_int("default_int64", -1)}); break;
    default: d = numbers_tensor(std::vector<float>{attrs.get_float("default_float", -0.0f)}); break;
  }
  EMBER_RETURN_IF_ERROR(attrs.status());
  return d;
}

}  // namespace

KernelResult create_label_encoder(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  const DType in = init.input_dtypes[0];
  ir::AttrReader attrs(init.node);
  EMBER_ASSIGN_OR_RETURN(Tensor keys, read_mapping_side(attrs, "keys"));
  EMBER_ASSIGN_OR_RETURN(Tensor values, read_mapping_side(attrs, "values"));
  if (keys.numel() != values.numel()) {
    return invalid_model("{} keys but {} values", keys.numel(), values.numel());
  }
  const bool keys_from_tensor = attrs.has("keys_tensor");
  if (keys_from_tensor ? keys.dtype() != in : key_kind(keys.dtype()) != key_kind(in)) {
    return invalid_argument("input X is {} but the keys are {}", dtype_name(in), dtype_name(keys.dtype()));
  }
  if (!keys_from_tensor && in != DType::kString && in != DType::kI64 && in != DType::kF32) {
    return invalid_argument("input X must be string, int64 or float32 for keys_* lists, got {}", dtype_name(in));
  }
  EMBER_ASSIGN_OR_RETURN(Tensor default_value, read_default(attrs, values, attrs.has("values_tensor")));
  if (values.dtype() != DType::kString && dtype_size(values.dtype()) == 0) {
    return not_implemented("values of dtype {} are not supported", dtype_name(values.dtype()));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<LabelEncoderKernel>(keys, std::move(values), std::move(default_value)));
}

}  // namespace ember::kernels::ml_ops
