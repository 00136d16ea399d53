// Conv in f32 as a GEMM: the packed filter (conv_f32.h) against columns that
// im2col writes straight into the sgemm microkernel's B panels, a block of
// panels of output positions at a time on the thread that multiplies them.
#include <algorithm>
#include <cassert>

#include "base/small_vector.h"
#include "kernels/conv/conv_f32.h"
#include "threading/scratch.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

// A K block of a panel, kKc x nr floats (32 KiB at AVX-512's nr = 32), stays
// in L1 while every row tile of the filter passes over it.
constexpr int64_t kKc = 256;
// The panels one thread packs at a time: up to kMaxBlockPanels of them, within
// kBlockFloats (128 KiB, in L2 beside the filter's K block). Each row tile then
// writes its C rows that many panels long at a stretch. One panel at a time
// (128 bytes per C row and tile), MobileNet's pointwise Conv (64 x 32 filter,
// 112 x 112 positions) ran at 1.3-1.6x ORT at one thread; sixteen, at 0.7x
// (ember_ab, p50 of 5 rounds).
constexpr int64_t kBlockFloats = int64_t{1} << 15;
constexpr int64_t kMaxBlockPanels = 16;
// Multiply-adds one parallel_for range must hold to be worth a thread (as
// sgemm.cpp's kMinRangeMacs, measured there).
constexpr int64_t kMinRangeMacs = int64_t{1} << 19;
// The widest panel of any sgemm table (AVX-512's nr = 32).
constexpr int64_t kMaxPanelWidth = 64;

// The panels a thread packs and multiplies: depth x nr floats each.
const threading::ScratchId kBlockScratch = threading::new_scratch_id();

// What every panel of one Conv call shares.
struct ColumnPlan {
  const Window3d* w = nullptr;
  int64_t in_channels = 0;  // per group
  int64_t in_size = 0, nr = 0;
  bool ones_row = false;  // the filter has a bias column
  bool pointwise = false;
  // Per kw: outputs ow in [lo, hi) read an input column inside the row.
  SmallVector<int64_t, 16> ow_lo, ow_hi;
};

bool is_pointwise(const Window3d& w) {
  for (int d = 0; d < 3; ++d) {
    if (w.kernel[d] != 1 || w.stride[d] != 1 || w.pad_begin[d] != 0 || w.in[d] != w.out[d]) return false;
  }
  return true;
}

ColumnPlan plan_columns(const ConvShape& s, const ConvFilter& f) {
  const Window3d& w = s.w;
  ColumnPlan p;
  p.w = &w;
  p.in_channels = s.in_channels / s.group;
  p.in_size = w.in_size();
  p.nr = f.table().nr;
  p.ones_row = f.has_bias();
  p.pointwise = is_pointwise(w);
  const int64_t sw = w.stride[2];
  for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
    const int64_t base = kw * w.dilation[2] - w.pad_begin[2];  // input column of ow = 0
    const int64_t lo = base >= 0 ? 0 : (-base + sw - 1) / sw;
    const int64_t hi = w.in[2] > base ? (w.in[2] - base + sw - 1) / sw : 0;
    p.ow_lo.push_back(std::min(lo, w.out[2]));
    p.ow_hi.push_back(std::clamp(hi, p.ow_lo.back(), w.out[2]));
  }
  return p;
}

// Positions [begin, end) of one output line (od, oh), at panel column `column`.
struct Segment {
  int64_t od, oh, begin, end, column;
};

int64_t split_lines(const Window3d& w, int64_t j0, int64_t cols, Segment* segments) {
  int64_t count = 0;
  for (int64_t p = j0; p < j0 + cols;) {
    const int64_t line = p / w.out[2], ow = p % w.out[2];
    const int64_t end = std::min(w.out[2], ow + (j0 + cols - p));
    segments[count++] = {line / w.out[1], line % w.out[1], ow, end, p - j0};
    p += end - ow;
  }
  return count;
}

// One column row (input channel plane, tap kd, kh, kw) over a line segment:
// the input under the tap at each output, 0 in the padding.
void im2col_segment(const ColumnPlan& p, const Segment& sg, const float* plane, int64_t kd, int64_t kh, int64_t kw,
                    float* dst) {
  const Window3d& w = *p.w;
  const int64_t id = sg.od * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
  const int64_t ih = sg.oh * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
  dst += sg.column - sg.begin;  // dst[ow] for ow in [sg.begin, sg.end)
  if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) {
    std::fill(dst + sg.begin, dst + sg.end, 0.0f);
    return;
  }
  const int64_t lo = std::clamp(p.ow_lo[kw], sg.begin, sg.end), hi = std::clamp(p.ow_hi[kw], lo, sg.end);
  std::fill(dst + sg.begin, dst + lo, 0.0f);
  const int64_t sw = w.stride[2];
  const float* src = plane + (id * w.in[1] + ih) * w.in[2] + kw * w.dilation[2] - w.pad_begin[2];
  if (sw == 1) {
    for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow];
  } else {
    for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * sw];
  }
  std::fill(dst + hi, dst + sg.end, 0.0f);
}

