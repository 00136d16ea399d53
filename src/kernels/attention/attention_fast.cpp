// attend()'s optimized path.
//
// Decode (every slice has at most kDecodeRows rows, or any rows when the spec is
// row-invariant or the slices paged): each (slice, row) splits its visible keys
// into chunks of kKeyChunk from its first visible key. One work item scores a
// chunk for all the slice's heads (each key row read once for the group), takes
// the chunk's max m, p = exp(score - m), l = sum p and acc = sum p v; a second
// pass merges the chunks of every row in chunk order
// (out = sum acc_c e^(m_c - M) / sum l_c e^(m_c - M)). Chunks are fixed by the
// row's own visible keys, so a row's result is the same for any thread count and
// whatever other rows share the call.
//
// Prompt (more rows): K^T and V of each slice are packed once into GEMM panels;
// a work item is one head and a block of kRowBlock rows: S = scale Q K^T over the
// keys the block can see (causal blocks stop at their diagonal), softmax per row
// in place, out = S V, then each row is divided by its sum.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "base/buffer.h"
#include "kernels/attention/attention_fast.h"
#include "kernels/attention/attention_ukernels.h"
#include "kernels/elementwise/unary_ukernels.h"
#include "kernels/matmul/sgemm.h"
#include "kernels/norm/row_ukernels.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

constexpr int64_t kDecodeRows = 4;
// Keys per decode work item: its scores (heads x 256 floats) stay in L1.
constexpr int64_t kKeyChunk = 256;
constexpr int64_t kRowBlock = 64;
// Decode partials held at once (4 MiB): long prompt chunks of a row-invariant
// call run in waves of rows instead of one buffer of rows x chunks partials; a
// wave still holds thousands of items.
constexpr int64_t kPartialFloats = int64_t{1} << 20;
// Multiply-adds a parallel_for range should hold before a second thread pays.
constexpr int64_t kMinParallelMacs = int64_t{1} << 16;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float* grow(AlignedBuffer& b, int64_t floats) {
  b.resize(static_cast<size_t>(floats) * sizeof(float));
  return static_cast<float*>(b.data());
}

thread_local AlignedBuffer t_scores;
thread_local AlignedBuffer t_partials;
thread_local AlignedBuffer t_packed;
thread_local std::vector<AttentionSlice> t_slices;
thread_local std::vector<int64_t> t_offsets;
thread_local std::vector<int64_t> t_rows_before;

struct Kernels {
  const AttentionTable& attn = attention_table();
  const RowTable& row = row_table();
  UnaryF32Fn tanh = unary_table().get(UnaryKind::kTanh);
  const sgemm::SgemmTable& gemm = sgemm::sgemm_table();
};

// Softcap and bias on scores of keys [first, first + n) of one row, in the spec's order.
void adjust_scores(const Kernels& kn, const AttentionSpec& spec, const float* bias, int64_t first, float* s, int64_t n) {
  auto cap = [&] {
    kn.row.scale(s, s, n, 1.0f / spec.softcap);
    kn.tanh(s, s, n, UnaryParams{});
    kn.row.scale(s, s, n, spec.softcap);
  };
  if (spec.softcap > 0 && !spec.softcap_after_bias) cap();
  if (bias) {
    for (int64_t t = 0; t < n; ++t) s[t] += bias[first + t];
  }
  if (spec.softcap > 0 && spec.softcap_after_bias) cap();
}

const float* row_bias(const AttentionSlice& s, int64_t h, int64_t r) {
  return s.bias ? s.bias + h * s.bias_head_stride + r * s.bias_row_stride : nullptr;
}

// p = exp(s - max) in place; returns {max, sum}. A row of only -inf becomes zeros.
std::pair<float, float> exp_row(const Kernels& kn, float* s, int64_t n) {
  const float m = kn.row.max(s, n);
  if (m == kNegInf || n == 0) {
    std::fill(s, s + n, 0.0f);
    return {kNegInf, 0.0f};
  }
  return {m, kn.row.exp_sum(s, s, n, m)};
}

// ---- decode ----

int64_t chunks_of(const AttentionSlice& s, int64_t r) {
  const int64_t len = slice_key_end(s, r) - slice_key_first(s, r);
  return std::max<int64_t>(1, (len + kKeyChunk - 1) / kKeyChunk);
}

// Keys [first, first + count) as runs of rows at a fixed stride, in key order:
// one run for a contiguous slice, one per block (adjacent blocks that are
// adjacent in memory joined) for a paged one, at most kKeyChunk. The *_runs
// microkernels give a run list the bits of one call over the rows in a row.
struct ChunkRuns {
  const float* k[kKeyChunk];
  const float* v[kKeyChunk];
  int64_t lengths[kKeyChunk];
  int64_t count = 0;
};

