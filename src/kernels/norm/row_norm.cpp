// The row normalizations over the trailing dims, on the row microkernels:
// LayerNormalization (every opset: ORT registers its contrib LayerNormalization
// in the ONNX domain since opset 1), SimplifiedLayerNormalization (ORT's RMS norm
// in the default domain), RMSNormalization (opset 23), and com.microsoft
// SkipLayerNormalization / SkipSimplifiedLayerNormalization.
//
// The centered norms' statistics are two-pass in f32 (mean, then the sum of
// squared deviations), so a constant row gives variance exactly 0. The RMS
// norms round as ONNX Runtime 1.30's CPU kernels do, so that f32 outputs carry
// ORT's bits (see RmsRounding). f64 LayerNormalization runs the double
// reference in layer_norm.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "kernels/common/shape_util.h"
#include "kernels/norm/norm_ops.h"
#include "kernels/norm/row_io.h"
#include "kernels/norm/row_ukernels.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

// Elements per parallel_for task. LayerNormalization over rows of 1024 f32, 1 vs
// 2 threads: 16 Ki elements 2.57 -> 1.86 us, 8 Ki 1.33 -> 1.36 us (method in
// docs/benchmarks/2026-11-30-thread-grains.md): work of 8 Ki elements or less stays on one thread.
constexpr int64_t kElementsPerTask = 8192;
// Rows whose sums of squares run interleaved (row_ukernels.h).
constexpr int64_t kRmsRowGroup = 8;

// How an RMS norm rounds, as ORT 1.30's CPU kernel for the op does; rms is
// sqrt(sum_sq / n + epsilon) in f32 either way, and inv_std_var 1 / rms.
enum class RmsRounding {
  // Serial sum of squares, y = x / rms * gamma: SkipSimplifiedLayerNormalization
  // (contrib_ops/cpu/skip_layer_norm.cc, ComputeJob) at every size.
  kSerialDivide,
  // SimplifiedLayerNormalization and RMSNormalization (core/providers/cpu/nn/
  // layer_norm_impl.cc): f32 rows of kMlasMinRow or more go to MLAS's AVX2
  // kernel (core/mlas/lib/layernorm.cpp's dispatch threshold for Simplified),
  // sum_squares_lanes8 and y = (x * (1 / rms)) * gamma; shorter rows, and
  // f16 rows, take the serial loop of kSerialDivide. Not matched: a scale
  // broadcast over the rows (ORT's offset or double-precision paths; here the
  // blocked path's serial loop).
  kLayerNormImpl,
};
constexpr int64_t kMlasMinRow = 16;

struct NormConfig {
  std::string op;
  bool rms = false;   // no centering: y = x / sqrt(mean(x^2) + eps) * gamma
  RmsRounding rms_rounding = RmsRounding::kSerialDivide;
  bool skip = false;  // Skip*: x = input + skip [+ bias] first
  int gamma = 1, beta = -1, skip_input = -1, bias = -1;     // input indices (-1: none)
  int mean_out = -1, inv_std_out = -1, sum_out = -1;        // output indices
};

// A parameter (gamma/beta) read over the normalized dims: contiguous, or
// broadcast through element strides.
struct ParamView {
  const void* data = nullptr;
  bool contiguous = true;
  Shape strides;
};

struct RowJob {
  DType dtype;
  int64_t n = 0;
  float epsilon = 0;
  bool rms = false;
  RmsRounding rms_rounding = RmsRounding::kSerialDivide;
  const void* x = nullptr;
  const void* skip = nullptr;
  int64_t skip_rows = 1;
  const void* bias = nullptr;
  ParamView gamma, beta;
  Shape norm_shape;
  void* y = nullptr;
  void* sum = nullptr;
  float* mean = nullptr;
  float* inv_std = nullptr;
};

// The row's normalized-dims parameter block [j, j + len) as f32.
void load_param(const ConvertTable& cvt, const RowJob& job, const ParamView& p, int64_t j, int64_t len, float* out) {
  if (p.contiguous) return load_block(cvt, job.dtype, p.data, j, len, out);
  float one[1];
  for (int64_t k = 0; k < len; ++k) {
    int64_t rest = j + k, offset = 0;
    for (size_t d = job.norm_shape.size(); d-- > 0;) {
      offset += (rest % job.norm_shape[d]) * p.strides[d];
      rest /= job.norm_shape[d];
    }
    load_block(cvt, job.dtype, p.data, offset, 1, one);
    out[k] = one[0];
  }
}

