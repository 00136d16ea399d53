// Sequence ops: sequences are kSequence handles (base/value_list.h) built at run
// time, so every kernel here allocates its outputs; element tensors own their
// bytes and are shared, never written, once in a list.
#include <cstring>

#include "base/value_list.h"
#include "kernels/common/shape_util.h"
#include "kernels/control/control_ops.h"

namespace ember::kernels::control_ops {
namespace {

// A tensor that stays valid after this node: arena and caller buffers are copied.
Tensor keep(const Tensor& t) { return t.owns_storage() ? t : t.clone(); }

Result<const ValueList*> sequence_input(const KernelContext& ctx, size_t i) {
  const ValueList* list = ctx.has_input(i) ? container_list(ctx.input(i)) : nullptr;
  if (!list || ctx.input(i).dtype() != DType::kSequence) {
    return invalid_argument("input {} must be a sequence, got {}", i,
                            ctx.has_input(i) ? ctx.input(i).describe() : std::string("nothing"));
  }
  return list;
}

// A position input (0-D or [1] int32/int64) in [-n, n - 1], or [-n, n] with `allow_end`.
Result<size_t> position(const KernelContext& ctx, size_t i, size_t n, bool allow_end) {
  const Tensor& t = ctx.input(i);
  if ((t.dtype() != DType::kI64 && t.dtype() != DType::kI32) || t.numel() != 1) {
    return invalid_argument("position must be one int32 or int64, got {}", t.describe());
  }
  const int64_t p = read_int(t, 0);
  const auto size = static_cast<int64_t>(n);
  const int64_t hi = allow_end ? size : size - 1;
  if (p < -size || p > hi) {
    return invalid_argument("position {} is outside [{}, {}] for a sequence of {} tensors", p, -size, hi, n);
  }
  return static_cast<size_t>(p < 0 ? p + size : p);
}

Status check_element(const ValueList& list, const Tensor& t) {
  if (dtype_is_container(t.dtype())) return invalid_argument("a sequence holds tensors, got a {}", dtype_name(t.dtype()));
  if (list.elem_dtype != DType::kUndefined && t.dtype() != list.elem_dtype) {
    return invalid_argument("a sequence of {} cannot take a {} tensor", dtype_name(list.elem_dtype), dtype_name(t.dtype()));
  }
  return Status::ok();
}

// Kernels whose outputs exist only at run time: infer() gives the output kind.
class RuntimeOutputKernel : public OpKernel {
 public:
  explicit RuntimeOutputKernel(DType output) : output_(output) {}
  Status infer(KernelContext& ctx) const override {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, output_, Shape{});
    return Status::ok();
  }
  bool allocates_outputs() const override { return true; }

 private:
  DType output_;
};

class SequenceEmptyKernel final : public RuntimeOutputKernel {
 public:
  explicit SequenceEmptyKernel(DType dtype) : RuntimeOutputKernel(DType::kSequence), dtype_(dtype) {}
  Status run(KernelContext& ctx) const override {
    ctx.output(0) = make_container(DType::kSequence, ValueList{dtype_, {}});
    return Status::ok();
  }

 private:
  DType dtype_;
};

class SequenceConstructKernel final : public RuntimeOutputKernel {
 public:
  SequenceConstructKernel() : RuntimeOutputKernel(DType::kSequence) {}
  Status run(KernelContext& ctx) const override {
    ValueList list{ctx.input(0).dtype(), {}};
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return invalid_argument("input {} is missing", i);
      Status st = check_element(list, ctx.input(i));
      if (!st.is_ok()) return st.with_context(fmt::format("input {}: ", i));
      list.items.push_back(keep(ctx.input(i)));
    }
    ctx.output(0) = make_container(DType::kSequence, std::move(list));
    return Status::ok();
  }
};

