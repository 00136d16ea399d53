#include "kernels/matmul/sgemm.h"

#include <algorithm>

#include "threading/scratch.h"
#include "threading/thread_pool.h"

namespace ember::kernels::sgemm {
namespace {

// A B micro-panel of kKc x 32 floats (32 KiB) stays in the 48 KiB L1D while
// every row tile of an A block passes over it; a K block of the A block, kMc x
// kKc floats (144 KiB), stays in the 1 MiB L2 while the panels of a group pass.
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 144;
// Multiply-adds one parallel_for range must hold to be worth a thread. Measured
// with ember_ab on single-MatMul models, every range split (1 vs 2 threads, p50
// of 5 rounds, noisy shared machine): 1x1024x1024 (1 Mi MACs) 61 -> 46 us,
// 1x512x1024 24 -> 29 us, 1x256x1024 14 -> 13 us, 16x256x256 (1 Mi) 20 -> 23 us:
// a second thread pays off from about 1 Mi MACs, i.e. 512 Ki per range.
constexpr int64_t kMinRangeMacs = int64_t{1} << 19;

// An A block of up to 640 KiB fits the L2 beside a B panel: K is then not
// blocked at all and each C tile is written once. Measured with ember_ab, 1
// thread, ours/ORT p50 of 5 rounds: qwen0.5b.up 128x896x4864 1.22 -> 0.95,
// 512x896x4864 1.19 -> 1.00 (K blocks of 256 with C held in L2 by panel
// groups instead: 1.00 and 1.05).
constexpr int64_t kFullKFloats = 160 * 1024;
// Deeper A blocks are packed whole (up to 2 MiB, K = 3972 at 132 rows) and the
// panels taken in groups whose C columns (kCBlockFloats, 128 KiB) stay in L2
// across the K blocks, instead of one sweep of all panels per K block that
// sent C back to L3 for every K block. Measured as above: llama1b.up 128 and
// 512 x2048x8192 1.00, 1.04 -> 0.94, 0.94; phi3mini.up 128 and 512 x3072x8192
// 1.00, 1.02 -> 0.94, 0.92 (64 Ki-float groups: the same within noise).
constexpr int64_t kMaxPackedAFloats = int64_t{1} << 19;
constexpr int64_t kCBlockFloats = 32 * 1024;

// The A blocks a range packs: held by every thread at the largest size any
// thread has packed, since whichever thread runs a range must not allocate
// after the first run (threading/scratch.h).
const threading::ScratchId kAPack = threading::new_scratch_id();
// Packed B for a B that is not a prepacked weight: grown on first use per
// thread, then reused. gemm() packs it on the calling thread before its
// parallel_for.
thread_local AlignedBuffer t_b_pack;

struct Blocking {
  int64_t mc = 0;        // rows of one A block (a multiple of mr unless it is all of M)
  int64_t m_blocks = 0;
  int64_t panels = 0;
  int64_t kc = 0;        // depth of one K block
  // The A block is packed for all of K at once, its K blocks one after another,
  // so that panels can be taken `group` at a time through every K block.
  bool pack_all_k = false;
  int64_t group = 0;
};

Blocking choose_blocking(const SgemmTable& t, const PackedProblem& p) {
  Blocking b;
  b.panels = (p.n + t.nr - 1) / t.nr;
  if (p.m <= kMc) {
    b.mc = p.m;
  } else {
    const int64_t blocks = (p.m + kMc - 1) / kMc;
    b.mc = ((p.m + blocks - 1) / blocks + t.mr - 1) / t.mr * t.mr;
  }
  b.m_blocks = (p.m + b.mc - 1) / b.mc;
  // One row tile per panel reuses no B micro-panel: K is then blocked only as
  // far as the A buffer requires, so a panel streams as one run (GEMV).
  if (b.mc == 1 && !p.trans_a) {
    b.kc = p.k;
  } else if (b.mc * p.k <= kFullKFloats) {
    b.kc = p.k;
  } else if (b.mc <= t.mr) {
    b.kc = std::min(p.k, kMc * kKc / b.mc);
  } else {
    b.kc = std::min(p.k, kKc);
  }
  b.pack_all_k = b.kc < p.k && b.mc > 1 && b.mc * p.k <= kMaxPackedAFloats;
  b.group = b.pack_all_k ? std::max<int64_t>(1, kCBlockFloats / (b.mc * t.nr)) : b.panels;
  return b;
}

// Rows [i0, i0 + rows) and depths [k0, k0 + kc) of op(A) as micro-blocks of
// up to mr rows, each k-major.
void pack_a(const PackedProblem& p, int64_t mr, int64_t i0, int64_t rows, int64_t k0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < rows; ir += mr) {
    const int64_t count = std::min(mr, rows - ir);
    float* dst = out + ir * kc;
    if (p.trans_a) {
      for (int64_t kk = 0; kk < kc; ++kk) {
        const float* src = p.a + (k0 + kk) * p.lda + i0 + ir;
        for (int64_t r = 0; r < count; ++r) dst[kk * count + r] = src[r];
      }
    } else {
      for (int64_t r = 0; r < count; ++r) {
        const float* src = p.a + (i0 + ir + r) * p.lda + k0;
        for (int64_t kk = 0; kk < kc; ++kk) dst[kk * count + r] = src[kk];
      }
    }
  }
}

// Units [begin, end) of the (A block, B panel) grid, A block major.
void run_units(const SgemmTable& t, const PackedProblem& p, const Blocking& bl, int64_t begin, int64_t end) {
  const size_t a_bytes = static_cast<size_t>(bl.mc * (bl.pack_all_k ? p.k : bl.kc)) * sizeof(float);
  float* const a_pack = static_cast<float*>(threading::scratch(kAPack, a_bytes));
  for (int64_t u = begin; u < end;) {
    const int64_t mb = u / bl.panels;
    const int64_t q0 = u % bl.panels;
    const int64_t q1 = std::min(bl.panels, q0 + (end - u));
    const int64_t i0 = mb * bl.mc, rows = std::min(bl.mc, p.m - i0);
    const bool direct = rows == 1 && !p.trans_a;
    if (bl.pack_all_k && !direct) {
      for (int64_t k0 = 0; k0 < p.k; k0 += bl.kc) {
        pack_a(p, t.mr, i0, rows, k0, std::min(bl.kc, p.k - k0), a_pack + rows * k0);
      }
    }
    for (int64_t g0 = q0; g0 < q1; g0 += bl.group) {
      const int64_t g1 = std::min(q1, g0 + bl.group);
      for (int64_t k0 = 0; k0 < p.k; k0 += bl.kc) {
        const int64_t kc = std::min(bl.kc, p.k - k0);
        const float* a_block = a_pack + (bl.pack_all_k ? rows * k0 : 0);
        if (direct) {
          a_block = p.a + i0 * p.lda + k0;
        } else if (!bl.pack_all_k) {
          pack_a(p, t.mr, i0, rows, k0, kc, a_pack);
        }
        const bool accumulate = p.accumulate || k0 > 0;
        for (int64_t q = g0; q < g1; ++q) {
          const float* b_panel = p.packed_b + q * p.k * t.nr + k0 * t.nr;
          const int64_t j0 = q * t.nr, cols = std::min(t.nr, p.n - j0);
          for (int64_t ir = 0; ir < rows; ir += t.mr) {
            t.tile(kc, a_block + ir * kc, b_panel, p.c + (i0 + ir) * p.ldc + j0, p.ldc, std::min(t.mr, rows - ir),
                   cols, p.alpha, accumulate);
          }
          if (p.epilogue.fn != nullptr && k0 + kc == p.k) {
            p.epilogue.fn(p.epilogue.ctx, i0, rows, j0, cols, p.c + i0 * p.ldc + j0, p.ldc);
          }
        }
      }
    }
    u += q1 - q0;
  }
}

// Applies beta to C ahead of an accumulating product; returns whether the
// product accumulates into C.
bool apply_beta(const GemmParams& p, float* c) {
  if (p.beta == 0.0f) return false;
  if (p.beta != 1.0f) {
    for (int64_t i = 0; i < p.m; ++i) {
      float* row = c + i * p.ldc;
      for (int64_t j = 0; j < p.n; ++j) row[j] *= p.beta;
    }
  }
  return true;
}

// One row of A against row-major B, threads splitting the columns.
void gemv_rows(const SgemmTable& t, const GemmParams& p, const float* a, const float* b, float* c, bool accumulate) {
  constexpr int64_t kStrip = 64;  // the widest strip of the gemv_rows microkernels
  const int64_t macs_per_strip = std::max<int64_t>(1, p.k * kStrip);
  const int64_t grain = (kMinRangeMacs + macs_per_strip - 1) / macs_per_strip * kStrip;
  threading::parallel_for(p.n, grain, [&](int64_t begin, int64_t end) {
    t.gemv_rows(p.k, a, b + begin, p.ldb, c + begin, end - begin, p.alpha, accumulate);
  });
}

}  // namespace

