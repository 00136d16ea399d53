#pragma once
// Shared pieces of the indexing kernels (Gather*, Scatter*, OneHot, NonZero,
// Compress, CumSum, CumProd, TopK, ArgMax/ArgMin, Unique): the factories the registry
// lists and the index/element helpers their run() loops use.
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/status.h"
#include "base/tensor.h"
#include "kernels/common/shape_util.h"
#include "kernels/kernel.h"

namespace ember::kernels::gather_scatter {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

KernelResult create_gather(const KernelInit& init);
KernelResult create_gather_elements(const KernelInit& init);
KernelResult create_gather_nd(const KernelInit& init);
KernelResult create_scatter_nd(const KernelInit& init);
KernelResult create_scatter_elements(const KernelInit& init);
KernelResult create_one_hot(const KernelInit& init);
KernelResult create_non_zero(const KernelInit& init);
KernelResult create_compress(const KernelInit& init);
KernelResult create_cum_sum(const KernelInit& init);
KernelResult create_cum_prod(const KernelInit& init);
KernelResult create_top_k(const KernelInit& init);
KernelResult create_arg_max(const KernelInit& init);
KernelResult create_arg_min(const KernelInit& init);
KernelResult create_unique(const KernelInit& init);
KernelResult create_non_max_suppression(const KernelInit& init);

// Index inputs are int32 or int64.
Status check_index_dtype(DType t, std::string_view what);
// Any fixed-size dtype (strings are not supported).
Status check_movable_dtype(DType t, std::string_view what);
// Numeric dtypes only (no bool, no string).
Status check_numeric_dtype(DType t, std::string_view what);

// The error every indexing op reports for a bad index value.
Status index_out_of_range(std::string_view op, int64_t index, int64_t axis, int64_t dim);

// Product of shape[begin, end).
inline int64_t dims_product(std::span<const int64_t> shape, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t d = begin; d < end; ++d) p *= shape[static_cast<size_t>(d)];
  return p;
}

// Maps a possibly negative index into [0, dim); false when out of range.
inline bool wrap_index(int64_t& i, int64_t dim) {
  if (i < 0) i += dim;
  return i >= 0 && i < dim;
}

// Calls f.template operator()<I>() with I the C++ type of an int32/int64 index tensor.
template <typename F>
void visit_index_type(DType t, F&& f) {
  if (t == DType::kI32) {
    f.template operator()<int32_t>();
  } else {
    f.template operator()<int64_t>();
  }
}

// Calls f.template operator()<W>() with W an unsigned word of `elem_size` bytes, so
// data movement is one template instance per size instead of one per dtype.
template <typename F>
void visit_word_type(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    default: f.template operator()<uint64_t>(); break;
  }
}

// Walks the elements of `shape` in row-major order while tracking the matching
// element offset in a tensor with `strides` (0 on dims the caller handles itself).
class OffsetWalker {
 public:
  OffsetWalker(std::span<const int64_t> shape, Shape strides)
      : shape_(shape), strides_(std::move(strides)), coord_(shape.size(), 0) {}
  int64_t offset() const { return offset_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++coord_[d] < shape_[d]) return;
      offset_ -= coord_[d] * strides_[d];
      coord_[d] = 0;
    }
  }

 private:
  std::span<const int64_t> shape_;
  Shape strides_;
  Shape coord_;
  int64_t offset_ = 0;
};

}  // namespace ember::kernels::gather_scatter
