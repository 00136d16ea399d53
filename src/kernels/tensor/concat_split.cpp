// Concat and Split: contiguous row copies along one axis, split by bytes across
// threads.
#include <algorithm>
#include <cstring>

#include "kernels/common/shape_util.h"
#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"
#include "threading/thread_pool.h"

namespace ember::kernels::tensor_ops {
namespace {

// Product of dims [begin, end).
int64_t dims_product(const Shape& shape, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t d = begin; d < end; ++d) n *= shape[static_cast<size_t>(d)];
  return n;
}

// Walks bytes [begin, end) of a row-major block of rows of `row_bytes`, each row
// made of `parts` chunks laid end to end (chunk k is chunk_bytes(k) long), and
// calls fn(k, row, skip, len) for `len` bytes of chunk k of that row starting
// `skip` bytes into the chunk. Lets Concat and Split split their copies by bytes
// across threads, whatever the axis.
template <typename ChunkBytes, typename Fn>
void walk_chunks(int64_t begin, int64_t end, int64_t row_bytes, size_t parts, ChunkBytes&& chunk_bytes, Fn&& fn) {
  int64_t row = begin / row_bytes;
  int64_t pos = begin - row * row_bytes;
  size_t k = 0;
  int64_t chunk_start = 0;
  while (chunk_start + chunk_bytes(k) <= pos) chunk_start += chunk_bytes(k++);
  for (int64_t at = begin; at < end;) {
    const int64_t chunk = chunk_bytes(k);
    const int64_t skip = pos - chunk_start;
    const int64_t len = std::min(chunk - skip, end - at);
    if (len > 0) fn(k, row, skip, len);
    at += len;
    pos += len;
    if (pos - chunk_start == chunk) {
      chunk_start += chunk;
      if (++k == parts) {
        k = 0;
        chunk_start = 0;
        pos = 0;
        ++row;
      }
    }
  }
}

class ConcatKernel final : public OpKernel {
 public:
  ConcatKernel(int64_t axis, size_t elem_size) : axis_(axis), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& first = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, first.rank()));
    Shape out = first.shape();
    out[static_cast<size_t>(axis)] = 0;
    for (size_t k = 0; k < ctx.num_inputs(); ++k) {
      const Tensor& in = ctx.input(k);
      bool same = in.rank() == first.rank();
      for (int64_t d = 0; same && d < in.rank(); ++d) same = d == axis || in.dim(d) == first.dim(d);
      if (!same) {
        return invalid_argument("input {} {} does not match input 0 {} outside axis {}", k, in.describe(),
                                first.describe(), axis);
      }
      out[static_cast<size_t>(axis)] += in.dim(axis);
    }
    ctx.set_output(0, first.dtype(), std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    int64_t axis = axis_ < 0 ? axis_ + out.rank() : axis_;
    const int64_t total = static_cast<int64_t>(out.nbytes());
    if (total == 0) return Status::ok();
    const int64_t inner_bytes = dims_product(out.shape(), axis + 1, out.rank()) * static_cast<int64_t>(elem_size_);
    const int64_t row_bytes = out.dim(axis) * inner_bytes;
    auto chunk_bytes = [&](size_t k) { return ctx.input(k).dim(axis) * inner_bytes; };
    auto* dst = static_cast<std::byte*>(out.data());
    threading::parallel_for(total, kParallelCopyBytes, [&](int64_t begin, int64_t end) {
      std::byte* d = dst + begin;
      walk_chunks(begin, end, row_bytes, ctx.num_inputs(), chunk_bytes,
                  [&](size_t k, int64_t row, int64_t skip, int64_t len) {
                    const auto* src = static_cast<const std::byte*>(ctx.input(k).data());
                    std::memcpy(d, src + row * chunk_bytes(k) + skip, static_cast<size_t>(len));
                    d += len;
                  });
    });
    return Status::ok();
  }

 private:
  int64_t axis_;
  size_t elem_size_;
};

enum class SplitSource { kEqual, kAttribute, kInput };