class SequenceInsertKernel final : public RuntimeOutputKernel {
 public:
  SequenceInsertKernel() : RuntimeOutputKernel(DType::kSequence) {}
  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ValueList* in, sequence_input(ctx, 0));
    const Tensor& t = ctx.input(1);
    EMBER_RETURN_IF_ERROR(check_element(*in, t));
    size_t at = in->items.size();
    if (ctx.has_input(2)) {
      EMBER_ASSIGN_OR_RETURN(at, position(ctx, 2, in->items.size(), true));
    }
    ValueList list{t.dtype(), in->items};
    list.items.insert(list.items.begin() + static_cast<std::ptrdiff_t>(at), keep(t));
    ctx.output(0) = make_container(DType::kSequence, std::move(list));
    return Status::ok();
  }
};

class SequenceEraseKernel final : public RuntimeOutputKernel {
 public:
  SequenceEraseKernel() : RuntimeOutputKernel(DType::kSequence) {}
  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ValueList* in, sequence_input(ctx, 0));
    if (in->items.empty()) return invalid_argument("cannot erase from an empty sequence");
    size_t at = in->items.size() - 1;
    if (ctx.has_input(1)) {
      EMBER_ASSIGN_OR_RETURN(at, position(ctx, 1, in->items.size(), false));
    }
    ValueList list{in->elem_dtype, in->items};
    list.items.erase(list.items.begin() + static_cast<std::ptrdiff_t>(at));
    ctx.output(0) = make_container(DType::kSequence, std::move(list));
    return Status::ok();
  }
};

class SequenceAtKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    // The element's dtype and shape are known only from the sequence itself.
    if (!ctx.has_value(0)) return needs_value(0);
    EMBER_ASSIGN_OR_RETURN(const ValueList* in, sequence_input(ctx, 0));
    if (!ctx.has_value(1)) return needs_value(1);
    EMBER_ASSIGN_OR_RETURN(size_t at, position(ctx, 1, in->items.size(), false));
    ctx.set_output(0, in->items[at].dtype(), in->items[at].shape());
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ValueList* in, sequence_input(ctx, 0));
    EMBER_ASSIGN_OR_RETURN(size_t at, position(ctx, 1, in->items.size(), false));
    ctx.output(0) = in->items[at];
    return Status::ok();
  }
  bool allocates_outputs() const override { return true; }
};

class SequenceLengthKernel final : public RuntimeOutputKernel {
 public:
  SequenceLengthKernel() : RuntimeOutputKernel(DType::kI64) {}
  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ValueList* in, sequence_input(ctx, 0));
    Tensor out = Tensor::allocate_uninitialized(DType::kI64, Shape{});
    *out.data_as<int64_t>() = static_cast<int64_t>(in->items.size());
    ctx.output(0) = std::move(out);
    return Status::ok();
  }
};

