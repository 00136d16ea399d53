// Softmax, LogSoftmax, Hardmax.
//
// Softmax and LogSoftmax on f32/f16/bf16 run on the row microkernels
// (kernels/norm/row_ukernels.h): a max pass, an exp-and-sum pass, a scale pass.
// The normalized axis is either contiguous (inner == 1, the hot case: rows) or
// strided (inner > 1): then blocks of up to kRowBlock neighbouring columns are
// normalized together, row by row, with per-column max and sum vectors, so no
// transpose is needed. Hardmax and f64 run the reference loops of this file.
//
// Before opset 13 the input is read as a 2-D matrix [prod(shape[:axis]),
// prod(shape[axis:])] and each row is normalized; from 13 on the op normalizes
// along `axis` alone. Both are a normalization over the middle of an
// [outer, n, inner] view.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/common/shape_util.h"
#include "kernels/norm/row_io.h"
#include "kernels/norm/row_ukernels.h"
#include "kernels/reduce/reduce_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

constexpr int kPerAxisSince = 13;

// One row of `n` values `stride` apart. Subtracting the row maximum keeps exp()
// finite; a row of all -inf then gives NaN, as ONNX Runtime does.
template <SoftmaxKind kKind, typename T>
void normalize_row(const T* x, T* y, int64_t n, int64_t stride) {
  using C = compute_t<T>;
  if (n == 0) return;
  if constexpr (kKind == SoftmaxKind::kHardmax) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (static_cast<C>(x[i * stride]) > static_cast<C>(x[best * stride])) best = i;
    }
    for (int64_t i = 0; i < n; ++i) y[i * stride] = static_cast<T>(static_cast<C>(i == best ? 1 : 0));
  } else {
    C max = -std::numeric_limits<C>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(x[i * stride]);
      if (v > max || std::isnan(v)) max = v;
    }
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(std::exp(static_cast<C>(x[i * stride]) - max));
    if constexpr (kKind == SoftmaxKind::kSoftmax) {
      for (int64_t i = 0; i < n; ++i) {
        const double e = static_cast<double>(std::exp(static_cast<C>(x[i * stride]) - max));
        y[i * stride] = static_cast<T>(static_cast<C>(e / sum));
      }
    } else {
      const C log_sum = static_cast<C>(std::log(sum));
      for (int64_t i = 0; i < n; ++i) y[i * stride] = static_cast<T>(static_cast<C>(x[i * stride]) - max - log_sum);
    }
  }
}

template <SoftmaxKind kKind, typename T>
void normalize_tensor(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      normalize_row<kKind, T>(x + base, y + base, n, inner);
    }
  }
}

template <SoftmaxKind kKind>
Status normalize_dispatch(const Tensor& x, Tensor& y, int64_t outer, int64_t n, int64_t inner) {
  EMBER_SWITCH_FLOAT(x.dtype(), T, (normalize_tensor<kKind, T>(x.data_as<T>(), y.data_as<T>(), outer, n, inner));
                     return Status::ok(), break);
  return internal_error("softmax: unexpected dtype {}", dtype_name(x.dtype()));
}

// Elements per parallel_for task. Softmax over rows of 1024 f32, 1 vs 2 threads:
// 8 Ki elements 2.44 -> 1.58 us, 4 Ki 1.27 -> 1.12 us (method in
// docs/benchmarks/2026-11-30-thread-grains.md).
constexpr int64_t kElementsPerTask = 4096;

struct SoftmaxJob {
  DType dtype;
  bool log = false;
  const void* x = nullptr;
  void* y = nullptr;
  int64_t n = 0, inner = 1;
};