void chunk_runs(const AttentionSlice& s, int64_t first, int64_t count, ChunkRuns& runs) {
  if (!s.blocks) {
    runs.k[0] = s.k + first * s.k_row_stride;
    runs.v[0] = s.v + first * s.v_row_stride;
    runs.lengths[0] = count;
    runs.count = 1;
    return;
  }
  const int64_t br = s.block_rows, end = first + count;
  const bool joinable = s.k_block_stride == br * s.k_row_stride && s.v_block_stride == br * s.v_row_stride;
  runs.count = 0;
  for (int64_t t = first; t < end;) {
    int64_t run_end = std::min(end, (t / br + 1) * br);
    while (joinable && run_end < end && s.blocks[run_end / br] == s.blocks[run_end / br - 1] + 1) {
      run_end = std::min(end, run_end + br);
    }
    runs.k[runs.count] = slice_key(s, t);
    runs.v[runs.count] = slice_value(s, t);
    runs.lengths[runs.count++] = run_end - t;
    t = run_end;
  }
}

void decode_item(const Kernels& kn, const AttentionSpec& spec, const AttentionSlice& s, int64_t r, int64_t c,
                 float* partial, int64_t stride) {
  const int64_t first = slice_key_first(s, r) + c * kKeyChunk;
  const int64_t n = std::max<int64_t>(0, std::min(kKeyChunk, slice_key_end(s, r) - first));
  float* scores = grow(t_scores, s.heads * kKeyChunk);
  for (int64_t h = 0; h < s.heads; ++h) {
    float* ph = partial + h * stride;
    ph[0] = kNegInf;
    ph[1] = 0.0f;
    std::fill(ph + 2, ph + 2 + spec.v_head_size, 0.0f);
  }
  if (n == 0) return;
  ChunkRuns runs;  // 6 KiB on the stack, left uninitialized past count
  chunk_runs(s, first, n, runs);
  const KeyRows keys{runs.k, runs.lengths, runs.count, s.k_row_stride};
  kn.attn.f32_qk_runs(s.q + r * s.q_row_stride, s.q_head_stride, s.heads, &keys, spec.head_size, spec.scale, scores,
                      kKeyChunk);
  for (int64_t h = 0; h < s.heads; ++h) {
    float* row = scores + h * kKeyChunk;
    adjust_scores(kn, spec, row_bias(s, h, r), first, row, n);
    const auto [m, l] = exp_row(kn, row, n);
    partial[h * stride] = m;
    partial[h * stride + 1] = l;
  }
  const KeyRows values{runs.v, runs.lengths, runs.count, s.v_row_stride};
  kn.attn.f32_pv_runs(scores, kKeyChunk, s.heads, &values, spec.v_head_size, partial + 2, stride);
}

void decode_merge(const AttentionSpec& spec, const AttentionSlice& s, int64_t r, int64_t chunks, const float* partial,
                  int64_t item_floats, int64_t stride) {
  for (int64_t h = 0; h < s.heads; ++h) {
    float* out = s.out + h * s.out_head_stride + r * s.out_row_stride;
    float m = kNegInf;
    for (int64_t c = 0; c < chunks; ++c) m = std::max(m, partial[c * item_floats + h * stride]);
    const float sink = spec.smooth_softmax ? (s.sinks ? s.sinks[h] : 0.0f) : kNegInf;
    m = std::max(m, sink);
    std::fill(out, out + spec.v_head_size, 0.0f);
    if (m == kNegInf) continue;
    float sum = spec.smooth_softmax ? std::exp(sink - m) : 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* p = partial + c * item_floats + h * stride;
      if (p[0] == kNegInf) continue;
      const float w = std::exp(p[0] - m);
      sum += w * p[1];
      for (int64_t d = 0; d < spec.v_head_size; ++d) out[d] += w * p[2 + d];
    }
    const float inv = sum > 0 ? 1.0f / sum : 0.0f;
    for (int64_t d = 0; d < spec.v_head_size; ++d) out[d] *= inv;
  }
}

// The slice holding call row g (rows numbered across slices): the last i with
// rows_before[i] <= g, so slices without rows are skipped.
size_t slice_of_row(const std::vector<int64_t>& rows_before, int64_t g) {
  return static_cast<size_t>(std::upper_bound(rows_before.begin(), rows_before.end(), g) - rows_before.begin()) - 1;
}