struct RowStats {
  float mean = 0, inv_std = 0;
  float root = 0;  // sqrt(variance + epsilon); for the RMS norms, their divisor
};

// sum_sq: of deviations from the mean (centered), or of the values (RMS).
RowStats finish_stats(const RowJob& job, float sum, float sum_sq) {
  const float n = static_cast<float>(job.n);
  RowStats s;
  s.mean = job.n > 0 ? sum / n : 0.0f;
  s.root = std::sqrt((job.n > 0 ? sum_sq / n : 0.0f) + job.epsilon);
  s.inv_std = 1.0f / s.root;
  return s;
}

// RMS norms, f32 with contiguous gamma: kRmsRowGroup rows at a time, their
// sums of squares interleaved, then each row scaled; ORT's rounding (RmsRounding).
void run_rms_rows_f32(const RowTable& t, const RowJob& job, int64_t begin, int64_t end) {
  const int64_t n = job.n;
  const float* gamma = static_cast<const float*>(job.gamma.data);
  for (int64_t r0 = begin; r0 < end; r0 += kRmsRowGroup) {
    const int64_t rows = std::min(kRmsRowGroup, end - r0);
    const float* x = static_cast<const float*>(job.x) + r0 * n;
    if (job.skip) {
      float* s = static_cast<float*>(job.sum ? job.sum : job.y) + r0 * n;
      for (int64_t k = 0; k < rows; ++k) {
        t.add3(x + k * n, static_cast<const float*>(job.skip) + ((r0 + k) % job.skip_rows) * n,
               static_cast<const float*>(job.bias), s + k * n, n);
      }
      x = s;
    }
    const bool mlas = job.rms_rounding == RmsRounding::kLayerNormImpl && n >= kMlasMinRow;
    float sum_sq[kRmsRowGroup] = {};
    if (mlas) {
      t.sum_squares_lanes8(x, n, rows, n, sum_sq);
    } else {
      t.sum_squares_serial(x, n, rows, n, sum_sq);
    }
    for (int64_t k = 0; k < rows; ++k) {
      const float* xk = x + k * n;
      const RowStats s = finish_stats(job, job.mean ? t.sum(xk, n) : 0.0f, sum_sq[k]);
      float* y = static_cast<float*>(job.y) + (r0 + k) * n;
      if (mlas) {
        t.normalize(xk, y, n, 0.0f, s.inv_std, gamma, nullptr);
      } else {
        t.rms_scale(xk, y, n, s.root, gamma);
      }
      if (job.mean) job.mean[r0 + k] = s.mean;
      if (job.inv_std) job.inv_std[r0 + k] = s.inv_std;
    }
  }
}

// Centered norms, f32 with contiguous parameters: the row is read in place,
// three passes in L1.
void run_rows_f32(const RowTable& t, const RowJob& job, int64_t begin, int64_t end) {
  const int64_t n = job.n;
  const float* gamma = static_cast<const float*>(job.gamma.data);
  const float* beta = static_cast<const float*>(job.beta.data);
  for (int64_t r = begin; r < end; ++r) {
    const float* x = static_cast<const float*>(job.x) + r * n;
    float* y = static_cast<float*>(job.y) + r * n;
    if (job.skip) {
      float* s = job.sum ? static_cast<float*>(job.sum) + r * n : y;
      t.add3(x, static_cast<const float*>(job.skip) + (r % job.skip_rows) * n, static_cast<const float*>(job.bias),
             s, n);
      x = s;
    }
    const float sum = t.sum(x, n);
    const float center = sum / static_cast<float>(n);
    const RowStats s = finish_stats(job, sum, t.sum_sq_dev(x, n, center));
    t.normalize(x, y, n, center, s.inv_std, gamma, beta);
    if (job.mean) job.mean[r] = s.mean;
    if (job.inv_std) job.inv_std[r] = s.inv_std;
  }
}