class SplitKernel final : public OpKernel {
 public:
  SplitKernel(int64_t axis, SplitSource source, IndexVec split_attr, int64_t num_outputs, size_t elem_size)
      : axis_(axis), source_(source), split_attr_(std::move(split_attr)), num_outputs_(num_outputs),
        elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, in.rank()));
    auto n = static_cast<int64_t>(ctx.num_outputs());
    int64_t dim = in.dim(axis);
    bool from_input = source_ == SplitSource::kInput && ctx.has_input(1);
    if (from_input && !ctx.has_value(1)) return needs_value(1);
    if (from_input || source_ == SplitSource::kAttribute) {
      int64_t count = from_input ? ctx.input(1).numel() : static_cast<int64_t>(split_attr_.size());
      if (from_input && !dtype_is_int(ctx.input(1).dtype())) {
        return invalid_argument("input 1 (split) must be an integer tensor, got {}", ctx.input(1).describe());
      }
      if (count != n) return invalid_argument("split has {} entries for {} outputs", count, n);
    } else if (num_outputs_ > 0 && num_outputs_ != n) {
      return invalid_argument("num_outputs is {} but the node has {} outputs", num_outputs_, n);
    }
    int64_t total = 0;
    for (int64_t k = 0; k < n; ++k) {
      int64_t len = split_len(ctx, k, n, dim);
      if (len < 0) return invalid_argument("cannot split axis {} of size {} into {} parts", axis, dim, n);
      total += len;
      Shape out = in.shape();
      out[static_cast<size_t>(axis)] = len;
      ctx.set_output(static_cast<size_t>(k), in.dtype(), std::move(out));
    }
    if (total != dim) return invalid_argument("split sizes sum to {} but axis {} has size {}", total, axis, dim);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    int64_t axis = axis_ < 0 ? axis_ + in.rank() : axis_;
    auto n = static_cast<int64_t>(ctx.num_outputs());
    int64_t dim = in.dim(axis);
    const int64_t total = static_cast<int64_t>(in.nbytes());
    if (total == 0) return Status::ok();
    const int64_t inner_bytes = dims_product(in.shape(), axis + 1, in.rank()) * static_cast<int64_t>(elem_size_);
    const int64_t row_bytes = dim * inner_bytes;
    auto chunk_bytes = [&](size_t k) { return split_len(ctx, static_cast<int64_t>(k), n, dim) * inner_bytes; };
    const auto* src = static_cast<const std::byte*>(in.data());
    threading::parallel_for(total, kParallelCopyBytes, [&](int64_t begin, int64_t end) {
      const std::byte* s = src + begin;
      walk_chunks(begin, end, row_bytes, static_cast<size_t>(n), chunk_bytes,
                  [&](size_t k, int64_t row, int64_t skip, int64_t len) {
                    if (ctx.has_output(k)) {
                      auto* dst = static_cast<std::byte*>(ctx.output(k).data());
                      std::memcpy(dst + row * chunk_bytes(k) + skip, s, static_cast<size_t>(len));
                    }
                    s += len;
                  });
    });
    return Status::ok();
  }

 private:
  // Length of output k; without explicit sizes, parts are ceil(dim / n) and the
  // last one takes the remainder (the opset-18 rule, also what ONNX's reference does earlier).
  int64_t split_len(const KernelContext& ctx, int64_t k, int64_t n, int64_t dim) const {
    if (source_ == SplitSource::kAttribute) return split_attr_[static_cast<size_t>(k)];
    if (source_ == SplitSource::kInput && ctx.has_input(1)) return read_int(ctx.input(1), k);
    int64_t part = (dim + n - 1) / n;
    return k + 1 < n ? part : dim - part * (n - 1);
  }

  int64_t axis_;
  SplitSource source_;
  IndexVec split_attr_;
  int64_t num_outputs_;
  size_t elem_size_;
};

}  // namespace

KernelResult create_concat(const KernelInit& init) {
  if (init.input_dtypes.empty()) return invalid_model("expects at least one input");
  for (size_t k = 0; k < init.input_dtypes.size(); ++k) {
    EMBER_RETURN_IF_ERROR(require_input(init, k, fmt::format("input {}", k)));
    if (init.input_dtypes[k] != init.input_dtypes[0]) {
      return invalid_argument("input {} is {} but input 0 is {}", k, dtype_name(init.input_dtypes[k]),
                              dtype_name(init.input_dtypes[0]));
    }
  }
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  if (init.node.opset >= 4) attrs.require("axis");
  int64_t axis = attrs.get_int("axis", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new ConcatKernel(axis, dtype_size(init.input_dtypes[0])));
}

KernelResult create_split(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  ir::AttrReader attrs(init.node);
  int opset = init.node.opset;
  int64_t axis = attrs.get_int("axis", 0);
  IndexVec split_attr = opset < 13 ? to_index_vec(attrs.get_ints("split")) : IndexVec();
  int64_t num_outputs = opset >= 18 ? attrs.get_int("num_outputs", 0) : 0;
  EMBER_RETURN_IF_ERROR(attrs.status());
  SplitSource source = SplitSource::kEqual;
  // Opset 1 took the sizes from either input 1 or the attribute.
  if (opset >= 13 || (opset < 2 && has_input(init, 1))) {
    source = SplitSource::kInput;
    if (opset >= 18 && has_input(init, 1) && num_outputs != 0) {
      return invalid_argument("input 'split' and attribute 'num_outputs' cannot both be given");
    }
  } else if (!split_attr.empty()) {
    source = SplitSource::kAttribute;
  }
  if (opset >= 18 && attrs.has("num_outputs") && num_outputs < 1) {
    return invalid_argument("num_outputs must be positive, got {}", num_outputs);
  }
  for (int64_t s : split_attr) {
    if (s < 0) return invalid_argument("split {} has a negative size", shape_to_string(split_attr));
  }
  return std::unique_ptr<OpKernel>(
      new SplitKernel(axis, source, std::move(split_attr), num_outputs, dtype_size(init.input_dtypes[0])));
}

}  // namespace ember::kernels::tensor_ops