void attend_decode(const Kernels& kn, const AttentionSpec& spec, std::span<const AttentionSlice> slices) {
  // Rows are numbered across the call: row g is row g - rows_before[i] of slice i.
  // offsets[g] is the first work item of row g, one per key chunk.
  std::vector<int64_t>& rows_before = t_rows_before;
  rows_before.assign(slices.size() + 1, 0);
  int64_t max_heads = 1;
  for (size_t i = 0; i < slices.size(); ++i) {
    rows_before[i + 1] = rows_before[i] + slices[i].rows;
    max_heads = std::max(max_heads, slices[i].heads);
  }
  const int64_t rows = rows_before.back();
  std::vector<int64_t>& offsets = t_offsets;
  offsets.assign(static_cast<size_t>(rows) + 1, 0);
  int64_t items = 0, macs = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const AttentionSlice& s = slices[i];
    for (int64_t r = 0; r < s.rows; ++r) {
      offsets[static_cast<size_t>(rows_before[i] + r)] = items;
      items += chunks_of(s, r);
      macs += (slice_key_end(s, r) - slice_key_first(s, r)) * s.heads * (spec.head_size + spec.v_head_size);
    }
  }
  offsets.back() = items;
  const int64_t stride = 2 + spec.v_head_size;
  const int64_t item_floats = max_heads * stride;
  const bool parallel = macs >= kMinParallelMacs;
  // Waves of whole rows whose partials fit kPartialFloats (at least one row each).
  for (int64_t g0 = 0; g0 < rows;) {
    int64_t g1 = g0 + 1;
    while (g1 < rows && (offsets[static_cast<size_t>(g1) + 1] - offsets[static_cast<size_t>(g0)]) * item_floats <=
                            kPartialFloats) {
      ++g1;
    }
    const int64_t item0 = offsets[static_cast<size_t>(g0)];
    const int64_t wave_items = offsets[static_cast<size_t>(g1)] - item0;
    float* partials = grow(t_partials, wave_items * item_floats);
    threading::parallel_for(wave_items, parallel ? 1 : std::max<int64_t>(wave_items, 1), [&](int64_t begin,
                                                                                             int64_t end) {
      auto g = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), item0 + begin) - offsets.begin()) - 1;
      size_t i = slice_of_row(rows_before, static_cast<int64_t>(g));
      for (int64_t it = item0 + begin; it < item0 + end; ++it) {
        while (offsets[g + 1] <= it) ++g;
        while (rows_before[i + 1] <= static_cast<int64_t>(g)) ++i;
        decode_item(kn, spec, slices[i], static_cast<int64_t>(g) - rows_before[i], it - offsets[g],
                    partials + (it - item0) * item_floats, stride);
      }
    });
    const int64_t wave_rows = g1 - g0;
    threading::parallel_for(wave_rows, parallel ? 1 : wave_rows, [&](int64_t begin, int64_t end) {
      for (int64_t g = g0 + begin; g < g0 + end; ++g) {
        const size_t i = slice_of_row(rows_before, g);
        const int64_t first = offsets[static_cast<size_t>(g)];
        decode_merge(spec, slices[i], g - rows_before[i], offsets[static_cast<size_t>(g) + 1] - first,
                     partials + (first - item0) * item_floats, item_floats, stride);
      }
    });
    g0 = g1;
  }
}

// ---- prompt ----

struct PackedSlice {
  const float* k = nullptr;  // K^T [head_size, keys] in panels of nr
  const float* v = nullptr;  // V [keys, v_head_size] in panels of nr
};

void prompt_item(const Kernels& kn, const AttentionSpec& spec, const AttentionSlice& s, const PackedSlice& pk,
                 int64_t h, int64_t r0) {
  const int64_t nr = kn.gemm.nr;
  const int64_t rows = std::min(kRowBlock, s.rows - r0);
  const int64_t k0 = slice_key_first(s, r0) / nr * nr;
  int64_t k1 = 0;
  for (int64_t r = r0; r < r0 + rows; ++r) k1 = std::max(k1, slice_key_end(s, r));
  float* out = s.out + h * s.out_head_stride + r0 * s.out_row_stride;
  if (k1 <= k0) {
    for (int64_t r = 0; r < rows; ++r) std::fill(out + r * s.out_row_stride, out + r * s.out_row_stride + spec.v_head_size, 0.0f);
    return;
  }
  const int64_t n = k1 - k0;
  float* scores = grow(t_scores, rows * n + rows);
  float* inv = scores + rows * n;
  sgemm::PackedProblem qk;
  qk.m = rows;
  qk.n = n;
  qk.k = spec.head_size;
  qk.a = s.q + h * s.q_head_stride + r0 * s.q_row_stride;
  qk.lda = s.q_row_stride;
  qk.packed_b = pk.k + k0 / nr * spec.head_size * nr;
  qk.c = scores;
  qk.ldc = n;
  qk.alpha = spec.scale;
  sgemm::gemm_packed(kn.gemm, qk);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores + r * n;
    const int64_t first = slice_key_first(s, r0 + r), end = slice_key_end(s, r0 + r);
    std::fill(row, row + std::max<int64_t>(0, first - k0), 0.0f);
    std::fill(row + std::max<int64_t>(0, end - k0), row + n, 0.0f);
    if (end <= first) {
      inv[r] = 0.0f;
      continue;
    }
    float* vis = row + (first - k0);
    adjust_scores(kn, spec, row_bias(s, h, r0 + r), first, vis, end - first);
    float m = kn.row.max(vis, end - first);
    const float sink = spec.smooth_softmax ? (s.sinks ? s.sinks[h] : 0.0f) : kNegInf;
    m = std::max(m, sink);
    if (m == kNegInf) {
      std::fill(vis, vis + (end - first), 0.0f);
      inv[r] = 0.0f;
      continue;
    }
    float sum = kn.row.exp_sum(vis, vis, end - first, m);
    if (spec.smooth_softmax) sum += std::exp(sink - m);
    inv[r] = sum > 0 ? 1.0f / sum : 0.0f;
  }
  for (int64_t p0 = 0; p0 < spec.v_head_size; p0 += nr) {
    sgemm::PackedProblem pv;
    pv.m = rows;
    pv.n = std::min(nr, spec.v_head_size - p0);
    pv.k = n;
    pv.a = scores;
    pv.lda = n;
    pv.packed_b = pk.v + p0 * s.keys + k0 * nr;
    pv.c = out + p0;
    pv.ldc = s.out_row_stride;
    sgemm::gemm_packed(kn.gemm, pv);
  }
  for (int64_t r = 0; r < rows; ++r) kn.row.scale(out + r * s.out_row_stride, out + r * s.out_row_stride, spec.v_head_size, inv[r]);
}