int64_t packed_b_floats(int64_t k, int64_t n, int64_t nr) { return (n + nr - 1) / nr * nr * k; }

void pack_b(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n, int64_t nr, float* out) {
  const int64_t panels = (n + nr - 1) / nr;
  for (int64_t q = 0; q < panels; ++q) {
    float* panel = out + q * k * nr;
    const int64_t j0 = q * nr, cols = std::min(nr, n - j0);
    for (int64_t kk = 0; kk < k; ++kk) {
      float* dst = panel + kk * nr;
      if (!trans_b) {
        const float* src = b + kk * ldb + j0;
        for (int64_t j = 0; j < cols; ++j) dst[j] = src[j];
      } else {
        for (int64_t j = 0; j < cols; ++j) dst[j] = b[(j0 + j) * ldb + kk];
      }
      for (int64_t j = cols; j < nr; ++j) dst[j] = 0.0f;
    }
  }
}

void gemm_packed(const SgemmTable& t, const PackedProblem& p) {
  if (p.m <= 0 || p.n <= 0) return;
  if (p.k == 0) {
    if (!p.accumulate) {
      for (int64_t i = 0; i < p.m; ++i) std::fill_n(p.c + i * p.ldc, p.n, 0.0f);
    }
    if (p.epilogue.fn != nullptr) p.epilogue.fn(p.epilogue.ctx, 0, p.m, 0, p.n, p.c, p.ldc);
    return;
  }
  const Blocking bl = choose_blocking(t, p);
  const int64_t macs_per_unit = bl.mc * p.k * t.nr;
  const int64_t grain = (kMinRangeMacs + macs_per_unit - 1) / macs_per_unit;
  threading::parallel_for(bl.m_blocks * bl.panels, grain,
                          [&](int64_t begin, int64_t end) { run_units(t, p, bl, begin, end); });
}

