// ReverseSequence: reverses the first sequence_lens[b] steps of every batch
// entry b along the time axis and copies the remaining steps as they are.
// The time and batch axes are dims 0 and 1 (either way round), so each
// (time, batch) pair owns one contiguous run of the trailing dims.
#include <cstring>

#include "kernels/tensor/tensor_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace ember::kernels::tensor_ops {
namespace {

class ReverseSequenceKernel final : public OpKernel {
 public:
  ReverseSequenceKernel(int64_t time_axis, int64_t batch_axis, size_t elem_size)
      : time_axis_(time_axis), batch_axis_(batch_axis), elem_size_(elem_size) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& lens = ctx.input(1);
    if (x.rank() < 2) return invalid_argument("input must have rank >= 2, got {}", x.describe());
    if (lens.rank() != 1 || lens.dim(0) != x.dim(batch_axis_)) {
      return invalid_argument("sequence_lens {} must have shape [{}] (input {} on batch_axis {})", lens.describe(),
                              x.dim(batch_axis_), x.describe(), batch_axis_);
    }
    if (ctx.has_value(1)) EMBER_RETURN_IF_ERROR(check_lengths(lens, x.dim(time_axis_)));
    ctx.set_output(0, x.dtype(), x.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& lens = ctx.input(1);
    const int64_t steps = x.dim(time_axis_);
    EMBER_RETURN_IF_ERROR(check_lengths(lens, steps));
    const int64_t d1 = x.dim(1);
    int64_t inner = 1;
    for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
    const size_t run_bytes = static_cast<size_t>(inner) * elem_size_;
    const auto* src = static_cast<const char*>(x.data());
    auto* dst = static_cast<char*>(ctx.output(0).data());
    for (int64_t i0 = 0; i0 < x.dim(0); ++i0) {
      for (int64_t i1 = 0; i1 < d1; ++i1) {
        const int64_t t = time_axis_ == 0 ? i0 : i1;
        const int64_t len = read_int(lens, batch_axis_ == 0 ? i0 : i1);
        const int64_t from_t = t < len ? len - 1 - t : t;
        const int64_t from = time_axis_ == 0 ? from_t * d1 + i1 : i0 * d1 + from_t;
        if (run_bytes) {
          std::memcpy(dst + static_cast<size_t>(i0 * d1 + i1) * run_bytes, src + static_cast<size_t>(from) * run_bytes,
                      run_bytes);
        }
      }
    }
    return Status::ok();
  }

 private:
  static Status check_lengths(const Tensor& lens, int64_t steps) {
    for (int64_t b = 0; b < lens.numel(); ++b) {
      const int64_t len = read_int(lens, b);
      if (len < 0 || len > steps) {
        return invalid_argument("sequence_lens[{}] = {} is outside [0, {}] (the size of the time axis)", b, len, steps);
      }
    }
    return Status::ok();
  }

  int64_t time_axis_;
  int64_t batch_axis_;
  size_t elem_size_;
};

}  // namespace

KernelResult create_reverse_sequence(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_input(init, 0, "input 0 (input)"));
  EMBER_RETURN_IF_ERROR(require_input(init, 1, "input 1 (sequence_lens)"));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "input 0"));
  if (init.input_dtypes[1] != DType::kI64) {
    return invalid_argument("input 1 (sequence_lens) must be int64, got {}", dtype_name(init.input_dtypes[1]));
  }
  ir::AttrReader attrs(init.node);
  const int64_t time_axis = attrs.get_int("time_axis", 0);
  const int64_t batch_axis = attrs.get_int("batch_axis", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if ((time_axis != 0 && time_axis != 1) || (batch_axis != 0 && batch_axis != 1) || time_axis == batch_axis) {
    return invalid_argument("time_axis ({}) and batch_axis ({}) must be 0 and 1, one each", time_axis, batch_axis);
  }
  return std::unique_ptr<OpKernel>(new ReverseSequenceKernel(time_axis, batch_axis, dtype_size(init.input_dtypes[0])));
}

}  // namespace ember::kernels::tensor_ops