// Rows [begin, end) of a contiguous normalized axis.
void softmax_rows(const RowTable& t, const SoftmaxJob& job, int64_t begin, int64_t end) {
  const int64_t n = job.n;
  if (job.dtype == DType::kF32) {
    for (int64_t r = begin; r < end; ++r) {
      const float* x = static_cast<const float*>(job.x) + r * n;
      float* y = static_cast<float*>(job.y) + r * n;
      const float max = t.max(x, n);
      if (job.log) {
        const float sum = t.exp_sum(x, nullptr, n, max);
        t.sub2(x, y, n, max, std::log(sum));
      } else {
        const float sum = t.exp_sum(x, y, n, max);
        t.scale(y, y, n, 1.0f / sum);
      }
    }
    return;
  }
  const ConvertTable& cvt = convert_table();
  float buf[kRowBlock];
  for (int64_t r = begin; r < end; ++r) {
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; j += kRowBlock) {
      const int64_t len = std::min(kRowBlock, n - j);
      load_block(cvt, job.dtype, job.x, r * n + j, len, buf);
      const float m = t.max(buf, len);
      if (m > max || std::isnan(m)) max = std::isnan(max) ? max : m;
    }
    float sum = 0;
    for (int64_t j = 0; j < n; j += kRowBlock) {
      const int64_t len = std::min(kRowBlock, n - j);
      load_block(cvt, job.dtype, job.x, r * n + j, len, buf);
      sum += t.exp_sum(buf, nullptr, len, max);
    }
    const float log_sum = std::log(sum);
    for (int64_t j = 0; j < n; j += kRowBlock) {
      const int64_t len = std::min(kRowBlock, n - j);
      load_block(cvt, job.dtype, job.x, r * n + j, len, buf);
      if (job.log) {
        t.sub2(buf, buf, len, max, log_sum);
      } else {
        t.exp_sum(buf, buf, len, max);
        t.scale(buf, buf, len, 1.0f / sum);
      }
      store_block(cvt, job.dtype, buf, job.y, r * n + j, len);
    }
  }
}

// Columns [c0, c0 + len) of slice `o` of a strided normalized axis: element
// (k, c) of the slice sits at o * n * inner + k * inner + c.
void softmax_columns(const RowTable& t, const ConvertTable& cvt, const SoftmaxJob& job, int64_t o, int64_t c0,
                     int64_t len) {
  float shift[kRowBlock], acc[kRowBlock], buf[kRowBlock];
  const int64_t base = o * job.n * job.inner + c0;
  const auto load_row = [&](int64_t k, float* out) { load_block(cvt, job.dtype, job.x, base + k * job.inner, len, out); };
  load_row(0, acc);
  for (int64_t k = 1; k < job.n; ++k) {
    load_row(k, buf);
    t.max_into(buf, acc, len);
  }
  for (int64_t c = 0; c < len; ++c) shift[c] = -acc[c];
  std::fill(acc, acc + len, 0.0f);
  for (int64_t k = 0; k < job.n; ++k) {
    load_row(k, buf);
    t.add3(buf, shift, nullptr, buf, len);
    t.exp_sum(buf, buf, len, 0.0f);
    t.add3(acc, buf, nullptr, acc, len);
  }
  // acc becomes the per-column factor 1/sum, or -log(sum) added after x - max.
  for (int64_t c = 0; c < len; ++c) acc[c] = job.log ? -std::log(acc[c]) : 1.0f / acc[c];
  for (int64_t k = 0; k < job.n; ++k) {
    load_row(k, buf);
    if (job.log) {
      t.add3(buf, shift, nullptr, buf, len);
      t.add3(buf, acc, nullptr, buf, len);
    } else {
      t.add3(buf, shift, nullptr, buf, len);
      t.exp_sum(buf, buf, len, 0.0f);
      t.normalize(buf, buf, len, 0.0f, 1.0f, acc, nullptr);
    }
    store_block(cvt, job.dtype, buf, job.y, base + k * job.inner, len);
  }
}