// The row's values (input [+ skip + bias]) for block [j, j + len) as f32.
void load_row_block(const ConvertTable& cvt, const RowTable& t, const RowJob& job, int64_t r, int64_t j, int64_t len,
                    float* out, float* tmp) {
  load_block(cvt, job.dtype, job.x, r * job.n + j, len, out);
  if (!job.skip) return;
  load_block(cvt, job.dtype, job.skip, (r % job.skip_rows) * job.n + j, len, tmp);
  t.add3(out, tmp, nullptr, out, len);
  if (job.bias) {
    load_block(cvt, job.dtype, job.bias, j, len, tmp);
    t.add3(out, tmp, nullptr, out, len);
  }
}

// 16-bit types and broadcast parameters: the row is converted block by block,
// once per pass.
void run_rows_blocked(const RowTable& t, const RowJob& job, int64_t begin, int64_t end) {
  const ConvertTable& cvt = convert_table();
  float buf[kRowBlock], tmp[kRowBlock], g[kRowBlock], b[kRowBlock];
  const int64_t n = job.n;
  for (int64_t r = begin; r < end; ++r) {
    float sum = 0;
    if (!job.rms || job.mean) {
      for (int64_t j = 0; j < n; j += kRowBlock) {
        const int64_t len = std::min(kRowBlock, n - j);
        load_row_block(cvt, t, job, r, j, len, buf, tmp);
        sum += t.sum(buf, len);
      }
    }
    const float center = job.rms || n == 0 ? 0.0f : sum / static_cast<float>(n);
    float sq = 0;
    for (int64_t j = 0; j < n; j += kRowBlock) {
      const int64_t len = std::min(kRowBlock, n - j);
      load_row_block(cvt, t, job, r, j, len, buf, tmp);
      if (job.rms) {
        t.sum_squares_serial(buf, len, 1, len, &sq);
      } else {
        sq += t.sum_sq_dev(buf, len, center);
      }
    }
    const RowStats s = finish_stats(job, sum, sq);
    for (int64_t j = 0; j < n; j += kRowBlock) {
      const int64_t len = std::min(kRowBlock, n - j);
      load_row_block(cvt, t, job, r, j, len, buf, tmp);
      if (job.sum) store_block(cvt, job.dtype, buf, job.sum, r * n + j, len);
      load_param(cvt, job, job.gamma, j, len, g);
      if (job.beta.data) load_param(cvt, job, job.beta, j, len, b);
      if (job.rms) {
        t.rms_scale(buf, buf, len, s.root, g);
      } else {
        t.normalize(buf, buf, len, center, s.inv_std, g, job.beta.data ? b : nullptr);
      }
      store_block(cvt, job.dtype, buf, job.y, r * n + j, len);
    }
    if (job.mean) job.mean[r] = s.mean;
    if (job.inv_std) job.inv_std[r] = s.inv_std;
  }
}

class RowNormKernel final : public OpKernel {
 public:
  RowNormKernel(NormConfig config, DType dtype, int64_t axis, float epsilon)
      : c_(std::move(config)), dtype_(dtype), axis_(axis), epsilon_(epsilon), table_(row_table()) {}

