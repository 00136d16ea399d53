// ONNX TensorScatter (opset 24): writes `update` into a copy of `past_cache`
// along `axis` (the KV cache's sequence axis), at write_indices[b] for batch
// row b (0 without the input), wrapping modulo the cache length in "circular"
// mode. Any fixed-size dtype: the op moves bytes.
#include <cstring>

#include "kernels/attention/attention_ops.h"

namespace ember::kernels::attention {
namespace {

enum Input : size_t { kPast, kUpdate, kWriteIndices };

class TensorScatterKernel final : public OpKernel {
 public:
  TensorScatterKernel(int64_t axis, bool circular) : axis_(axis), circular_(circular) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(check(ctx).status());
    ctx.set_output(0, ctx.input(kPast).dtype(), ctx.input(kPast).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const int64_t axis, check(ctx));
    const Tensor& past = ctx.input(kPast);
    const Tensor& update = ctx.input(kUpdate);
    Tensor& out = ctx.output(0);
    if (out.data() != past.data()) std::memcpy(out.data(), past.data(), past.nbytes());
    int64_t prefix = 1, row_bytes = static_cast<int64_t>(dtype_size(past.dtype()));
    for (int64_t i = 0; i < axis; ++i) prefix *= past.dim(i);
    for (int64_t i = axis + 1; i < past.rank(); ++i) row_bytes *= past.dim(i);
    const int64_t batch = past.dim(0), per_batch = batch > 0 ? prefix / batch : 0;
    const int64_t max_len = past.dim(axis), seq = update.dim(axis);
    const int64_t* write = ctx.has_input(kWriteIndices) ? ctx.input(kWriteIndices).data_as<int64_t>() : nullptr;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t start = write ? write[b] : 0;
      if (start < 0 || (!circular_ && start + seq > max_len)) {
        return invalid_argument("write_indices[{}]={} with {} update rows does not fit the cache length {} "
                                "(mode 'linear')",
                                b, start, seq, max_len);
      }
    }
    auto* dst = static_cast<char*>(out.data());
    const auto* src = static_cast<const char*>(update.data());
    for (int64_t p = 0; p < prefix; ++p) {
      const int64_t start = write ? write[p / per_batch] : 0;
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t row = circular_ ? (start + s) % max_len : start + s;
        std::memcpy(dst + (p * max_len + row) * row_bytes, src + (p * seq + s) * row_bytes,
                    static_cast<size_t>(row_bytes));
      }
    }
    return Status::ok();
  }

  int inplace_input() const override { return kPast; }

 private:
  // The normalized axis, once the shapes are checked.
  Result<int64_t> check(const KernelContext& ctx) const {
    const Tensor& past = ctx.input(kPast);
    const Tensor& update = ctx.input(kUpdate);
    const int64_t rank = past.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis <= 0 || axis >= rank) {
      return invalid_argument("axis={} is out of range for 'past_cache' {} (the batch axis 0 is not allowed)", axis_,
                              past.describe());
    }
    bool ok = update.rank() == rank && update.dtype() == past.dtype();
    for (int64_t i = 0; ok && i < rank; ++i) ok = i == axis ? update.dim(i) <= past.dim(i) : update.dim(i) == past.dim(i);
    if (!ok) {
      return invalid_argument("input 'update' {} must match 'past_cache' {} except on axis {}, where it may be shorter",
                              update.describe(), past.describe(), axis);
    }
    if (ctx.has_input(kWriteIndices)) {
      const Tensor& w = ctx.input(kWriteIndices);
      if (w.rank() != 1 || w.dim(0) != past.dim(0)) {
        return invalid_argument("input 'write_indices' {} must be [batch={}]", w.describe(), past.dim(0));
      }
    }
    return axis;
  }

  int64_t axis_;
  bool circular_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_tensor_scatter(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  ir::AttrReader r(init.node);
  const std::string mode = r.get_string("mode", "linear");
  const int64_t axis = r.get_int("axis", -2);
  EMBER_RETURN_IF_ERROR(r.status());
  if (mode != "linear" && mode != "circular") {
    return invalid_argument("node '{}': mode='{}' must be 'linear' or 'circular'", init.node.name, mode);
  }
  const DType t = input_dtype(init, kPast);
  if (dtype_size(t) == 0) {
    return not_implemented("node '{}': TensorScatter on {} (packed sub-byte and string caches) is not implemented",
                           init.node.name, dtype_name(t));
  }
  const DType w = input_dtype(init, kWriteIndices);
  if (w != DType::kUndefined && w != DType::kI64) {
    return invalid_argument("node '{}': input 'write_indices' is {}, expected int64", init.node.name, dtype_name(w));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<TensorScatterKernel>(axis, mode == "circular"));
}

}  // namespace ember::kernels::attention
