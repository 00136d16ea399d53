// Optional, OptionalHasElement, OptionalGetElement over kOptional handles
// (base/value_list.h): an optional holds no value or one tensor or sequence.
#include "base/value_list.h"
#include "kernels/control/control_ops.h"

namespace ember::kernels::control_ops {
namespace {

class OptionalKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, DType::kOptional, Shape{});
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    ValueList list;
    if (ctx.has_input(0)) {
      const Tensor& x = ctx.input(0);
      list.elem_dtype = x.dtype();
      list.items.push_back(x.owns_storage() ? x : x.clone());
    }
    ctx.output(0) = make_container(DType::kOptional, std::move(list));
    return Status::ok();
  }
  bool allocates_outputs() const override { return true; }
};

class OptionalHasElementKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, DType::kBool, Shape{});
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    // No input at all is an empty optional; a tensor or a sequence is a present one.
    bool has = false;
    if (ctx.has_input(0)) {
      const ValueList* list = ctx.input(0).dtype() == DType::kOptional ? container_list(ctx.input(0)) : nullptr;
      has = list ? !list->items.empty() : true;
    }
    Tensor out = Tensor::allocate_uninitialized(DType::kBool, Shape{});
    *out.data_as<bool>() = has;
    ctx.output(0) = std::move(out);
    return Status::ok();
  }
  bool allocates_outputs() const override { return true; }
};

class OptionalGetElementKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kOptional) {
      ctx.set_output(0, x.dtype(), x.shape());
      return Status::ok();
    }
    const ValueList* list = container_list(x);
    if (!list) return needs_value(0);
    if (list->items.empty()) return invalid_argument("the optional input holds no value");
    ctx.set_output(0, list->items[0].dtype(), list->items[0].shape());
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kOptional) {
      ctx.output(0) = x.owns_storage() ? x : x.clone();
      return Status::ok();
    }
    const ValueList* list = container_list(x);
    if (!list || list->items.empty()) return invalid_argument("the optional input holds no value");
    ctx.output(0) = list->items[0];
    return Status::ok();
  }
  bool allocates_outputs() const override { return true; }
};

}  // namespace

KernelResult create_optional(const KernelInit& init) {
  if (input_dtype(init, 0) == DType::kOptional) return invalid_model("input 0 is already an optional");
  return std::unique_ptr<OpKernel>(new OptionalKernel());
}

KernelResult create_optional_has_element(const KernelInit& init) {
  return std::unique_ptr<OpKernel>(new OptionalHasElementKernel());
}

KernelResult create_optional_get_element(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  return std::unique_ptr<OpKernel>(new OptionalGetElementKernel());
}

}  // namespace ember::kernels::control_ops
