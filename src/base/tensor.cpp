#include "base/tensor.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/buffer.h"
#include "base/value_list.h"

namespace ember {

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Shape contiguous_strides(std::span<const int64_t> shape) {
  Shape strides(shape.size(), 1);
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

namespace {

// String elements are std::string objects: constructed empty here and destroyed
// with the storage, never placed in a planner's arena (docs/kernels/strings.md).
Tensor allocate_strings(Shape shape) {
  const auto n = static_cast<size_t>(shape_numel(shape));
  std::shared_ptr<std::string[]> strings(new std::string[std::max<size_t>(n, 1)]);
  void* p = strings.get();
  return Tensor(DType::kString, std::move(shape), p, std::shared_ptr<const void>(strings, p));
}

// Ranks past kMaxRank, element counts whose byte size (up to 16 bytes an
// element) would not fit in int64, and negative dims (a bug upstream), are
// refused before any arithmetic overflows.
void check_allocatable(DType dtype, std::span<const int64_t> shape) {
  if (shape.size() > kMaxRank) {
    throw AllocationError(fmt::format("cannot allocate a {} tensor of rank {}: past the {} dims a tensor may have",
                                      dtype_name(dtype), shape.size(), kMaxRank));
  }
  constexpr int64_t kMaxElements = int64_t{1} << 58;
  int64_t n = 1;
  bool ok = true;
  for (int64_t d : shape) ok = ok && d >= 0 && !__builtin_mul_overflow(n, d, &n);
  if (!ok || n > kMaxElements) {
    throw AllocationError(fmt::format("cannot allocate a {} tensor of shape {}: its size does not fit in 64 bits",
                                      dtype_name(dtype), shape_to_string(shape)));
  }
}

}  // namespace

Tensor Tensor::allocate_uninitialized(DType dtype, Shape shape) {
  check_allocatable(dtype, shape);
  if (dtype == DType::kString) return allocate_strings(std::move(shape));
  size_t bytes = dtype_nbytes(dtype, shape_numel(shape));
  auto buffer = std::make_shared<AlignedBuffer>(bytes);
  void* p = buffer->data();
  return Tensor(dtype, std::move(shape), p, std::shared_ptr<const void>(buffer, p));
}

Tensor Tensor::allocate(DType dtype, Shape shape) {
  Tensor t = allocate_uninitialized(dtype, std::move(shape));
  std::memset(t.data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::clone() const {
  if (dtype_is_container(dtype_)) return clone_container(*this);
  Tensor t = allocate(dtype_, shape_);
  if (dtype_ == DType::kString) {
    std::copy_n(data_as<std::string>(), numel(), t.data_as<std::string>());
    return t;
  }
  if (nbytes()) std::memcpy(t.data(), data_, nbytes());
  return t;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype_)) + shape_to_string(shape_); }

int64_t read_int(const Tensor& t, int64_t i) {
  EMBER_SWITCH_INT(t.dtype(), T, return static_cast<int64_t>(t.data_as<T>()[i]),
                   if (t.dtype() == DType::kBool) return t.data_as<bool>()[i] ? 1 : 0;
                   return static_cast<int64_t>(read_double(t, i)));
  return 0;
}

Result<Shape> read_ints(const Tensor& t, std::string_view what) {
  if (!dtype_is_int(t.dtype())) return invalid_argument("{} must be an integer tensor, got {}", what, t.describe());
  if (t.rank() > 1) return invalid_argument("{} must be 0-D or 1-D, got {}", what, t.describe());
  Shape out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = read_int(t, i);
  return out;
}

double read_double(const Tensor& t, int64_t i) {
  EMBER_SWITCH_ALL(t.dtype(), T, return static_cast<double>(static_cast<compute_t<T>>(t.data_as<T>()[i])),
                   return 0.0);
  return 0.0;
}

}  // namespace ember