class ConcatFromSequenceKernel final : public RuntimeOutputKernel {
 public:
  ConcatFromSequenceKernel(int64_t axis, bool new_axis)
      : RuntimeOutputKernel(DType::kUndefined), axis_(axis), new_axis_(new_axis) {}
  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(const ValueList* in, sequence_input(ctx, 0));
    if (in->items.empty()) return invalid_argument("cannot concatenate an empty sequence");
    const Tensor& first = in->items[0];
    const int64_t rank = first.rank();
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, new_axis_ ? rank + 1 : rank));
    const auto a = static_cast<size_t>(axis);
    Shape out_shape = first.shape();
    for (size_t i = 0; i < in->items.size(); ++i) {
      const Tensor& t = in->items[i];
      bool same = t.dtype() == first.dtype() && t.rank() == rank;
      for (size_t d = 0; same && d < static_cast<size_t>(rank); ++d) {
        same = (!new_axis_ && d == a) || t.shape()[d] == first.shape()[d];
      }
      if (!same) return invalid_argument("element {} is {}, element 0 is {}", i, t.describe(), first.describe());
      if (!new_axis_ && i > 0) out_shape[a] += t.shape()[a];
    }
    if (new_axis_) {
      ctx.output(0) = stack_along(in->items, a, first.dtype(), first.shape());
      return Status::ok();
    }
    Tensor out = Tensor::allocate_uninitialized(first.dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= out_shape[d];
    for (size_t d = a + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
    const size_t elem = dtype_size(first.dtype());
    auto* dst = static_cast<char*>(out.data());
    for (int64_t o = 0; o < outer; ++o) {
      for (const Tensor& t : in->items) {
        const size_t block = static_cast<size_t>(t.shape()[a] * inner) * elem;
        if (block == 0) continue;
        std::memcpy(dst, static_cast<const char*>(t.data()) + static_cast<size_t>(o) * block, block);
        dst += block;
      }
    }
    ctx.output(0) = std::move(out);
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

class SplitToSequenceKernel final : public RuntimeOutputKernel {
 public:
  SplitToSequenceKernel(int64_t axis, bool keepdims)
      : RuntimeOutputKernel(DType::kSequence), axis_(axis), keepdims_(keepdims) {}
  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, x.rank()));
    const auto a = static_cast<size_t>(axis);
    const int64_t len = x.dim(axis);
    std::vector<int64_t> sizes;
    bool squeeze = false;
    if (!ctx.has_input(1)) {
      sizes.assign(static_cast<size_t>(len), 1);
      squeeze = !keepdims_;
    } else {
      const Tensor& split = ctx.input(1);
      if (!dtype_is_int(split.dtype()) || split.rank() > 1) {
        return invalid_argument("split must be a 0-D or 1-D integer tensor, got {}", split.describe());
      }
      if (split.rank() == 0) {
        const int64_t chunk = read_int(split, 0);
        if (chunk <= 0) return invalid_argument("split must be positive, got {}", chunk);
        for (int64_t at = 0; at < len; at += chunk) sizes.push_back(std::min(chunk, len - at));
      } else {
        int64_t total = 0;
        for (int64_t i = 0; i < split.numel(); ++i) {
          sizes.push_back(read_int(split, i));
          if (sizes.back() < 0) return invalid_argument("split sizes must not be negative, got {}", sizes.back());
          total += sizes.back();
        }
        if (total != len) return invalid_argument("split sizes add up to {}, axis {} has {}", total, axis, len);
      }
    }
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= x.shape()[d];
    for (size_t d = a + 1; d < static_cast<size_t>(x.rank()); ++d) inner *= x.shape()[d];
    const size_t elem = dtype_size(x.dtype());
    ValueList list{x.dtype(), {}};
    int64_t start = 0;
    for (int64_t size : sizes) {
      Shape shape = x.shape();
      shape[a] = size;
      if (squeeze) shape.erase(shape.begin() + axis);
      Tensor part = Tensor::allocate_uninitialized(x.dtype(), shape);
      const size_t block = static_cast<size_t>(size * inner) * elem;
      for (int64_t o = 0; o < outer && block > 0; ++o) {
        std::memcpy(static_cast<char*>(part.data()) + static_cast<size_t>(o) * block,
                    static_cast<const char*>(x.data()) + (static_cast<size_t>(o * len + start) * static_cast<size_t>(inner)) * elem,
                    block);
      }
      list.items.push_back(std::move(part));
      start += size;
    }
    ctx.output(0) = make_container(DType::kSequence, std::move(list));
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

// Identity of a handle: the list is immutable, so the output shares it.
class ContainerIdentityKernel final : public OpKernel {
 public:
  Status infer(KernelContext& ctx) const override {
    ctx.set_output(0, ctx.input(0).dtype(), Shape{});
    return Status::ok();
  }
  Status run(KernelContext& ctx) const override {
    ctx.output(0) = keep(ctx.input(0));
    return Status::ok();
  }
  bool allocates_outputs() const override { return true; }
};

// Element tensors are copied byte for byte: string tensors are refused.
Status check_element_dtype(const KernelInit& init, size_t i) {
  DType t = input_dtype(init, i);
  if (t == DType::kString || (t != DType::kUndefined && !dtype_is_container(t) && dtype_size(t) == 0)) {
    return not_implemented("{} of {} tensors", init.node.op_type, dtype_name(t));
  }
  return Status::ok();
}

Status require_sequence(const KernelInit& init, size_t i) {
  DType t = input_dtype(init, i);
  if (t != DType::kSequence) return invalid_model("input {} must be a sequence, got {}", i, dtype_name(t));
  return Status::ok();
}

}  // namespace