void gemm(const SgemmTable& t, const GemmParams& p, const float* a, const float* b, float* c) {
  if (p.m <= 0 || p.n <= 0) return;
  const bool accumulate = apply_beta(p, c);
  const bool a_contiguous = !p.trans_a || p.lda == 1;
  if (p.m == 1 && !p.trans_b && a_contiguous && p.k > 0) {
    gemv_rows(t, p, a, b, c, accumulate);
    return;
  }
  const int64_t floats = packed_b_floats(p.k, p.n, t.nr);
  t_b_pack.resize(static_cast<size_t>(floats) * sizeof(float));
  float* packed = static_cast<float*>(t_b_pack.data());
  pack_b(b, p.ldb, p.trans_b, p.k, p.n, t.nr, packed);
  gemm_packed(t, {p.m, p.n, p.k, a, p.lda, p.trans_a, packed, c, p.ldc, p.alpha, accumulate, {}});
}

PackedWeight::PackedWeight(const SgemmTable& t, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n)
    : k_(k), n_(n) {
  buffer_.resize(std::max<int64_t>(1, packed_b_floats(k, n, t.nr)) * sizeof(float));
  pack_b(b, ldb, trans_b, k, n, t.nr, static_cast<float*>(buffer_.data()));
}

void PackedWeight::gemm(const SgemmTable& t, const GemmParams& p, const float* a, float* c,
                        const Epilogue& epilogue) const {
  if (p.m <= 0 || p.n <= 0) return;
  const bool accumulate = apply_beta(p, c);
  gemm_packed(t, {p.m, p.n, p.k, a, p.lda, p.trans_a, static_cast<const float*>(buffer_.data()), c, p.ldc, p.alpha,
                  accumulate, epilogue});
}

}  // namespace ember::kernels::sgemm
