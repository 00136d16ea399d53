// ScatterND, ScatterElements and the deprecated Scatter: a copy of data with the
// selected elements replaced by (or combined with) updates. Plain replacement
// moves raw words; reductions compute in compute_t<T> (f16/bf16 in f32).
#include <algorithm>
#include <cstring>
#include <string>

#include "ir/graph.h"
#include "kernels/tensor/gather_scatter_common.h"

namespace ember::kernels::gather_scatter {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

// `reduction` arrived in opset 16 (add, mul) and grew max/min in opset 18.
Result<Reduction> read_reduction(const KernelInit& init, std::string_view op) {
  ir::AttrReader attrs(init.node);
  const std::string s = attrs.get_string("reduction", "none");
  EMBER_RETURN_IF_ERROR(attrs.status());
  const int opset = init.node.opset;
  if (s == "none") return Reduction::kNone;
  if (opset >= 16 && s == "add") return Reduction::kAdd;
  if (opset >= 16 && s == "mul") return Reduction::kMul;
  if (opset >= 18 && s == "max") return Reduction::kMax;
  if (opset >= 18 && s == "min") return Reduction::kMin;
  return invalid_argument("{} reduction '{}' is not supported at opset {}", op, s, opset);
}

// Calls f(combine) where combine(T& dst, T src) applies the reduction.
template <typename T, typename F>
void visit_combine(Reduction r, F&& f) {
  using C = compute_t<T>;
  auto reduce_with = [&f](auto op) {
    f([op](T& d, T s) { d = static_cast<T>(static_cast<C>(op(static_cast<C>(d), static_cast<C>(s)))); });
  };
  switch (r) {
    case Reduction::kNone: f([](T& d, T s) { d = s; }); break;
    case Reduction::kAdd: reduce_with([](C a, C b) { return a + b; }); break;
    case Reduction::kMul: reduce_with([](C a, C b) { return a * b; }); break;
    case Reduction::kMax: reduce_with([](C a, C b) { return std::max(a, b); }); break;
    case Reduction::kMin: reduce_with([](C a, C b) { return std::min(a, b); }); break;
  }
}

// Runs f.template operator()<T>() with T the element type: a raw word for plain
// replacement (every dtype), the real type for reductions (numeric only).
template <typename F>
void visit_scatter_type(DType dtype, Reduction r, F&& f) {
  if (r == Reduction::kNone) {
    visit_word_type(dtype_size(dtype), f);
    return;
  }
  EMBER_SWITCH_NUMERIC(dtype, T, f.template operator()<T>(), break);
}

void copy_data_to_output(const Tensor& data, Tensor& out) {
  if (out.data() != data.data() && data.nbytes() != 0) std::memcpy(out.data(), data.data(), data.nbytes());
}

Status check_scatter_inputs(const KernelInit& init, Reduction r, std::string_view op) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "data"));
  EMBER_RETURN_IF_ERROR(check_index_dtype(init.input_dtypes[1], "indices"));
  if (init.input_dtypes[2] != init.input_dtypes[0]) {
    return invalid_argument("{} updates dtype {} differs from data dtype {}", op, dtype_name(init.input_dtypes[2]),
                            dtype_name(init.input_dtypes[0]));
  }
  if (r != Reduction::kNone && !dtype_is_float(init.input_dtypes[0]) && !dtype_is_int(init.input_dtypes[0])) {
    return not_implemented("{} with a reduction does not support {} data", op, dtype_name(init.input_dtypes[0]));
  }
  return Status::ok();
}

class ScatterNdKernel final : public OpKernel {
 public:
  explicit ScatterNdKernel(Reduction r) : reduction_(r) {}
  int inplace_input() const override { return 0; }

