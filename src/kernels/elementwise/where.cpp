// Where: out = cond ? X : Y with three-way numpy broadcasting, any dtype.
#include "kernels/elementwise/elementwise_common.h"

namespace ember::kernels {
namespace elementwise {
namespace {

template <typename T>
void where_loop(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  const bool* pc = cond.data_as<bool>();
  const T* px = x.data_as<T>();
  const T* py = y.data_as<T>();
  T* po = out.data_as<T>();
  const int64_t n = out.numel();
  if (n == 0) return;
  if (cond.numel() == n && x.numel() == n && y.numel() == n) {
    for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? px[i] : py[i];
    return;
  }
  BroadcastRows rows(out.shape());
  rows.add_input(cond.shape());
  rows.add_input(x.shape());
  rows.add_input(y.shape());
  const int64_t len = rows.row_length();
  const int64_t sc = rows.row_stride(0), sx = rows.row_stride(1), sy = rows.row_stride(2);
  for (int64_t r = 0; r < rows.num_rows(); ++r, rows.next_row()) {
    const bool* rc = pc + rows.offset(0);
    const T* rx = px + rows.offset(1);
    const T* ry = py + rows.offset(2);
    T* ro = po + r * len;
    for (int64_t j = 0; j < len; ++j) ro[j] = rc[j * sc] ? rx[j * sx] : ry[j * sy];
  }
}

class WhereKernel final : public OpKernel {
 public:
  explicit WhereKernel(DType dtype) : dtype_(dtype) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Shape xy, broadcast_shapes(ctx.input(1).shape(), ctx.input(2).shape()));
    EMBER_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx.input(0).shape(), xy));
    ctx.set_output(0, dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    visit<TypeSet::kNumericOrBool>(dtype_, [&](auto tag) {
      where_loop<typename decltype(tag)::type>(ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0));
    });
    return Status::ok();
  }

  // Output element i reads X only at i when X has the output's size.
  int inplace_input() const override { return 1; }

 private:
  DType dtype_;
};

Result<std::unique_ptr<OpKernel>> create_where(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(check_input_count(init, 3, 3));
  if (init.input_dtypes[0] != DType::kBool) {
    return invalid_argument("condition has dtype {}, expected bool", dtype_name(init.input_dtypes[0]));
  }
  const DType dtype = init.input_dtypes[1];
  EMBER_RETURN_IF_ERROR(check_dtype<TypeSet::kNumericOrBool>(dtype, 1, "Where"));
  if (init.input_dtypes[2] != dtype) {
    return invalid_argument("X and Y have different dtypes: {} and {}", dtype_name(dtype),
                            dtype_name(init.input_dtypes[2]));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<WhereKernel>(dtype));
}

}  // namespace
}  // namespace elementwise

void register_where_ops(OpRegistry& r) { add_op(r, "Where", 9, elementwise::create_where); }

}  // namespace ember::kernels
