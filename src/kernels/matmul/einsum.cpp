// Einsum: every form the spec allows (implicit or explicit output, ellipsis
// broadcasting, repeated indices, reductions over any label) as a chain of
// pairwise contractions, left to right. Each contraction gathers its operands
// into [batch, rows, k] and [batch, k, cols] (a repeated index is one label
// whose strides add up, a broadcast dimension has stride 0, a label only one
// operand has and nothing later needs is summed while gathering) and runs one
// GEMM per batch.
#include <algorithm>
#include <array>
#include <span>
#include <type_traits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/matmul_ops.h"
#include "kernels/matmul/sgemm.h"

namespace ember::kernels {
namespace {

// Labels: 'A'-'Z' are 0-25, 'a'-'z' 26-51, the ellipsis dimensions (aligned
// to the right across operands) 52 and up.
constexpr int kEllipsisLabel = 52;

int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

struct Term {
  std::vector<int> letters_before, letters_after;  // around the ellipsis
  bool has_ellipsis = false;
};

Result<Term> parse_term(const std::string& text, const std::string& equation) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "...") == 0) {
      if (term.has_ellipsis) return invalid_argument("equation '{}': term '{}' has two ellipses", equation, text);
      term.has_ellipsis = true;
      i += 2;
      continue;
    }
    const int label = letter_label(text[i]);
    if (label < 0) return invalid_argument("equation '{}': '{}' is not a letter or '...'", equation, text[i]);
    (term.has_ellipsis ? term.letters_after : term.letters_before).push_back(label);
  }
  return term;
}

struct Equation {
  std::vector<Term> inputs;
  bool explicit_output = false;
  Term output;
};

Result<Equation> parse_equation(std::string text, size_t num_inputs) {
  const std::string original = text;
  std::erase(text, ' ');
  Equation eq;
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    EMBER_ASSIGN_OR_RETURN(Term term, parse_term(lhs.substr(start, comma == std::string::npos ? comma : comma - start), original));
    eq.inputs.push_back(std::move(term));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (eq.inputs.size() != num_inputs) {
    return invalid_argument("equation '{}' has {} input terms but the node has {} inputs", original, eq.inputs.size(),
                            num_inputs);
  }
  if (arrow != std::string::npos) {
    eq.explicit_output = true;
    EMBER_ASSIGN_OR_RETURN(eq.output, parse_term(text.substr(arrow + 2), original));
  }
  return eq;
}

// The equation bound to input shapes: a label per input axis, the output labels, every label's size.
struct Binding {
  std::vector<std::vector<int>> input_labels;
  std::vector<int> output_labels;
  std::array<int64_t, 128> sizes{};
};

Result<Binding> bind(const Equation& eq, std::span<const Shape* const> shapes, const std::string& equation) {
  Binding b;
  b.sizes.fill(-1);
  size_t ellipsis_rank = 0;
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    const Term& t = eq.inputs[i];
    const size_t letters = t.letters_before.size() + t.letters_after.size();
    const size_t rank = shapes[i]->size();
    if (t.has_ellipsis ? rank < letters : rank != letters) {
      return invalid_argument("equation '{}': input {} has rank {}, which does not fit its term", equation, i, rank);
    }
    if (t.has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
  }
  if (kEllipsisLabel + ellipsis_rank > b.sizes.size()) return not_implemented("equation '{}': ellipsis rank {} is too large", equation, ellipsis_rank);
  std::array<int, 128> count{};
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    const Term& t = eq.inputs[i];
    const Shape& shape = *shapes[i];
    std::vector<int> labels = t.letters_before;
    const size_t own = shape.size() - t.letters_before.size() - t.letters_after.size();
    for (size_t e = 0; e < own; ++e) labels.push_back(kEllipsisLabel + static_cast<int>(ellipsis_rank - own + e));
    labels.insert(labels.end(), t.letters_after.begin(), t.letters_after.end());
    for (size_t axis = 0; axis < labels.size(); ++axis) {
      int64_t& size = b.sizes[static_cast<size_t>(labels[axis])];
      const int64_t dim = shape[axis];
      if (size < 0 || size == 1) {
        size = dim;
      } else if (dim != 1 && dim != size) {
        return invalid_argument("equation '{}': a label has sizes {} and {} (input {} has shape {})", equation, size, dim,
                                i, shape_to_string(shape));
      }
      if (labels[axis] < kEllipsisLabel) ++count[static_cast<size_t>(labels[axis])];
    }
    b.input_labels.push_back(std::move(labels));
  }
  if (eq.explicit_output) {
    const Term& t = eq.output;
    b.output_labels = t.letters_before;
    if (t.has_ellipsis) {
      for (size_t e = 0; e < ellipsis_rank; ++e) b.output_labels.push_back(kEllipsisLabel + static_cast<int>(e));
    }
    b.output_labels.insert(b.output_labels.end(), t.letters_after.begin(), t.letters_after.end());
    std::array<bool, 128> seen{};
    for (int label : b.output_labels) {
      if (b.sizes[static_cast<size_t>(label)] < 0) {
        return invalid_argument("equation '{}': an output label appears in no input", equation);
      }
      if (seen[static_cast<size_t>(label)]) return invalid_argument("equation '{}': an output label repeats", equation);
      seen[static_cast<size_t>(label)] = true;
    }
  } else {
    // Implicit output: the ellipsis dimensions, then the letters used once, in ASCII order (numpy's rule).
    for (size_t e = 0; e < ellipsis_rank; ++e) b.output_labels.push_back(kEllipsisLabel + static_cast<int>(e));
    for (int label = 0; label < kEllipsisLabel; ++label) {
      if (count[static_cast<size_t>(label)] == 1) b.output_labels.push_back(label);
    }
  }
  return b;
}