  Status infer(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    if (data.rank() < 1 || indices.rank() < 1) return invalid_argument("ScatterND needs data and indices of rank >= 1");
    const int64_t depth = indices.dim(indices.rank() - 1);
    if (depth > data.rank()) {
      return invalid_argument("ScatterND index tuples of length {} exceed the rank of data {}", depth,
                              data.describe());
    }
    Shape expected(indices.shape().begin(), indices.shape().end() - 1);
    for (int64_t d = depth; d < data.rank(); ++d) expected.push_back(data.dim(d));
    if (!(updates.shape() == expected)) {
      return invalid_argument("ScatterND updates {} must have shape {} for data {} and indices {}",
                              updates.describe(), shape_to_string(expected), data.describe(), indices.describe());
    }
    ctx.set_output(0, data.dtype(), data.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    Tensor& out = ctx.output(0);
    copy_data_to_output(data, out);
    const int64_t depth = indices.dim(indices.rank() - 1);
    const int64_t slice = dims_product(data.shape(), depth, data.rank());
    const int64_t count = dims_product(indices.shape(), 0, indices.rank() - 1);
    Status status;
    visit_index_type(indices.dtype(), [&]<typename I>() {
      visit_scatter_type(data.dtype(), reduction_, [&]<typename T>() {
        visit_combine<T>(reduction_, [&](auto combine) {
          status = scatter_slices<T>(indices.data_as<I>(), data.shape(), depth, count, slice, updates.data_as<T>(),
                                     out.data_as<T>(), combine);
        });
      });
    });
    return status;
  }

 private:
  template <typename T, typename I, typename Combine>
  static Status scatter_slices(const I* idx, std::span<const int64_t> shape, int64_t depth, int64_t count,
                               int64_t slice, const T* src, T* dst, Combine combine) {
    for (int64_t t = 0; t < count; ++t, idx += depth, src += slice) {
      int64_t offset = 0;
      for (int64_t k = 0; k < depth; ++k) {
        int64_t i = idx[k];
        const int64_t dim = shape[static_cast<size_t>(k)];
        if (!wrap_index(i, dim)) return index_out_of_range("ScatterND", idx[k], k, dim);
        offset = offset * dim + i;
      }
      T* row = dst + offset * slice;
      for (int64_t e = 0; e < slice; ++e) combine(row[e], src[e]);
    }
    return Status::ok();
  }

  Reduction reduction_;
};

class ScatterElementsKernel final : public OpKernel {
 public:
  ScatterElementsKernel(int64_t axis, Reduction r) : axis_(axis), reduction_(r) {}
  int inplace_input() const override { return 0; }

  Status infer(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const Tensor& updates = ctx.input(2);
    if (indices.rank() != data.rank() || !(updates.shape() == indices.shape())) {
      return invalid_argument("ScatterElements needs indices {} and updates {} of one shape with the rank of data {}",
                              indices.describe(), updates.describe(), data.describe());
    }
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, data.rank(), "ScatterElements axis"));
    for (int64_t d = 0; d < data.rank(); ++d) {
      if (d != axis && indices.dim(d) > data.dim(d)) {
        return invalid_argument("ScatterElements indices {} exceed data {} on dim {}", indices.describe(),
                                data.describe(), d);
      }
    }
    ctx.set_output(0, data.dtype(), data.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    Tensor& out = ctx.output(0);
    copy_data_to_output(data, out);
    const int64_t axis = axis_ < 0 ? axis_ + data.rank() : axis_;
    Shape strides = contiguous_strides(data.shape());
    const int64_t axis_stride = strides[static_cast<size_t>(axis)];
    strides[static_cast<size_t>(axis)] = 0;
    OffsetWalker walker(indices.shape(), std::move(strides));
    const int64_t axis_dim = data.dim(axis);
    const int64_t count = indices.numel();
    Status status;
    visit_index_type(indices.dtype(), [&]<typename I>() {
      const I* idx = indices.data_as<I>();
      visit_scatter_type(data.dtype(), reduction_, [&]<typename T>() {
        const T* src = ctx.input(2).data_as<T>();
        T* dst = out.data_as<T>();
        visit_combine<T>(reduction_, [&](auto combine) {
          for (int64_t j = 0; j < count; ++j, walker.next()) {
            int64_t i = idx[j];
            if (!wrap_index(i, axis_dim)) {
              status = index_out_of_range("ScatterElements", idx[j], axis, axis_dim);
              return;
            }
            combine(dst[walker.offset() + i * axis_stride], src[j]);
          }
        });
      });
    });
    return status;
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

}  // namespace

KernelResult create_scatter_nd(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(Reduction r, read_reduction(init, "ScatterND"));
  EMBER_RETURN_IF_ERROR(check_scatter_inputs(init, r, "ScatterND"));
  return std::unique_ptr<OpKernel>(new ScatterNdKernel(r));
}

// Also serves the deprecated Scatter (opset 9-10), which is ScatterElements
// without a reduction.
KernelResult create_scatter_elements(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(Reduction r, read_reduction(init, init.node.op_type));
  EMBER_RETURN_IF_ERROR(check_scatter_inputs(init, r, init.node.op_type));
  ir::AttrReader attrs(init.node);
  int64_t axis = attrs.get_int("axis", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new ScatterElementsKernel(axis, r));
}

}  // namespace ember::kernels::gather_scatter
