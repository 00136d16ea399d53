#include "kernels/quant/qgemm_driver.h"

#include <algorithm>
#include <cstring>

#include "threading/thread_pool.h"

namespace ember::kernels::quant {
namespace {

// A task is up to kTaskRows rows by kTaskPanels panels: 64 columns of B over
// K = 2048 are 128 KiB, which stay in L2 while every row chunk passes over them.
constexpr int64_t kTaskRows = 64;
constexpr int64_t kTaskPanels = 4;
// Multiply-adds per parallel_for chunk. Measured with a scratch loop over
// run_qgemm (M = 1, K = 2048, s8 B, best of 400 runs, this Zen 5 VM): one
// 64-column task takes 1.2 us; with 2^18 MACs per chunk, N = 256 goes from 5.0
// to 3.6 us and N = 512 from 11 to 6.3 us at 2 threads, where 2^20 kept both on
// one thread.
constexpr int64_t kMinChunkMacs = int64_t{1} << 18;

}  // namespace

QGemmWeights pack_qgemm_weights(const uint8_t* b, bool b_signed, int64_t k, int64_t n, const uint8_t* b_zp,
                                int64_t b_zp_stride) {
  QGemmWeights w;
  w.k = k;
  w.n = n;
  w.num_panels = (n + kQGemmPanelCols - 1) / kQGemmPanelCols;
  w.panel_stride = (k + 3) / 4 * 4 * kQGemmPanelCols;
  w.panels.resize(static_cast<size_t>(std::max<int64_t>(w.num_panels * w.panel_stride, 1)));
  auto* out = static_cast<int8_t*>(w.panels.data());
  std::memset(out, 0, w.panels.size());
  const uint8_t flip = b_signed ? 0 : 0x80;
  const size_t padded = static_cast<size_t>(w.num_panels * kQGemmPanelCols);
  w.col_zp.assign(padded, 0);
  w.col_term.assign(padded, 0);
  for (int64_t j = 0; j < n; ++j) {
    int8_t* panel = out + (j / kQGemmPanelCols) * w.panel_stride + (j % kQGemmPanelCols) * 4;
    uint32_t colsum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const auto v = static_cast<int8_t>(b[kk * n + j] ^ flip);
      panel[(kk / 4) * 64 + kk % 4] = v;
      colsum += static_cast<uint32_t>(static_cast<int32_t>(v));
    }
    int32_t zb = 0;
    if (b_zp) {
      const uint8_t raw = b_zp[j * b_zp_stride];
      zb = b_signed ? static_cast<int32_t>(static_cast<int8_t>(raw)) : static_cast<int32_t>(raw) - 128;
    } else if (!b_signed) {
      zb = -128;
    }
    w.col_zp[static_cast<size_t>(j)] = zb;
    w.col_term[static_cast<size_t>(j)] =
        static_cast<int32_t>(static_cast<uint32_t>(k) * static_cast<uint32_t>(zb) - colsum);
  }
  return w;
}

std::unique_ptr<QGemmWeights> pack_constant_weights(const Tensor* b, const Tensor* zp, bool zp_given) {
  if (!b || b->rank() != 2) return nullptr;
  const int64_t k = b->shape()[0], n = b->shape()[1];
  if (zp_given && (!zp || zp->rank() > 2 || (zp->numel() != 1 && zp->numel() != n))) return nullptr;
  return std::make_unique<QGemmWeights>(pack_qgemm_weights(static_cast<const uint8_t*>(b->data()),
                                                           b->dtype() == DType::kI8, k, n,
                                                           zp ? static_cast<const uint8_t*>(zp->data()) : nullptr,
                                                           zp && zp->numel() > 1 ? 1 : 0));
}

void run_qgemm(const QGemmTable& table, const QGemmWeights& w, const QGemmA& a, const QGemmRequant* requant,
               void* c) {
  if (a.m == 0 || w.n == 0) return;
  const int64_t row_chunks = (a.m + kTaskRows - 1) / kTaskRows;
  const int64_t col_chunks = (w.num_panels + kTaskPanels - 1) / kTaskPanels;
  const int64_t task_macs = std::min(a.m, kTaskRows) * kTaskPanels * kQGemmPanelCols * std::max<int64_t>(w.k, 1);
  const int64_t grain = std::max<int64_t>(1, kMinChunkMacs / task_macs);
  const uint8_t a_xor = a.is_signed ? 0x80 : 0;
  threading::parallel_for(row_chunks * col_chunks, grain, [&](int64_t begin, int64_t end) {
    int32_t row_sum[kTaskRows], row_zp[kTaskRows];
    float mult[kTaskPanels * kQGemmPanelCols];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t col_chunk = t / row_chunks, row_chunk = t % row_chunks;
      const int64_t r0 = row_chunk * kTaskRows, rows = std::min(kTaskRows, a.m - r0);
      const int64_t p0 = col_chunk * kTaskPanels, panels = std::min(kTaskPanels, w.num_panels - p0);
      const int64_t c0 = p0 * kQGemmPanelCols, cols = std::min(panels * kQGemmPanelCols, w.n - c0);
      for (int64_t i = 0; i < rows; ++i) {
        const uint8_t* arow = a.data + (r0 + i) * w.k;
        row_sum[i] = table.row_sum(arow, w.k, a_xor);
        const uint8_t zp = a.zp ? a.zp[(r0 + i) * a.zp_stride] : 0;
        row_zp[i] = a.is_signed ? static_cast<int32_t>(static_cast<int8_t>(zp)) + 128 : static_cast<int32_t>(zp);
      }
      QGemmCall call;
      call.a = a.data + r0 * w.k;
      call.lda = w.k;
      call.a_xor = a_xor;
      call.m = rows;
      call.k = w.k;
      call.row_sum = row_sum;
      call.row_zp = row_zp;
      call.panels = static_cast<const int8_t*>(w.panels.data()) + p0 * w.panel_stride;
      call.panel_stride = w.panel_stride;
      call.num_panels = panels;
      call.n = cols;
      call.col_zp = w.col_zp.data() + c0;
      call.col_term = w.col_term.data() + c0;
      call.ldc = w.n;
      if (requant) {
        for (int64_t j = 0; j < panels * kQGemmPanelCols; ++j) {
          const int64_t col = std::min(c0 + j, w.n - 1);
          mult[j] = requant->a_scale * requant->b_scale[col * requant->b_scale_stride] / requant->y_scale;
        }
        call.q = static_cast<uint8_t*>(c) + r0 * w.n + c0;
        call.mult = mult;
        call.y_zp = requant->y_zp;
        call.y_signed = requant->y_signed;
      } else {
        call.c = static_cast<int32_t*>(c) + r0 * w.n + c0;
      }
      table.gemm(call);
    }
  });
}

}  // namespace ember::kernels::quant