// An operand of a contraction: data with one (summed) stride per distinct label.
template <typename Acc>
struct Operand {
  const Acc* data = nullptr;
  std::vector<int> labels;
  std::vector<int64_t> strides;
  std::vector<Acc> owned;

  int64_t stride_of(int label) const {
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] == label) return strides[i];
    }
    return 0;
  }
  bool has(int label) const { return std::find(labels.begin(), labels.end(), label) != labels.end(); }
};

// The offsets of every index of `labels` (row-major over their sizes) in `op`.
template <typename Acc>
std::vector<int64_t> offsets_of(const Operand<Acc>& op, const std::vector<int>& labels, const Binding& b) {
  std::vector<int64_t> offsets{0};
  for (int label : labels) {
    const int64_t size = b.sizes[static_cast<size_t>(label)], stride = op.stride_of(label);
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(size));
    for (int64_t base : offsets) {
      for (int64_t i = 0; i < size; ++i) next.push_back(base + i * stride);
    }
    offsets = std::move(next);
  }
  return offsets;
}

// dst[(o * inner) + i] = sum over `summed` of op at outer index o, inner index i.
template <typename Acc>
void gather(const Operand<Acc>& op, const std::vector<int>& outer, const std::vector<int>& inner,
            const std::vector<int>& summed, const Binding& b, Acc* dst) {
  const std::vector<int64_t> o_off = offsets_of(op, outer, b), i_off = offsets_of(op, inner, b),
                             s_off = offsets_of(op, summed, b);
  Acc* out = dst;
  for (int64_t o : o_off) {
    for (int64_t i : i_off) {
      Acc sum = Acc(0);
      for (int64_t s : s_off) sum += op.data[o + i + s];
      *out++ = sum;
    }
  }
}

int64_t size_of(const std::vector<int>& labels, const Binding& b) {
  int64_t n = 1;
  for (int label : labels) n *= b.sizes[static_cast<size_t>(label)];
  return n;
}

template <typename Acc>
void batched_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const Acc* a, const Acc* bm, Acc* c) {
  GemmParams p;
  p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = n, p.ldc = n;
  for (int64_t i = 0; i < batch; ++i) {
    if constexpr (std::is_same_v<Acc, float>) {
      sgemm::gemm(sgemm::sgemm_table(), p, a + i * m * k, bm + i * k * n, c + i * m * n);
    } else {
      gemm_ref<Acc>(p, a + i * m * k, bm + i * k * n, c + i * m * n);
    }
  }
}

// Contracts a and b, keeping the labels in `keep`: the result is [batch, rows, cols].
template <typename Acc>
Operand<Acc> contract(const Operand<Acc>& a, const Operand<Acc>& b, const std::array<bool, 128>& keep,
                      const Binding& bind) {
  std::vector<int> batch, rows, cols, inner, a_sum, b_sum;
  for (int label : a.labels) {
    const bool kept = keep[static_cast<size_t>(label)];
    if (b.has(label)) {
      (kept ? batch : inner).push_back(label);
    } else {
      (kept ? rows : a_sum).push_back(label);
    }
  }
  for (int label : b.labels) {
    if (a.has(label)) continue;
    (keep[static_cast<size_t>(label)] ? cols : b_sum).push_back(label);
  }
  const int64_t nb = size_of(batch, bind), m = size_of(rows, bind), n = size_of(cols, bind), k = size_of(inner, bind);
  std::vector<Acc> ga(static_cast<size_t>(nb * m * k)), gb(static_cast<size_t>(nb * k * n));
  std::vector<int> a_outer = batch, b_outer = batch;
  a_outer.insert(a_outer.end(), rows.begin(), rows.end());
  b_outer.insert(b_outer.end(), inner.begin(), inner.end());
  gather(a, a_outer, inner, a_sum, bind, ga.data());
  gather(b, b_outer, cols, b_sum, bind, gb.data());
  Operand<Acc> out;
  out.owned.resize(static_cast<size_t>(nb * m * n));
  batched_gemm(nb, m, n, k, ga.data(), gb.data(), out.owned.data());
  out.data = out.owned.data();
  out.labels = batch;
  out.labels.insert(out.labels.end(), rows.begin(), rows.end());
  out.labels.insert(out.labels.end(), cols.begin(), cols.end());
  out.strides.assign(out.labels.size(), 0);
  int64_t stride = 1;
  for (size_t i = out.labels.size(); i-- > 0;) {
    out.strides[i] = stride;
    stride *= bind.sizes[static_cast<size_t>(out.labels[i])];
  }
  return out;
}