void attend_prompt(const Kernels& kn, const AttentionSpec& spec, std::span<const AttentionSlice> slices) {
  const int64_t nr = kn.gemm.nr;
  std::vector<int64_t>& offsets = t_offsets;  // packed floats, then row-block items, per slice
  offsets.assign(2 * slices.size() + 2, 0);
  for (size_t i = 0; i < slices.size(); ++i) {
    const AttentionSlice& s = slices[i];
    offsets[i + 1] = offsets[i] + sgemm::packed_b_floats(spec.head_size, s.keys, nr) +
                     sgemm::packed_b_floats(s.keys, spec.v_head_size, nr);
  }
  const size_t items_at = slices.size() + 1;
  for (size_t i = 0; i < slices.size(); ++i) {
    const AttentionSlice& s = slices[i];
    offsets[items_at + i + 1] = offsets[items_at + i] + s.heads * ((s.rows + kRowBlock - 1) / kRowBlock);
  }
  float* packed = grow(t_packed, offsets[slices.size()]);
  threading::parallel_for(static_cast<int64_t>(slices.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const AttentionSlice& s = slices[static_cast<size_t>(i)];
      float* kp = packed + offsets[static_cast<size_t>(i)];
      sgemm::pack_b(s.k, s.k_row_stride, true, spec.head_size, s.keys, nr, kp);
      sgemm::pack_b(s.v, s.v_row_stride, false, s.keys, spec.v_head_size, nr,
                    kp + sgemm::packed_b_floats(spec.head_size, s.keys, nr));
    }
  });
  const int64_t items = offsets[items_at + slices.size()];
  threading::parallel_for(items, 1, [&](int64_t begin, int64_t end) {
    for (int64_t it = begin; it < end; ++it) {
      const auto first = offsets.begin() + static_cast<std::ptrdiff_t>(items_at);
      const auto i = static_cast<size_t>(std::upper_bound(first, offsets.end(), it) - first) - 1;
      const AttentionSlice& s = slices[i];
      const int64_t local = it - offsets[items_at + i];
      const int64_t blocks = (s.rows + kRowBlock - 1) / kRowBlock;
      const float* kp = packed + offsets[i];
      const PackedSlice pk{kp, kp + sgemm::packed_b_floats(spec.head_size, s.keys, nr)};
      prompt_item(kn, spec, s, pk, local / blocks, local % blocks * kRowBlock);
    }
  });
}

}  // namespace

void attend_fast(const AttentionSpec& spec, int64_t count, threading::FunctionRef<AttentionSlice(int64_t)> slice) {
  static const Kernels kernels;
  std::vector<AttentionSlice>& slices = t_slices;
  slices.clear();
  int64_t max_rows = 0;
  bool paged = false;
  for (int64_t i = 0; i < count; ++i) {
    slices.push_back(slice(i));
    max_rows = std::max(max_rows, slices.back().rows);
    paged = paged || slices.back().blocks;
  }
  if (max_rows <= kDecodeRows || spec.row_invariant || paged) {
    attend_decode(kernels, spec, slices);
  } else {
    attend_prompt(kernels, spec, slices);
  }
}

}  // namespace ember::kernels::attention
