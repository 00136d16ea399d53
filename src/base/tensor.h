#pragma once
// Tensor: a typed, shaped view of memory, optionally owning it. Kernels see
// TensorViews; sessions hand out owning Tensors.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/dtype.h"
#include "base/small_vector.h"
#include "base/status.h"

namespace ember {

using Shape = SmallVector<int64_t, 6>;

// The most dims a tensor may have: NumPy 2's bound (NPY_MAXDIMS = 64). Real
// models stay far below it; a model or shape tensor past it is refused, so an
// absurd declared length never becomes an allocation or a rank-sized loop.
inline constexpr size_t kMaxRank = 64;

int64_t shape_numel(std::span<const int64_t> shape);
std::string shape_to_string(std::span<const int64_t> shape);
// Row-major (contiguous) element strides.
Shape contiguous_strides(std::span<const int64_t> shape);

class Tensor {
 public:
  Tensor() = default;
  // A view of memory owned elsewhere.
  Tensor(DType dtype, Shape shape, void* data) : dtype_(dtype), shape_(std::move(shape)), data_(data) {}
  // Owning, zero-filled storage.
  static Tensor allocate(DType dtype, Shape shape);
  // Owning storage with unspecified contents, for outputs about to be written.
  static Tensor allocate_uninitialized(DType dtype, Shape shape);
  // Keeps `keep_alive` (e.g. a file mapping) alive for as long as the view lives.
  Tensor(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> keep_alive)
      : dtype_(dtype), shape_(std::move(shape)), data_(const_cast<void*>(data)), storage_(std::move(keep_alive)) {}

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return dtype_nbytes(dtype_, numel()); }
  bool owns_storage() const { return storage_ != nullptr; }
  // Owns its storage and no other Tensor shares it: safe to overwrite in place.
  bool owns_unique_storage() const { return storage_ != nullptr && storage_.use_count() == 1; }

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T> T* data_as() { return static_cast<T*>(data_); }
  template <typename T> const T* data_as() const { return static_cast<const T*>(data_); }

  void set_data(void* p) { data_ = p; }
  void set_shape(Shape s) { shape_ = std::move(s); }
  void set_dtype(DType t) { dtype_ = t; }

  // A deep copy that owns its storage.
  Tensor clone() const;
  std::string describe() const;  // "float32[2,3]"

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<const void> storage_;
};

// Element i of an integer tensor (any int dtype) as int64; used for shape-like inputs.
int64_t read_int(const Tensor& t, int64_t i);
// Reads a 0-D or 1-D integer tensor into a Shape-like vector.
Result<Shape> read_ints(const Tensor& t, std::string_view what);
// Element i of a numeric tensor as double.
double read_double(const Tensor& t, int64_t i);

}  // namespace ember
