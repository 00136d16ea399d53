#pragma once
// f32 row microkernels shared by the normalizations (LayerNormalization, RMS
// norms, Skip*), Softmax/LogSoftmax and the float reductions, one table per ISA
// level. Every entry reads x[0..n) contiguously; y may equal x (in place) unless
// noted. f16/bf16 callers convert blocks to f32, call these, and convert back.
//
// Accumulation: the f32 sums keep one partial per SIMD lane (64 lanes at
// AVX-512, 32 at AVX2) and add them in a fixed order at the end, so a row's
// result never depends on the thread count. The *_f64 sums widen each element
// to double first: the reductions keep the precision of their double reference.
//
// This header is included by the per-ISA files: plain declarations only.
#include <cstdint>

#include "base/isa.h"

namespace ember::kernels {

struct RowTable {
  // Σ x.
  float (*sum)(const float* x, int64_t n);
  // Σ (x - center)^2: the second pass of a two-pass variance (center = mean),
  // or the sum of squares of an RMS norm (center = 0).
  float (*sum_sq_dev)(const float* x, int64_t n, float center);
  // y = (x - center) * scale * gamma [+ beta]; gamma and beta have n entries,
  // beta may be nullptr.
  void (*normalize)(const float* x, float* y, int64_t n, float center, float scale, const float* gamma,
                    const float* beta);
  // y = a + b [+ c]; c may be nullptr; y may equal a or b.
  void (*add3)(const float* a, const float* b, const float* c, float* y, int64_t n);
  // The RMS norms' statistics in the orders ONNX Runtime 1.30's CPU kernels
  // use, so the norms' outputs (MatMulNBits' int8-quantized activations) carry
  // ORT's bits; each gives the same bits at every level. For `rows` rows
  // `stride` apart, of n elements each:
  //
  // acc[r] += x[0]^2 + x[1]^2 + ... in index order, each square and each sum
  // rounded to f32 (no FMA): one serial chain per row, as the scalar loops of
  // contrib_ops/cpu/skip_layer_norm.cc and core/providers/cpu/nn/layer_norm_impl.cc
  // sum. The rows' chains interleave, hiding the add latency over a prompt;
  // acc carries a row across blocks.
  void (*sum_squares_serial)(const float* x, int64_t stride, int64_t rows, int64_t n, float* acc);
  // out[r] = the sum of squares of MLAS's AVX2 LayerNorm/RMSNorm kernel
  // (core/mlas/lib/layernorm_kernel_avx2.cpp), which ORT runs for RMS rows of
  // 16 or more on AVX2 CPUs: lane l of 8 sums x[8k + l]^2 by FMA over the whole
  // blocks of 8, the lanes fold as ((0+4) + (2+6)) + ((1+5) + (3+7)), then the
  // tail of n % 8 adds x[i]^2 serially as ORT's build compiled that loop: the
  // first 4 when there are 4 or more as s + round(x^2), the others as
  // fma(x, x, s) (measured against ORT 1.30 for every tail length).
  void (*sum_squares_lanes8)(const float* x, int64_t stride, int64_t rows, int64_t n, float* out);
  // y = x / rms * gamma, divided then multiplied (ORT's scalar loops); y may
  // equal x. normalize() with center 0 gives MLAS's (x * (1/rms)) * gamma.
  void (*rms_scale)(const float* x, float* y, int64_t n, float rms, const float* gamma);
  // max x (-inf for n == 0); NaN if any x is NaN.
  float (*max)(const float* x, int64_t n);
  // min x (+inf for n == 0); NaN if any x is NaN.
  float (*min)(const float* x, int64_t n);
  // Σ exp(x - shift), also stored to y unless y is nullptr. For x - shift <= 0
  // (softmax), exp is within 2 ulp of the correctly rounded value; NaN stays NaN
  // and -inf gives 0.
  float (*exp_sum)(const float* x, float* y, int64_t n, float shift);
  // y = x * s.
  void (*scale)(const float* x, float* y, int64_t n, float s);
  // y = (x - a) - b, rounded in that order: log-softmax's x - max - log(sum),
  // exact for x near max however large max is.
  void (*sub2)(const float* x, float* y, int64_t n, float a, float b);
  // Σ x, Σ x^2 and Σ |x| accumulated in double.
  double (*sum_f64)(const float* x, int64_t n);
  double (*sum_sq_f64)(const float* x, int64_t n);
  double (*sum_abs_f64)(const float* x, int64_t n);
  // acc[i] += x[i] (kind 0), x[i]^2 (kind 1) or |x[i]| (kind 2), in double:
  // the column accumulation of a reduction over a leading axis.
  void (*accumulate_f64)(const float* x, double* acc, int64_t n, int kind);
  // acc[i] = max(acc[i], x[i]) / min(...), NaN-propagating.
  void (*max_into)(const float* x, float* acc, int64_t n);
  void (*min_into)(const float* x, float* acc, int64_t n);
};

inline constexpr int kAccumulateSum = 0;
inline constexpr int kAccumulateSquare = 1;
inline constexpr int kAccumulateAbs = 2;

const RowTable& row_table(Isa isa);
inline const RowTable& row_table() { return row_table(active_isa()); }

void fill_row_avx2(RowTable& t);
void fill_row_avx512(RowTable& t);

}  // namespace ember::kernels
