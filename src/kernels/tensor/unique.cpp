// Unique: distinct elements (or slices along an axis) of X, with first-occurrence
// indices, inverse indices and counts. The output size depends on the values, so
// infer() needs X; both infer() and run() sort a permutation of the n slices,
// which is scratch memory proportional to the data, not to the rank.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "kernels/tensor/gather_scatter_common.h"

namespace ember::kernels::gather_scatter {
namespace {

struct UniqueGroups {
  std::vector<int64_t> first;    // first occurrence of each unique slice, in output order
  std::vector<int64_t> counts;
  std::vector<int64_t> inverse;  // output position of each input slice
};

// Orders values ascending with NaN after every number; NaNs compare equal, so
// they collapse into one unique value as in numpy.
template <typename C>
bool value_less(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
  }
  return a < b;
}

// Slice j is x[o, j, i] for every o < outer, i < inner, read o-major.
template <typename T>
UniqueGroups find_unique(const T* x, int64_t outer, int64_t n, int64_t inner, bool sorted) {
  using C = compute_t<T>;
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const C va = static_cast<C>(x[(o * n + a) * inner + i]);
        const C vb = static_cast<C>(x[(o * n + b) * inner + i]);
        if (value_less(va, vb)) return -1;
        if (value_less(vb, va)) return 1;
      }
    }
    return 0;
  };
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  // Stable, so the first of each run of equal slices is its first occurrence.
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  UniqueGroups g;
  g.inverse.resize(static_cast<size_t>(n));
  for (size_t k = 0; k < perm.size(); ++k) {
    if (k == 0 || compare(perm[k - 1], perm[k]) != 0) {
      g.first.push_back(perm[k]);
      g.counts.push_back(0);
    }
    ++g.counts.back();
    g.inverse[static_cast<size_t>(perm[k])] = static_cast<int64_t>(g.first.size()) - 1;
  }
  if (sorted) return g;
  // Unsorted output lists the groups in order of first occurrence.
  std::vector<int64_t> order(g.first.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return g.first[static_cast<size_t>(a)] < g.first[static_cast<size_t>(b)];
  });
  std::vector<int64_t> position(order.size());
  UniqueGroups out;
  for (size_t p = 0; p < order.size(); ++p) {
    position[static_cast<size_t>(order[p])] = static_cast<int64_t>(p);
    out.first.push_back(g.first[static_cast<size_t>(order[p])]);
    out.counts.push_back(g.counts[static_cast<size_t>(order[p])]);
  }
  out.inverse.resize(g.inverse.size());
  for (size_t j = 0; j < g.inverse.size(); ++j) out.inverse[j] = position[static_cast<size_t>(g.inverse[j])];
  return out;
}

class UniqueKernel final : public OpKernel {
 public:
  UniqueKernel(bool has_axis, int64_t axis, bool sorted) : has_axis_(has_axis), axis_(axis), sorted_(sorted) {}

  Status infer(KernelContext& ctx) const override {
    if (!ctx.has_value(0)) return needs_value(0);
    const Tensor& x = ctx.input(0);
    if (has_axis_) EMBER_RETURN_IF_ERROR(normalize_axis(axis_, x.rank(), "Unique axis").status());
    const Layout l = layout(x);
    const UniqueGroups g = groups(x, l);
    const auto u = static_cast<int64_t>(g.first.size());
    Shape y{u};
    if (has_axis_) {
      y = x.shape();
      y[static_cast<size_t>(l.axis)] = u;
    }
    ctx.set_output(0, x.dtype(), std::move(y));
    ctx.set_output(1, DType::kI64, Shape{u});
    ctx.set_output(2, DType::kI64, Shape{l.n});
    ctx.set_output(3, DType::kI64, Shape{u});
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Layout l = layout(x);
    const UniqueGroups g = groups(x, l);
    const size_t row_bytes = static_cast<size_t>(l.inner) * dtype_size(x.dtype());
    const auto u = static_cast<int64_t>(g.first.size());
    const auto* src = static_cast<const uint8_t*>(x.data());
    auto* y = static_cast<uint8_t*>(ctx.output(0).data());
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t k = 0; k < u; ++k) {
        std::memcpy(y + static_cast<size_t>(o * u + k) * row_bytes,
                    src + static_cast<size_t>(o * l.n + g.first[static_cast<size_t>(k)]) * row_bytes, row_bytes);
      }
    }
    write_ints(ctx, 1, g.first);
    write_ints(ctx, 2, g.inverse);
    write_ints(ctx, 3, g.counts);
    return Status::ok();
  }

 private:
  struct Layout {
    int64_t axis = 0;
    int64_t outer = 1;
    int64_t n = 0;
    int64_t inner = 1;
  };

  Layout layout(const Tensor& x) const {
    Layout l;
    if (!has_axis_) {
      l.n = x.numel();
      return l;
    }
    l.axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    l.outer = dims_product(x.shape(), 0, l.axis);
    l.n = x.dim(l.axis);
    l.inner = dims_product(x.shape(), l.axis + 1, x.rank());
    return l;
  }

  UniqueGroups groups(const Tensor& x, const Layout& l) const {
    UniqueGroups g;
    EMBER_SWITCH_ALL(x.dtype(), T, g = find_unique(x.data_as<T>(), l.outer, l.n, l.inner, sorted_), break);
    return g;
  }

  static void write_ints(KernelContext& ctx, size_t output, const std::vector<int64_t>& v) {
    if (ctx.has_output(output) && !v.empty()) {
      std::memcpy(ctx.output(output).data(), v.data(), v.size() * sizeof(int64_t));
    }
  }

  bool has_axis_;
  int64_t axis_;
  bool sorted_;
};

}  // namespace

KernelResult create_unique(const KernelInit& init) {
  EMBER_RETURN_IF_ERROR(require_inputs(init, 1));
  EMBER_RETURN_IF_ERROR(check_movable_dtype(init.input_dtypes[0], "X"));
  ir::AttrReader attrs(init.node);
  const bool has_axis = attrs.has("axis");
  const int64_t axis = attrs.get_int("axis", 0);
  const int64_t sorted = attrs.get_int("sorted", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  return std::unique_ptr<OpKernel>(new UniqueKernel(has_axis, axis, sorted != 0));
}

}  // namespace ember::kernels::gather_scatter