template <typename T>
using EinsumAcc = std::conditional_t<std::is_integral_v<T>, int64_t, std::conditional_t<std::is_same_v<T, double>, double, float>>;

class EinsumKernel final : public OpKernel {
 public:
  EinsumKernel(DType dtype, std::string equation, Equation parsed)
      : dtype_(dtype), equation_(std::move(equation)), parsed_(std::move(parsed)) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Binding b, bind_inputs(ctx));
    Shape out;
    for (int label : b.output_labels) out.push_back(b.sizes[static_cast<size_t>(label)]);
    ctx.set_output(0, dtype_, out);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Binding b, bind_inputs(ctx));
    EMBER_SWITCH_NUMERIC(dtype_, T, { compute<T>(ctx, b); },
                         return internal_error("Einsum: unexpected dtype {}", dtype_name(dtype_)));
    return Status::ok();
  }

 private:
  Result<Binding> bind_inputs(const KernelContext& ctx) const {
    std::vector<const Shape*> shapes;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(&ctx.input(i).shape());
    return bind(parsed_, shapes, equation_);
  }

  template <typename T>
  void compute(KernelContext& ctx, const Binding& b) const {
    using Acc = EinsumAcc<T>;
    const size_t n = ctx.num_inputs();
    std::vector<Operand<Acc>> ops(n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = ctx.input(i);
      Operand<Acc>& op = ops[i];
      op.owned.resize(static_cast<size_t>(t.numel()));
      const T* src = t.data_as<T>();
      for (int64_t e = 0; e < t.numel(); ++e) op.owned[static_cast<size_t>(e)] = static_cast<Acc>(static_cast<compute_t<T>>(src[e]));
      op.data = op.owned.data();
      const Shape strides = contiguous_strides(t.shape());
      const std::vector<int>& labels = b.input_labels[i];
      for (size_t axis = 0; axis < labels.size(); ++axis) {
        // A size-1 dimension broadcast to a larger label size stays at offset 0.
        const int64_t stride = t.dim(static_cast<int64_t>(axis)) == 1 ? 0 : strides[axis];
        auto it = std::find(op.labels.begin(), op.labels.end(), labels[axis]);
        if (it == op.labels.end()) {
          op.labels.push_back(labels[axis]);
          op.strides.push_back(stride);
        } else {
          op.strides[static_cast<size_t>(it - op.labels.begin())] += stride;
        }
      }
    }
    std::array<bool, 128> in_output{};
    for (int label : b.output_labels) in_output[static_cast<size_t>(label)] = true;
    Operand<Acc> acc = std::move(ops[0]);
    for (size_t i = 1; i < n; ++i) {
      std::array<bool, 128> keep = in_output;
      for (size_t j = i + 1; j < n; ++j) {
        for (int label : ops[j].labels) keep[static_cast<size_t>(label)] = true;
      }
      acc = contract(acc, ops[i], keep, b);
    }
    std::vector<int> summed;
    for (int label : acc.labels) {
      if (!in_output[static_cast<size_t>(label)]) summed.push_back(label);
    }
    Tensor& y = ctx.output(0);
    std::vector<Acc> result(static_cast<size_t>(y.numel()));
    gather(acc, {}, b.output_labels, summed, b, result.data());
    T* dst = y.data_as<T>();
    for (size_t e = 0; e < result.size(); ++e) dst[e] = static_cast<T>(static_cast<compute_t<T>>(result[e]));
  }

  DType dtype_;
  std::string equation_;
  Equation parsed_;
};

}  // namespace

Result<std::unique_ptr<OpKernel>> create_einsum(const KernelInit& init) {
  const size_t n = init.input_dtypes.size();
  if (n == 0) return invalid_model("Einsum needs at least one input");
  EMBER_RETURN_IF_ERROR(require_inputs(init, n));
  const DType dtype = init.input_dtypes[0];
  if (!dtype_is_float(dtype) && !dtype_is_int(dtype)) {
    return not_implemented("input 0 has dtype {}; only numeric types are supported", dtype_name(dtype));
  }
  for (size_t i = 1; i < n; ++i) {
    if (init.input_dtypes[i] != dtype) {
      return invalid_argument("input {} has dtype {} but input 0 is {}", i, dtype_name(init.input_dtypes[i]), dtype_name(dtype));
    }
  }
  ir::AttrReader attrs(init.node);
  attrs.require("equation");
  const std::string equation = attrs.get_string("equation", "");
  EMBER_RETURN_IF_ERROR(attrs.status());
  EMBER_ASSIGN_OR_RETURN(Equation parsed, parse_equation(equation, n));
  return std::unique_ptr<OpKernel>(std::make_unique<EinsumKernel>(dtype, equation, std::move(parsed)));
}

}  // namespace ember::kernels