KernelResult create_sequence_empty(const KernelInit& init) {
  ir::AttrReader attrs(init.node);
  const int64_t dtype = attrs.get_int("dtype", static_cast<int64_t>(DType::kF32));
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (dtype <= 0 || dtype > INT32_MAX || !dtype_is_known(static_cast<int32_t>(dtype))) {
    return not_implemented("SequenceEmpty of element type {}", dtype);
  }
  return std::unique_ptr<OpKernel>(new SequenceEmptyKernel(static_cast<DType>(dtype)));
}

KernelResult create_sequence_construct(const KernelInit& init) {
  if (init.input_dtypes.empty()) return invalid_model("SequenceConstruct needs at least one input");
  EMBER_RETURN_IF_ERROR(require_inputs(init, init.input_dtypes.size()));
  for (size_t i = 0; i < init.input_dtypes.size(); ++i) {
    EMBER_RETURN_IF_ERROR(check_element_dtype(init, i));
    if (init.input_dtypes[i] != init.input_dtypes[0]) {
      return invalid_model("input {} is {}, input 0 is {}: a sequence holds one element type", i,
                           dtype_name(init.input_dtypes[i]), dtype_name(init.input_dtypes[0]));
    }
  }
  return std::unique_ptr<OpKernel>(new SequenceConstructKernel());
}

KernelResult create_sequence_insert(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  EMBER_RETURN_IF_ERROR(require_sequence(init, 0));
  EMBER_RETURN_IF_ERROR(check_element_dtype(init, 1));
  return std::unique_ptr<OpKernel>(new SequenceInsertKernel());
}

KernelResult create_sequence_erase(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(require_sequence(init, 0));
  return std::unique_ptr<OpKernel>(new SequenceEraseKernel());
}

KernelResult create_sequence_at(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 2));
  EMBER_RETURN_IF_ERROR(require_sequence(init, 0));
  return std::unique_ptr<OpKernel>(new SequenceAtKernel());
}

KernelResult create_sequence_length(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(require_sequence(init, 0));
  return std::unique_ptr<OpKernel>(new SequenceLengthKernel());
}

KernelResult create_concat_from_sequence(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(require_sequence(init, 0));
  ir::AttrReader attrs(init.node);
  attrs.require("axis");
  const int64_t axis = attrs.get_int("axis", 0);
  const int64_t new_axis = attrs.get_int("new_axis", 0);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (new_axis != 0 && new_axis != 1) return invalid_model("new_axis must be 0 or 1, got {}", new_axis);
  return std::unique_ptr<OpKernel>(new ConcatFromSequenceKernel(axis, new_axis == 1));
}

KernelResult create_split_to_sequence(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(check_element_dtype(init, 0));
  if (dtype_is_container(init.input_dtypes[0])) return invalid_model("input 0 must be a tensor, got a {}", dtype_name(init.input_dtypes[0]));
  ir::AttrReader attrs(init.node);
  const int64_t axis = attrs.get_int("axis", 0);
  const int64_t keepdims = attrs.get_int("keepdims", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new SplitToSequenceKernel(axis, keepdims != 0));
}

KernelResult create_container_identity(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  return std::unique_ptr<OpKernel>(new ContainerIdentityKernel());
}

}  // namespace ember::kernels::control_ops