  Status infer(KernelContext& ctx) const override {
    const Shape& x = ctx.input(0).shape();
    EMBER_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, static_cast<int64_t>(x.size()), "attribute 'axis'"));
    const Shape norm_shape(x.begin() + axis, x.end());
    if (c_.skip) EMBER_RETURN_IF_ERROR(check_skip_shapes(ctx, x));
    for (int i : {c_.gamma, c_.beta}) {
      if (i >= 0 && ctx.has_input(static_cast<size_t>(i))) EMBER_RETURN_IF_ERROR(check_param(ctx, i, x, norm_shape));
    }
    Shape stats_shape = x;
    for (size_t d = static_cast<size_t>(axis); d < stats_shape.size(); ++d) stats_shape[d] = 1;
    ctx.set_output(0, dtype_, x);
    if (c_.mean_out >= 0) ctx.set_output(static_cast<size_t>(c_.mean_out), DType::kF32, stats_shape);
    if (c_.inv_std_out >= 0) ctx.set_output(static_cast<size_t>(c_.inv_std_out), DType::kF32, stats_shape);
    if (c_.sum_out >= 0) ctx.set_output(static_cast<size_t>(c_.sum_out), dtype_, x);
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    RowJob job;
    job.dtype = dtype_;
    job.epsilon = epsilon_;
    job.rms = c_.rms;
    job.rms_rounding = c_.rms_rounding;
    job.norm_shape.assign(x.shape().begin() + axis, x.shape().end());
    job.n = shape_numel(job.norm_shape);
    const int64_t rows = job.n == 0 ? 0 : x.numel() / job.n;
    job.x = x.data();
    job.y = ctx.output(0).data();
    bool contiguous = dtype_ == DType::kF32;
    if (c_.skip) {
      const Tensor& skip = ctx.input(static_cast<size_t>(c_.skip_input));
      job.skip = skip.data();
      job.skip_rows = std::max<int64_t>(1, skip.numel() / std::max<int64_t>(1, job.n));
      if (c_.bias >= 0 && ctx.has_input(static_cast<size_t>(c_.bias))) job.bias = ctx.input(static_cast<size_t>(c_.bias)).data();
    }
    job.gamma = param_view(ctx, c_.gamma, job.norm_shape);
    job.beta = param_view(ctx, c_.beta, job.norm_shape);
    contiguous = contiguous && job.gamma.contiguous && job.beta.contiguous;
    job.sum = output_data(ctx, c_.sum_out);
    job.mean = static_cast<float*>(output_data(ctx, c_.mean_out));
    job.inv_std = static_cast<float*>(output_data(ctx, c_.inv_std_out));
    if (job.n == 0) {
      // Statistics of an empty row are 0/0: NaN, as the mean and variance formulas give.
      for (float* stats : {job.mean, job.inv_std}) {
        if (stats) {
          std::fill_n(stats, shape_numel(std::span(x.shape()).first(static_cast<size_t>(axis))),
                      std::numeric_limits<float>::quiet_NaN());
        }
      }
      return Status::ok();
    }
    const RowTable& t = table_;
    const int64_t grain = std::max<int64_t>(1, kElementsPerTask / std::max<int64_t>(1, job.n));
    threading::parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
      if (contiguous && job.rms) {
        run_rms_rows_f32(t, job, begin, end);
      } else if (contiguous) {
        run_rows_f32(t, job, begin, end);
      } else {
        run_rows_blocked(t, job, begin, end);
      }
    });
    return Status::ok();
  }

 private:
  static void* output_data(KernelContext& ctx, int index) {
    return index >= 0 && ctx.has_output(static_cast<size_t>(index)) ? ctx.output(static_cast<size_t>(index)).data()
                                                                     : nullptr;
  }

  static ParamView param_view(const KernelContext& ctx, int index, const Shape& norm_shape) {
    ParamView p;
    if (index < 0 || !ctx.has_input(static_cast<size_t>(index))) return p;
    const Tensor& t = ctx.input(static_cast<size_t>(index));
    p.data = t.data();
    p.contiguous = t.numel() == shape_numel(norm_shape);
    if (!p.contiguous) p.strides = broadcast_strides(t.shape(), norm_shape);
    return p;
  }

  static const char* input_name(const NormConfig& c, int i) {
    if (i == c.gamma) return c.skip ? "gamma" : "scale";
    if (i == c.beta) return c.skip ? "beta" : "B";
    if (i == c.bias) return "bias";
    return "skip";
  }

  Status check_param(const KernelContext& ctx, int i, const Shape& x, const Shape& norm_shape) const {
    const Shape& p = ctx.input(static_cast<size_t>(i)).shape();
    bool ok = p.size() <= norm_shape.size();
    for (size_t d = 0; ok && d < p.size(); ++d) ok = p[d] == 1 || p[d] == norm_shape[d + norm_shape.size() - p.size()];
    if (c_.skip) ok = ok && p.size() == 1 && p[0] == norm_shape.back();
    if (!ok) {
      return invalid_argument("input '{}' {} does not {} the normalized shape {} of input {} (axis {})",
                              input_name(c_, i), shape_to_string(p), c_.skip ? "match" : "broadcast to",
                              shape_to_string(norm_shape), shape_to_string(x), axis_);
    }
    return Status::ok();
  }

  // ORT's contract: input is [B, S, H] or [T, H]; skip has the same shape or
  // broadcasts over the leading dims ([1, S, H], [S, H]): row r adds skip row
  // r % skip_rows. bias is [H].
  Status check_skip_shapes(const KernelContext& ctx, const Shape& x) const {
    if (x.size() != 2 && x.size() != 3) {
      return invalid_argument("input 'input' {} must be 3-D [batch, sequence, hidden] or 2-D [tokens, hidden]",
                              shape_to_string(x));
    }
    const Shape& s = ctx.input(static_cast<size_t>(c_.skip_input)).shape();
    size_t lead = 0;
    while (lead + 1 < s.size() && s[lead] == 1) ++lead;
    const size_t kept = s.size() - lead;
    bool ok = !s.empty() && kept <= x.size();
    for (size_t d = 0; ok && d < kept; ++d) ok = s[lead + d] == x[x.size() - kept + d];
    if (!ok) {
      return invalid_argument("input 'skip' {} must have the shape of input {} or broadcast over its leading dims",
                              shape_to_string(s), shape_to_string(x));
    }
    if (c_.bias >= 0 && ctx.has_input(static_cast<size_t>(c_.bias))) {
      const Shape& b = ctx.input(static_cast<size_t>(c_.bias)).shape();
      if (b.size() != 1 || b[0] != x.back()) {
        return invalid_argument("input 'bias' {} must have shape [{}] (the hidden size of input {})",
                                shape_to_string(b), x.back(), shape_to_string(x));
      }
    }
    return Status::ok();
  }

  NormConfig c_;
  DType dtype_;
  int64_t axis_;
  float epsilon_;
  const RowTable& table_;
};