void softmax_fast(const RowTable& t, const SoftmaxJob& job, int64_t outer) {
  if (job.n == 0 || outer == 0 || job.inner == 0) return;
  const int64_t slice = job.n * job.inner;
  if (job.inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kElementsPerTask / job.n);
    threading::parallel_for(outer, grain, [&](int64_t begin, int64_t end) { softmax_rows(t, job, begin, end); });
    return;
  }
  const int64_t blocks = (job.inner + kRowBlock - 1) / kRowBlock;
  const int64_t grain = std::max<int64_t>(1, kElementsPerTask / std::min(slice, job.n * kRowBlock));
  threading::parallel_for(outer * blocks, grain, [&](int64_t begin, int64_t end) {
    const ConvertTable& cvt = convert_table();
    for (int64_t u = begin; u < end; ++u) {
      const int64_t c0 = (u % blocks) * kRowBlock;
      softmax_columns(t, cvt, job, u / blocks, c0, std::min(kRowBlock, job.inner - c0));
    }
  });
}

class SoftmaxKernel final : public OpKernel {
 public:
  SoftmaxKernel(SoftmaxKind kind, int64_t axis, bool per_axis)
      : kind_(kind), axis_(axis), per_axis_(per_axis), table_(row_table()) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    EMBER_RETURN_IF_ERROR(normalize_axis(axis_, x.rank(), "attribute 'axis'").status());
    ctx.set_output(0, x.dtype(), x.shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t outer = 1;
    int64_t n = 1;
    int64_t inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) {
        outer *= x.dim(d);
      } else if (d == axis || !per_axis_) {
        n *= x.dim(d);
      } else {
        inner *= x.dim(d);
      }
    }
    Tensor& y = ctx.output(0);
    const DType dtype = x.dtype();
    const bool fast_dtype = dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
    if (kind_ != SoftmaxKind::kHardmax && fast_dtype) {
      softmax_fast(table_, SoftmaxJob{dtype, kind_ == SoftmaxKind::kLogSoftmax, x.data(), y.data(), n, inner}, outer);
      return Status::ok();
    }
    switch (kind_) {
      case SoftmaxKind::kSoftmax: return normalize_dispatch<SoftmaxKind::kSoftmax>(x, y, outer, n, inner);
      case SoftmaxKind::kLogSoftmax: return normalize_dispatch<SoftmaxKind::kLogSoftmax>(x, y, outer, n, inner);
      case SoftmaxKind::kHardmax: return normalize_dispatch<SoftmaxKind::kHardmax>(x, y, outer, n, inner);
    }
    return internal_error("softmax: unknown kind");
  }

 private:
  SoftmaxKind kind_;
  int64_t axis_;
  bool per_axis_;
  const RowTable& table_;
};

}  // namespace

KernelResult create_softmax(const KernelInit& init) {
  const ir::Node& node = init.node;
  SoftmaxKind kind;
  if (node.op_type == "Softmax") {
    kind = SoftmaxKind::kSoftmax;
  } else if (node.op_type == "LogSoftmax") {
    kind = SoftmaxKind::kLogSoftmax;
  } else if (node.op_type == "Hardmax") {
    kind = SoftmaxKind::kHardmax;
  } else {
    return internal_error("create_softmax does not implement {}", node.op_type);
  }
  const bool per_axis = node.opset >= kPerAxisSince;
  ir::AttrReader attrs(node);
  const int64_t axis = attrs.get_int("axis", per_axis ? -1 : 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (init.input_dtypes.size() != 1) return invalid_argument("expects 1 input, got {}", init.input_dtypes.size());
  const DType dtype = init.input_dtypes[0];
  if (dtype == DType::kString) return not_implemented("string tensors are not supported");
  if (!dtype_is_float(dtype)) {
    return invalid_argument("input 'input' must be a floating-point tensor, got {}", dtype_name(dtype));
  }
  return std::unique_ptr<OpKernel>(std::make_unique<SoftmaxKernel>(kind, axis, per_axis));
}

}  // namespace ember::kernels
