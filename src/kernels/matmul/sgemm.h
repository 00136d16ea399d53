#pragma once
// The f32 GEMM driver over the sgemm microkernels: B packing, cache blocking
// and threading. Every output element is summed in the same order whatever the
// thread count: threads split output tiles, never the K dimension.
#include <cstdint>

#include "base/buffer.h"
#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/sgemm_ukernels.h"

namespace ember::kernels::sgemm {

// Floats of op(B) [k, n] packed into panels of width nr (sgemm_ukernels.h).
int64_t packed_b_floats(int64_t k, int64_t n, int64_t nr);
// op(B) is B [k, n] with leading dimension ldb, or B^T when trans_b (B stored [n, k]).
void pack_b(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n, int64_t nr, float* out);

// Called once per finished block of C (rows [row0, row0 + rows), columns
// [col0, col0 + cols), one B panel wide, or all of C when k = 0) right after its last K block is
// stored, on the thread that computed it, while the block is in L1/L2: c points
// at element (row0, col0). It may rewrite the block in place; blocks never overlap.
struct Epilogue {
  void (*fn)(const void* ctx, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float* c, int64_t ldc) = nullptr;
  const void* ctx = nullptr;
};

// C [m, n] (leading dimension ldc) = alpha * op(A) * packed B, plus C's previous
// contents when accumulate (C is never read otherwise), then the epilogue.
struct PackedProblem {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  bool trans_a = false;  // A stored [k, m]
  const float* packed_b = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1.0f;
  bool accumulate = false;
  Epilogue epilogue;
};
void gemm_packed(const SgemmTable& t, const PackedProblem& p);

// GemmParams semantics (gemm_ref.h) with B unpacked. M = 1 without trans_b reads
// B's rows directly; otherwise B is packed into a thread-local buffer reused
// between calls.
void gemm(const SgemmTable& t, const GemmParams& p, const float* a, const float* b, float* c);

// A constant op(B) packed once, for kernels that prepack their weights.
class PackedWeight {
 public:
  PackedWeight() = default;
  PackedWeight(const SgemmTable& t, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);

  bool empty() const { return k_ < 0; }
  int64_t bytes() const { return static_cast<int64_t>(buffer_.size()); }
  // GemmParams semantics with this B (p.k and p.n must match it; p.ldb and p.trans_b are ignored).
  void gemm(const SgemmTable& t, const GemmParams& p, const float* a, float* c, const Epilogue& epilogue = {}) const;

 private:
  AlignedBuffer buffer_;
  int64_t k_ = -1, n_ = 0;
};

}  // namespace ember::kernels::sgemm
