// Transpose: a strided copy, with a tiled path when the permutation swaps the two
// innermost (coalesced) dims, where a plain loop would stride through memory.
#include <algorithm>
#include <cstdint>

#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

// 32x32 tiles keep both the rows read and the rows written in L1 for 8-byte elements.
constexpr int64_t kTile = 32;

template <typename U>
void transpose_tiles(const U* src, int64_t src_row_stride, U* dst, int64_t dst_row_stride, int64_t rows,
                     int64_t cols) {
  // dst[i][j] = src[j][i]: dst row i reads column i of src.
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) dst[i * dst_row_stride + j] = src[j * src_row_stride + i];
      }
    }
  }
}

template <typename U>
void transpose_inner_swap(const void* src, void* dst, const StridedLayout& l) {
  size_t r = l.shape.size();
  int64_t rows = l.shape[r - 2];
  int64_t cols = l.shape[r - 1];
  int64_t src_row_stride = l.src_strides[r - 1];
  int64_t dst_row_stride = l.dst_strides[r - 2];
  const U* s = static_cast<const U*>(src);
  U* d = static_cast<U*>(dst);
  for_each_outer(l, r - 2, [&](int64_t so, int64_t doff) {
    transpose_tiles(s + so, src_row_stride, d + doff, dst_row_stride, rows, cols);
  });
}

class TransposeKernel final : public OpKernel {
 public:
  TransposeKernel(bool has_perm, IndexVec perm, size_t elem_size)
      : has_perm_(has_perm), perm_(std::move(perm)), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (has_perm_ && static_cast<int64_t>(perm_.size()) != in.rank()) {
      return invalid_argument("perm {} has {} entries but input 0 {} has rank {}", shape_to_string(perm_),
                              perm_.size(), in.describe(), in.rank());
    }
    IndexVec perm = permutation(in.rank());
    Shape out(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) out[i] = in.dim(perm[i]);
    ctx.set_output(0, in.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    Tensor& out = ctx.output(0);
    IndexVec perm = permutation(in.rank());
    Shape in_strides = contiguous_strides(in.shape());
    IndexVec src_strides(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) src_strides[i] = in_strides[static_cast<size_t>(perm[i])];
    StridedLayout l = coalesce(out.shape(), src_strides, contiguous_strides(out.shape()));
    size_t r = l.shape.size();
    bool inner_swap = r >= 2 && l.src_strides[r - 2] == 1 && l.dst_strides[r - 1] == 1;
    if (!inner_swap || out.numel() == 0) {
      copy_layout(in.data(), out.data(), l, elem_size_);
      return Status::ok();
    }
    switch (elem_size_) {
      case 1: transpose_inner_swap<uint8_t>(in.data(), out.data(), l); break;
      case 2: transpose_inner_swap<uint16_t>(in.data(), out.data(), l); break;
      case 4: transpose_inner_swap<uint32_t>(in.data(), out.data(), l); break;
      default: transpose_inner_swap<uint64_t>(in.data(), out.data(), l); break;
    }
    return Status::ok();
  }

 private:
  IndexVec permutation(int64_t rank) const {
    if (has_perm_) return perm_;
    IndexVec perm(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
    return perm;
  }

  bool has_perm_;
  IndexVec perm_;
  size_t elem_size_;
};

}  // namespace

KernelResult create_transpose(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  bool has_perm = attrs.has("perm");
  IndexVec perm = to_index_vec(attrs.get_ints("perm"));
  EMBER_RETURN_IF_ERROR(attrs.status());
  IndexVec seen(perm.size(), 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[static_cast<size_t>(p)]) {
      return invalid_argument("perm {} is not a permutation of {} axes", shape_to_string(perm), perm.size());
    }
    seen[static_cast<size_t>(p)] = 1;
  }
  return std::unique_ptr<OpKernel>(new TransposeKernel(has_perm, std::move(perm), dtype_size(init.input_dtypes[0])));
}

}  // namespace ember::kernels::tensor_ops
