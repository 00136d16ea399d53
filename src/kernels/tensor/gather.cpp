// Gather, GatherElements and GatherND: reads selected by an int32/int64 index
// tensor. Data moves as raw words of the element size, so one instance serves
// every dtype of that size.
#include <algorithm>
#include <cstring>

#include "ir/graph.h"
#include "kernels/tensor/gather_scatter_common.h"
#include "kernels/tensor/tensor_util.h"
#include "threading/thread_pool.h"

namespace ember::kernels::gather_scatter {
namespace {

template <typename I>
Status check_gather_indices(const I* indices, int64_t count, int64_t axis_dim, int64_t axis) {
  for (int64_t j = 0; j < count; ++j) {
    int64_t i = indices[j];
    if (!wrap_index(i, axis_dim)) return index_out_of_range("Gather", indices[j], axis, axis_dim);
  }
  return Status::ok();
}

// out[o, j, :] = data[o, indices[j], :] for the output rows [begin, end) (row u is
// o = u / count, j = u % count), rows of `kRowBytes` bytes, or `row_bytes` when
// kRowBytes is 0. For axis 0 (an embedding lookup) this is one memcpy per
// looked-up row; a fixed size turns the memcpy of a single element into a move.
template <size_t kRowBytes, typename I>
void gather_rows(const uint8_t* data, const I* indices, uint8_t* out, int64_t axis_dim, int64_t count,
                 size_t row_bytes, int64_t begin, int64_t end) {
  const size_t bytes = kRowBytes != 0 ? kRowBytes : row_bytes;
  for (int64_t u = begin; u < end; ++u) {
    const int64_t o = u / count;
    const int64_t j = u - o * count;
    int64_t i = indices[j];
    if (i < 0) i += axis_dim;
    std::memcpy(out + static_cast<size_t>(u) * bytes, data + static_cast<size_t>(o * axis_dim + i) * bytes, bytes);
  }
}

template <typename I>
void gather_rows_parallel(const uint8_t* data, const I* indices, uint8_t* out, int64_t outer, int64_t axis_dim,
                          int64_t count, size_t row_bytes) {
  const int64_t rows = outer * count;
  const int64_t grain = std::max<int64_t>(1, tensor_ops::kParallelCopyBytes / static_cast<int64_t>(row_bytes));
  threading::parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    switch (row_bytes) {
      case 1: gather_rows<1>(data, indices, out, axis_dim, count, row_bytes, begin, end); break;
      case 2: gather_rows<2>(data, indices, out, axis_dim, count, row_bytes, begin, end); break;
      case 4: gather_rows<4>(data, indices, out, axis_dim, count, row_bytes, begin, end); break;
      case 8: gather_rows<8>(data, indices, out, axis_dim, count, row_bytes, begin, end); break;
      default: gather_rows<0>(data, indices, out, axis_dim, count, row_bytes, begin, end); break;
    }
  });
}

class GatherKernel final : public OpKernel {
 public:
  explicit GatherKernel(int64_t axis) : axis_(axis) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, data.rank(), "Gather axis"));
    Shape out;
    for (int64_t d = 0; d < axis; ++d) out.push_back(data.dim(d));
    for (int64_t d : ctx.input(1).shape()) out.push_back(d);
    for (int64_t d = axis + 1; d < data.rank(); ++d) out.push_back(data.dim(d));
    ctx.set_output(0, data.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const int64_t axis = axis_ < 0 ? axis_ + data.rank() : axis_;
    const int64_t outer = dims_product(data.shape(), 0, axis);
    const int64_t inner = dims_product(data.shape(), axis + 1, data.rank());
    const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(data.dtype());
    auto* out = static_cast<uint8_t*>(ctx.output(0).data());
    Status status;
    visit_index_type(indices.dtype(), [&]<typename I>() {
      status = check_gather_indices(indices.data_as<I>(), indices.numel(), data.dim(axis), axis);
      if (!status.is_ok() || outer == 0 || row_bytes == 0) return;
      gather_rows_parallel(static_cast<const uint8_t*>(data.data()), indices.data_as<I>(), out, outer,
                           data.dim(axis), indices.numel(), row_bytes);
    });
    return status;
  }

 private:
  int64_t axis_;
};

class GatherElementsKernel final : public OpKernel {
 public:
  explicit GatherElementsKernel(int64_t axis) : axis_(axis) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    if (indices.rank() != data.rank()) {
      return invalid_argument("GatherElements indices {} must have the rank of data {}", indices.describe(),
                              data.describe());
    }
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, data.rank(), "GatherElements axis"));
    for (int64_t d = 0; d < data.rank(); ++d) {
      if (d != axis && indices.dim(d) > data.dim(d)) {
        return invalid_argument("GatherElements indices {} exceed data {} on dim {}", indices.describe(),
                                data.describe(), d);
      }
    }
    ctx.set_output(0, data.dtype(), indices.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const int64_t axis = axis_ < 0 ? axis_ + data.rank() : axis_;
    const int64_t axis_dim = data.dim(axis);
    Shape strides = contiguous_strides(data.shape());
    const int64_t axis_stride = strides[static_cast<size_t>(axis)];
    strides[static_cast<size_t>(axis)] = 0;
    OffsetWalker walker(indices.shape(), std::move(strides));
    const int64_t count = indices.numel();
    Status status;
    visit_index_type(indices.dtype(), [&]<typename I>() {
      const I* idx = indices.data_as<I>();
      visit_word_type(dtype_size(data.dtype()), [&]<typename W>() {
        const W* src = data.data_as<W>();
        W* out = ctx.output(0).data_as<W>();
        for (int64_t j = 0; j < count; ++j, walker.next()) {
          int64_t i = idx[j];
          if (!wrap_index(i, axis_dim)) {
            status = index_out_of_range("GatherElements", idx[j], axis, axis_dim);
            return;
          }
          out[j] = src[walker.offset() + i * axis_stride];
        }
      });
    });
    return status;
  }

 private:
  int64_t axis_;
};

