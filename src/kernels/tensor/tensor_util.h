#pragma once
// Helpers shared by the data-movement kernels of kernels/tensor/: a strided copy
// that every layout op (Transpose, Slice, Expand, Tile, DepthToSpace, ...) reduces
// to, and the attribute/input readers their factories share.
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "base/small_vector.h"
#include "base/tensor.h"
#include "kernels/kernel.h"

namespace ember::kernels::tensor_ops {

// Index bookkeeping wide enough for Tile's doubled rank without touching the heap.
using IndexVec = SmallVector<int64_t, 12>;

// A copy of a `shape`-shaped block; strides are in elements and may be zero
// (broadcast) or negative (reversed slices).
struct StridedLayout {
  IndexVec shape;
  IndexVec src_strides;
  IndexVec dst_strides;
};

// Drops size-1 dims and merges neighbours that are contiguous in both source and
// destination, so most copies end in one long inner run. An empty block yields a
// layout whose shape holds a single 0.
StridedLayout coalesce(std::span<const int64_t> shape, std::span<const int64_t> src_strides,
                       std::span<const int64_t> dst_strides);

// Calls fn(src_offset, dst_offset) (in elements) for every index of the first
// `outer_rank` dims of the layout.
template <typename Fn>
void for_each_outer(const StridedLayout& l, size_t outer_rank, Fn&& fn) {
  for (size_t d = 0; d < outer_rank; ++d) {
    if (l.shape[d] == 0) return;
  }
  if (outer_rank == 0) {
    fn(int64_t{0}, int64_t{0});
    return;
  }
  IndexVec index(outer_rank, 0);
  int64_t src = 0;
  int64_t dst = 0;
  while (true) {
    fn(src, dst);
    size_t d = outer_rank;
    while (true) {
      --d;
      src += l.src_strides[d];
      dst += l.dst_strides[d];
      if (++index[d] < l.shape[d]) break;
      src -= l.src_strides[d] * l.shape[d];
      dst -= l.dst_strides[d] * l.shape[d];
      index[d] = 0;
      if (d == 0) return;
    }
  }
}

// Offsets (in elements) of outer index `index` (row-major over the first
// `outer_rank` dims of the layout).
inline void outer_offsets(const StridedLayout& l, size_t outer_rank, int64_t index, int64_t& src, int64_t& dst) {
  src = 0;
  dst = 0;
  for (size_t d = outer_rank; d-- > 0;) {
    int64_t i = index % l.shape[d];
    index /= l.shape[d];
    src += i * l.src_strides[d];
    dst += i * l.dst_strides[d];
  }
}

// Like for_each_outer, over the outer indices [begin, end) only.
template <typename Fn>
void for_each_outer_range(const StridedLayout& l, size_t outer_rank, int64_t begin, int64_t end, Fn&& fn) {
  if (begin >= end) return;
  IndexVec index(outer_rank, 0);
  int64_t src = 0;
  int64_t dst = 0;
  int64_t rest = begin;
  for (size_t d = outer_rank; d-- > 0;) {
    index[d] = rest % l.shape[d];
    rest /= l.shape[d];
    src += index[d] * l.src_strides[d];
    dst += index[d] * l.dst_strides[d];
  }
  for (int64_t k = begin; k < end; ++k) {
    fn(src, dst);
    for (size_t d = outer_rank; d-- > 0;) {
      src += l.src_strides[d];
      dst += l.dst_strides[d];
      if (++index[d] < l.shape[d]) break;
      src -= l.src_strides[d] * l.shape[d];
      dst -= l.dst_strides[d] * l.shape[d];
      index[d] = 0;
    }
  }
}

// Product of the first `outer_rank` dims of the layout.
inline int64_t outer_count(const StridedLayout& l, size_t outer_rank) {
  int64_t n = 1;
  for (size_t d = 0; d < outer_rank; ++d) n *= l.shape[d];
  return n;
}

// Data movement splits across threads only in ranges of at least this many bytes:
// below it waking a worker costs more than the copy it takes over. Transpose of a
// square f32 matrix, 1 vs 2 threads: 512 KiB 15.5 -> 11.4 us, 256 KiB 6.7 ->
// 6.9 us (method in docs/benchmarks/2026-11-30-thread-grains.md).
constexpr int64_t kParallelCopyBytes = 256 * 1024;

// Copies a coalesced block from `src` to `dst` (element size 1, 2, 4 or 8 bytes),
// splitting outer rows across threads when the block is large.
void copy_layout(const void* src, void* dst, const StridedLayout& layout, size_t elem_size);

// Copies the block described by shape/strides from `src` to `dst` (element size
// `elem_size` bytes; 1, 2, 4 or 8).
void copy_strided(const void* src, std::span<const int64_t> src_strides, void* dst,
                  std::span<const int64_t> dst_strides, std::span<const int64_t> shape, size_t elem_size);

// Fills `count` elements of `dst` with the `elem_size`-byte pattern at `value`.
void fill_elements(void* dst, int64_t count, const void* value, size_t elem_size);

// Data-movement kernels take any dtype with a fixed size; strings are rejected.
Status check_movable_dtype(DType t, std::string_view what);

// Whether the node has input `i` (not omitted).
inline bool has_input(const KernelInit& init, size_t i) {
  return i < init.input_dtypes.size() && init.input_dtypes[i] != DType::kUndefined;
}
// Fails when required input `i` is absent from the node.
Status require_input(const KernelInit& init, size_t i, std::string_view what);

inline IndexVec to_index_vec(const std::vector<int64_t>& v) { return IndexVec(v.begin(), v.end()); }

// Reads a 0-D/1-D integer input holding axes, pads, starts, ... into an IndexVec.
Result<IndexVec> read_index_input(const Tensor& t, std::string_view what);

// Output 0 is input 0's bytes under a new shape; run() copies only when the
// runtime could not make the output a view.
class ViewKernel : public OpKernel {
 public:
  bool is_view() const override { return true; }
  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.data() != in.data() && in.nbytes() != 0) std::memcpy(out.data(), in.data(), in.nbytes());
    return Status::ok();
  }
};

}  // namespace ember::kernels::tensor_ops
