// Conv in f32 through im2col and the sgemm driver.
#include "kernels/conv/conv_gemm.h"

#include <algorithm>

#include "base/buffer.h"
#include "kernels/matmul/sgemm.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

// As in conv_transpose.cpp: the columns of one GEMM are capped at 16 MiB, at
// least 256 output positions wide.
constexpr int64_t kColumnBudgetFloats = int64_t{4} << 20;
constexpr int64_t kMinChunkPositions = 256;
// Column floats one im2col range must write to be worth a thread; sized like
// conv_transpose.cpp's kMinRangeAdds (not measured on its own).
constexpr int64_t kMinRangeFloats = int64_t{1} << 15;

thread_local AlignedBuffer t_columns;

// Writes rows [c * taps, (c + 1) * taps) of the columns for output positions
// [p0, p1): row (c, tap), column p - p0 holds the input under that tap at output
// p, or 0 in the padding.
void im2col_channel(const Window3d& w, const float* plane, int64_t p0, int64_t p1, float* rows, int64_t ld) {
  const int64_t out_w = w.out[2];
  int64_t tap = 0;
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw, ++tap) {
        float* row = rows + tap * ld;
        const int64_t shift_w = kw * w.dilation[2] - w.pad_begin[2];
        for (int64_t line = p0 / out_w; line * out_w < p1; ++line) {
          const int64_t od = line / w.out[1], oh = line % w.out[1];
          const int64_t id = od * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
          const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
          const int64_t lo = std::max<int64_t>(0, p0 - line * out_w), hi = std::min(out_w, p1 - line * out_w);
          float* dst = row;
          const int64_t base = line * out_w - p0;  // column of ow = 0 (negative on a line begun before p0)
          if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) {
            for (int64_t ow = lo; ow < hi; ++ow) dst[base + ow] = 0.0f;
            continue;
          }
          const float* src = plane + (id * w.in[1] + ih) * w.in[2];
          for (int64_t ow = lo; ow < hi; ++ow) {
            const int64_t iw = ow * w.stride[2] + shift_w;
            dst[base + ow] = iw >= 0 && iw < w.in[2] ? src[iw] : 0.0f;
          }
        }
      }
    }
  }
}

bool is_pointwise(const Window3d& w) {
  for (int d = 0; d < 3; ++d) {
    if (w.kernel[d] != 1 || w.stride[d] != 1 || w.pad_begin[d] != 0 || w.in[d] != w.out[d]) return false;
  }
  return true;
}

}  // namespace

void conv_f32_gemm(const ConvGemmShape& s, const float* x, const float* weights, const float* bias, float* y) {
  const Window3d& w = s.w;
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  const int64_t in_size = w.in_size(), out_size = w.out_size(), taps = w.kernel_size();
  const int64_t rows = cpg * taps;
  if (s.batch == 0 || s.out_channels == 0 || out_size == 0) return;
  const bool pointwise = is_pointwise(w);
  const int64_t chunk =
      pointwise ? out_size : std::min(out_size, std::max(kMinChunkPositions, kColumnBudgetFloats / std::max<int64_t>(1, rows)));
  if (!pointwise && rows > 0) t_columns.resize(static_cast<size_t>(rows * chunk) * sizeof(float));
  float* const columns = static_cast<float*>(t_columns.data());
  const sgemm::SgemmTable& table = sgemm::sgemm_table();
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.group; ++g) {
      float* const y_g = y + (n * s.out_channels + g * mpg) * out_size;
      const float* const x_g = x + (n * s.in_channels + g * cpg) * in_size;
      if (bias) {
        for (int64_t m = 0; m < mpg; ++m) std::fill_n(y_g + m * out_size, out_size, bias[g * mpg + m]);
      }
      for (int64_t p0 = 0; p0 < out_size; p0 += chunk) {
        const int64_t p1 = std::min(out_size, p0 + chunk), width = p1 - p0;
        const float* b = x_g + p0;
        int64_t ldb = in_size;
        if (!pointwise) {
          const int64_t grain = std::max<int64_t>(1, kMinRangeFloats / std::max<int64_t>(1, taps * width));
          threading::parallel_for(cpg, grain, [&](int64_t begin, int64_t end) {
            for (int64_t c = begin; c < end; ++c) {
              im2col_channel(w, x_g + c * in_size, p0, p1, columns + c * taps * width, width);
            }
          });
          b = columns;
          ldb = width;
        }
        GemmParams p;
        p.m = mpg;
        p.n = width;
        p.k = rows;
        p.lda = rows;
        p.ldb = ldb;
        p.ldc = out_size;
        p.beta = bias ? 1.0f : 0.0f;
        sgemm::gemm(table, p, weights + g * mpg * rows, b, y_g + p0);
      }
    }
  }
}

}  // namespace ember::kernels