// Sizes of a GatherND/ScatterND problem: `batches` x `tuples` index tuples of
// length `depth`, each selecting a slice of `slice` elements.
struct NdLayout {
  int64_t batches = 1;
  int64_t tuples = 1;
  int64_t depth = 0;
  int64_t slice = 1;
  int64_t batch_stride = 1;  // elements of data per batch
  Shape dim_strides;         // element stride of each indexed data dim
  Shape dims;                // size of each indexed data dim
};

NdLayout nd_layout(const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  NdLayout l;
  const int64_t q = indices.rank();
  l.depth = indices.dim(q - 1);
  l.batches = dims_product(data.shape(), 0, batch_dims);
  l.tuples = dims_product(indices.shape(), batch_dims, q - 1);
  l.slice = dims_product(data.shape(), batch_dims + l.depth, data.rank());
  l.batch_stride = dims_product(data.shape(), batch_dims, data.rank());
  for (int64_t k = 0; k < l.depth; ++k) {
    l.dims.push_back(data.dim(batch_dims + k));
    l.dim_strides.push_back(dims_product(data.shape(), batch_dims + k + 1, data.rank()));
  }
  return l;
}

class GatherNdKernel final : public OpKernel {
 public:
  explicit GatherNdKernel(int64_t batch_dims) : batch_dims_(batch_dims) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const int64_t r = data.rank();
    const int64_t q = indices.rank();
    if (r < 1 || q < 1) return invalid_argument("GatherND needs data and indices of rank >= 1");
    if (batch_dims_ >= std::min(r, q)) {
      return invalid_argument("GatherND batch_dims {} must be less than the ranks of data {} and indices {}",
                              batch_dims_, data.describe(), indices.describe());
    }
    for (int64_t d = 0; d < batch_dims_; ++d) {
      if (data.dim(d) != indices.dim(d)) {
        return invalid_argument("GatherND batch dim {} differs: data {} vs indices {}", d, data.describe(),
                                indices.describe());
      }
    }
    const int64_t depth = indices.dim(q - 1);
    if (depth < 1 || depth > r - batch_dims_) {
      return invalid_argument("GatherND index tuples of length {} do not fit data {} with batch_dims {}", depth,
                              data.describe(), batch_dims_);
    }
    Shape out(indices.shape().begin(), indices.shape().end() - 1);
    for (int64_t d = batch_dims_ + depth; d < r; ++d) out.push_back(data.dim(d));
    ctx.set_output(0, data.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const NdLayout l = nd_layout(data, indices, batch_dims_);
    const size_t esize = dtype_size(data.dtype());
    const size_t slice_bytes = static_cast<size_t>(l.slice) * esize;
    const auto* src = static_cast<const uint8_t*>(data.data());
    auto* out = static_cast<uint8_t*>(ctx.output(0).data());
    Status status;
    visit_index_type(indices.dtype(), [&]<typename I>() {
      const I* idx = indices.data_as<I>();
      for (int64_t b = 0; b < l.batches; ++b) {
        for (int64_t t = 0; t < l.tuples; ++t, idx += l.depth) {
          int64_t offset = b * l.batch_stride;
          for (int64_t k = 0; k < l.depth; ++k) {
            int64_t i = idx[k];
            if (!wrap_index(i, l.dims[static_cast<size_t>(k)])) {
              status = index_out_of_range("GatherND", idx[k], batch_dims_ + k, l.dims[static_cast<size_t>(k)]);
              return;
            }
            offset += i * l.dim_strides[static_cast<size_t>(k)];
          }
          std::memcpy(out, src + static_cast<size_t>(offset) * esize, slice_bytes);
          out += slice_bytes;
        }
      }
    });
    return status;
  }

 private:
  int64_t batch_dims_;
};

Status check_gather_inputs(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "data"));
  return check_index_dtype(init.input_dtypes[1], "indices");
}

}  // namespace

KernelResult create_gather(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_gather_inputs(init));
  ir::AttrReader attrs(init.node);
  int64_t axis = attrs.get_int("axis", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new GatherKernel(axis));
}

KernelResult create_gather_elements(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_gather_inputs(init));
  ir::AttrReader attrs(init.node);
  int64_t axis = attrs.get_int("axis", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new GatherElementsKernel(axis));
}

KernelResult create_gather_nd(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_gather_inputs(init));
  ir::AttrReader attrs(init.node);
  int64_t batch_dims = attrs.get_int("batch_dims", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (batch_dims < 0) return invalid_argument("GatherND batch_dims must be >= 0, got {}", batch_dims);
  return std::unique_ptr<OpKernel>(new GatherNdKernel(batch_dims));
}

}  // namespace ember::kernels::gather_scatter