Result<NormConfig> norm_config(const ir::Node& node) {
  NormConfig c;
  c.op = node.op_type;
  if (node.op_type == "LayerNormalization") {
    c.beta = 2;
    c.mean_out = 1;
    c.inv_std_out = 2;
  } else if (node.op_type == "SimplifiedLayerNormalization") {
    c.rms = true;
    c.rms_rounding = RmsRounding::kLayerNormImpl;
    c.inv_std_out = 1;
  } else if (node.op_type == "RMSNormalization") {
    c.rms = true;
    c.rms_rounding = RmsRounding::kLayerNormImpl;
  } else if (node.op_type == "SkipLayerNormalization") {
    c.skip = true;
    c.skip_input = 1;
    c.gamma = 2;
    c.beta = 3;
    c.bias = 4;
    c.mean_out = 1;
    c.inv_std_out = 2;
    c.sum_out = 3;
  } else if (node.op_type == "SkipSimplifiedLayerNormalization") {
    c.rms = true;
    c.skip = true;
    c.skip_input = 1;
    c.gamma = 2;
    c.bias = 3;
    c.mean_out = 1;
    c.inv_std_out = 2;
    c.sum_out = 3;
    // Ember's fusion of Add -> SimplifiedLayerNormalization (runtime/fuse_norm.cpp)
    // keeps the rounding ORT gives that pair, which it runs unfused.
    if (node.find_attr(kFusedFromSimplifiedAttr) != nullptr) c.rms_rounding = RmsRounding::kLayerNormImpl;
  } else {
    return internal_error("create_row_normalization does not implement {}", node.op_type);
  }
  return c;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_row_normalization(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(NormConfig config, norm_config(init.node));
  const size_t required = config.skip ? 3 : 2;
  EMBER_RETURN_IF_ERROR(check_float_inputs(init, required, true));
  const DType dtype = init.input_dtypes[0];
  if (dtype == DType::kF64 && config.op == "LayerNormalization") return create_layer_normalization_reference(init);
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    return not_implemented("input 0 has dtype {}; {} supports float, float16 and bfloat16", dtype_name(dtype),
                           config.op);
  }
  ir::AttrReader attrs(init.node);
  const int64_t axis = config.skip ? -1 : attrs.get_int("axis", -1);
  const float epsilon = attrs.get_float("epsilon", config.skip ? 1e-12f : 1e-5f);
  const int64_t stash_type = config.skip ? 1 : attrs.get_int("stash_type", 1);
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (stash_type != static_cast<int64_t>(DType::kF32)) {
    return not_implemented("attribute 'stash_type' {} is not supported (only 1, float32)", stash_type);
  }
  if (!(epsilon >= 0.0f)) return invalid_argument("attribute 'epsilon' must be >= 0, got {}", epsilon);
  return std::unique_ptr<OpKernel>(std::make_unique<RowNormKernel>(std::move(config), dtype, axis, epsilon));
}

}  // namespace ember::kernels
