// Transpose: after merging dims that stay adjacent, either rows that keep their
// inner dim (a memcpy each), or a matrix transpose between the output's inner dim
// and the dim that is contiguous in the source, repeated over the other dims.
#include <algorithm>
#include <cstdint>

#include "kernels/common/isa_tables.h"
#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"
#include "kernels/tensor/transpose_ukernels.h"
#include "threading/thread_pool.h"

namespace ember::kernels::tensor_ops {
namespace {

// 32x32 tiles keep both the rows read and the rows written in L1 for 8-byte elements.
constexpr int64_t kScalarTile = 32;

template <typename U>
void transpose_scalar(const void* src_v, int64_t ss, void* dst_v, int64_t ds, int64_t rows, int64_t cols) {
  const U* src = static_cast<const U*>(src_v);
  U* dst = static_cast<U*>(dst_v);
  for (int64_t i0 = 0; i0 < rows; i0 += kScalarTile) {
    const int64_t i1 = std::min(rows, i0 + kScalarTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kScalarTile) {
      const int64_t j1 = std::min(cols, j0 + kScalarTile);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) dst[j * ds + i] = src[i * ss + j];
      }
    }
  }
}

void fill_transpose_scalar(TransposeTable& t) {
  t.x8 = transpose_scalar<uint8_t>;
  t.x16 = transpose_scalar<uint16_t>;
  t.x32 = transpose_scalar<uint32_t>;
  t.x64 = transpose_scalar<uint64_t>;
}

TransposeFn pick_transpose(const TransposeTable& t, size_t elem_size) {
  switch (elem_size) {
    case 1: return t.x8;
    case 2: return t.x16;
    case 4: return t.x32;
    default: return t.x64;
  }
}

// Source rows per parallel work unit: the microkernels' 64-row blocks.
constexpr int64_t kRowsPerUnit = 64;

// The matrix transpose between output dim `m` (contiguous in the source) and the
// output's inner dim, once per index of the remaining dims.
void transpose_matrices(const std::byte* src, std::byte* dst, const StridedLayout& l, size_t m, size_t elem_size,
                        TransposeFn fn) {
  const size_t r = l.shape.size();
  StridedLayout outer;
  for (size_t d = 0; d + 1 < r; ++d) {
    if (d == m) continue;
    outer.shape.push_back(l.shape[d]);
    outer.src_strides.push_back(l.src_strides[d]);
    outer.dst_strides.push_back(l.dst_strides[d]);
  }
  const int64_t rows = l.shape[r - 1];
  const int64_t cols = l.shape[m];
  const int64_t src_stride = l.src_strides[r - 1];
  const int64_t dst_stride = l.dst_strides[m];
  const auto esize = static_cast<int64_t>(elem_size);
  const int64_t row_blocks = (rows + kRowsPerUnit - 1) / kRowsPerUnit;
  const int64_t units = outer_count(outer, outer.shape.size()) * row_blocks;
  const int64_t unit_bytes = std::min(rows, kRowsPerUnit) * cols * esize;
  const int64_t grain = std::max<int64_t>(1, kParallelCopyBytes / unit_bytes);
  threading::parallel_for(units, grain, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t so = 0;
      int64_t doff = 0;
      outer_offsets(outer, outer.shape.size(), u / row_blocks, so, doff);
      const int64_t i0 = u % row_blocks * kRowsPerUnit;
      so += i0 * src_stride;
      doff += i0;
      fn(src + so * esize, src_stride, dst + doff * esize, dst_stride, std::min(kRowsPerUnit, rows - i0), cols);
    }
  });
}

class TransposeKernel final : public OpKernel {
 public:
  TransposeKernel(bool has_perm, IndexVec perm, size_t elem_size)
      : has_perm_(has_perm), perm_(std::move(perm)), elem_size_(elem_size),
        transpose_(pick_transpose(transpose_table(), elem_size)) {}

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
    const size_t r = l.shape.size();
    if (out.numel() == 0 || r == 0 || l.src_strides[r - 1] == 1) {
      copy_layout(in.data(), out.data(), l, elem_size_);
      return Status::ok();
    }
    // The source's last non-unit dim survives coalescing with stride 1.
    size_t m = 0;
    while (l.src_strides[m] != 1) ++m;
    transpose_matrices(static_cast<const std::byte*>(in.data()), static_cast<std::byte*>(out.data()), l, m,
                       elem_size_, transpose_);
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
  TransposeFn transpose_;
};

}  // namespace

const TransposeTable& transpose_table(Isa isa) {
  static const auto tables =
      build_isa_tables<TransposeTable>(fill_transpose_scalar, fill_transpose_avx2, fill_transpose_avx512);
  return select_table(tables, isa);
}

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