// The panel of output positions [j0, j0 + cols): depth rows of nr floats (a
// row of ones first when the filter has a bias column), columns past `cols`
// zero.
void pack_panel(const ColumnPlan& p, const float* x_g, int64_t j0, int64_t cols, float* panel) {
  const Window3d& w = *p.w;
  float* row = panel;
  const auto next_row = [&] {
    std::fill(row + cols, row + p.nr, 0.0f);
    row += p.nr;
  };
  if (p.ones_row) {
    std::fill_n(row, cols, 1.0f);
    next_row();
  }
  if (p.pointwise) {
    for (int64_t c = 0; c < p.in_channels; ++c, next_row()) std::copy_n(x_g + c * p.in_size + j0, cols, row);
    return;
  }
  Segment segments[kMaxPanelWidth];
  const int64_t count = split_lines(w, j0, cols, segments);
  for (int64_t c = 0; c < p.in_channels; ++c) {
    const float* plane = x_g + c * p.in_size;
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
        for (int64_t kw = 0; kw < w.kernel[2]; ++kw, next_row()) {
          for (int64_t i = 0; i < count; ++i) im2col_segment(p, segments[i], plane, kd, kh, kw, row);
        }
      }
    }
  }
}

// The panels of one image and group from panel q0 on, packed into `block`,
// then multiplied K block by K block, each row tile of the filter over every
// panel in turn: a tile's C rows are written `panels` x nr floats at a stretch.
void multiply_block(const ConvFilter& f, const ColumnPlan& plan, const float* x_g, int64_t g, int64_t q0,
                    int64_t panels, int64_t kc, int64_t out_size, float* block, float* y_g) {
  const sgemm::SgemmTable& t = f.table();
  const int64_t depth = f.depth(), mpg = f.rows_per_group();
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t j0 = (q0 + q) * t.nr;
    pack_panel(plan, x_g, j0, std::min(t.nr, out_size - j0), block + q * depth * t.nr);
  }
  for (int64_t k0 = 0; k0 < depth; k0 += kc) {
    const int64_t k_len = std::min(kc, depth - k0);
    for (int64_t i0 = 0; i0 < mpg; i0 += t.mr) {
      const int64_t rows = std::min(t.mr, mpg - i0);
      const float* a = f.tile(g, i0) + k0 * rows;
      for (int64_t q = 0; q < panels; ++q) {
        const int64_t j0 = (q0 + q) * t.nr;
        t.tile(k_len, a, block + (q * depth + k0) * t.nr, y_g + i0 * out_size + j0, out_size, rows,
               std::min(t.nr, out_size - j0), 1.0f, k0 > 0);
      }
    }
  }
}

}  // namespace

void ConvFilter::pack(const sgemm::SgemmTable& t, const float* weights, const float* bias, int64_t out_channels,
                      int64_t group, int64_t k) {
  table_ = &t;
  has_bias_ = bias != nullptr;
  depth_ = k + (has_bias_ ? 1 : 0);
  rows_per_group_ = out_channels / group;
  buffer_.resize(static_cast<size_t>(std::max<int64_t>(1, out_channels * depth_)) * sizeof(float));
  const int64_t lead = has_bias_ ? 1 : 0;
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i0 = 0; i0 < rows_per_group_; i0 += t.mr) {
      const int64_t rows = std::min(t.mr, rows_per_group_ - i0);
      float* out = static_cast<float*>(buffer_.data()) + (g * rows_per_group_ + i0) * depth_;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t m = g * rows_per_group_ + i0 + r;
        if (has_bias_) out[r] = bias[m];
        for (int64_t kk = 0; kk < k; ++kk) out[(lead + kk) * rows + r] = weights[m * k + kk];
      }
    }
  }
}

void conv_f32_gemm(const ConvShape& s, const ConvFilter& filter, const float* x, float* y) {
  const Window3d& w = s.w;
  const sgemm::SgemmTable& t = filter.table();
  const int64_t cpg = s.in_channels / s.group, mpg = s.out_channels / s.group;
  const int64_t in_size = w.in_size(), out_size = w.out_size(), depth = filter.depth();
  if (s.batch == 0 || s.out_channels == 0 || out_size == 0) return;
  if (depth == 0) {  // no input channels and no bias
    std::fill_n(y, s.batch * s.out_channels * out_size, 0.0f);
    return;
  }
  assert(t.nr <= kMaxPanelWidth);
  const ColumnPlan plan = plan_columns(s, filter);
  // K blocks of equal depth (at most kKc), the same for every thread count.
  const int64_t k_blocks = (depth + kKc - 1) / kKc, kc = (depth + k_blocks - 1) / k_blocks;
  const int64_t panels = (out_size + t.nr - 1) / t.nr;
  const int64_t per_block = std::clamp<int64_t>(kBlockFloats / (depth * t.nr), 1, kMaxBlockPanels);
  const int64_t blocks = (panels + per_block - 1) / per_block;
  const int64_t grain = std::max<int64_t>(1, kMinRangeMacs / std::max<int64_t>(1, mpg * depth * per_block * t.nr));
  threading::parallel_for(s.batch * s.group * blocks, grain, [&](int64_t begin, int64_t end) {
    const size_t bytes = static_cast<size_t>(depth * per_block * t.nr) * sizeof(float);
    float* const block = static_cast<float*>(threading::scratch(kBlockScratch, bytes));
    for (int64_t u = begin; u < end; ++u) {
      const int64_t b = u % blocks, g = (u / blocks) % s.group, n = u / blocks / s.group;
      const int64_t q0 = b * per_block;
      multiply_block(filter, plan, x + (n * s.in_channels + g * cpg) * in_size, g, q0,
                     std::min(per_block, panels - q0), kc, out_size, block,
                     y + (n * s.out_channels + g * mpg) * out_size);
    }
  });
}

}  // namespace ember::kernels
