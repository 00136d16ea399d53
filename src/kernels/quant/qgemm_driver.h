#pragma once
// Integer GEMM over prepacked constant weights, shared by MatMulInteger and
// QLinearMatMul: packs B once (qgemm.h layout), then splits a product into
// tasks of up to 64 rows x 64 columns over the thread pool. Every output is an
// exact int32 sum (or a function of one), so the split never changes a bit.
#include <cstdint>
#include <memory>
#include <vector>

#include "base/buffer.h"
#include "base/tensor.h"
#include "kernels/quant/qgemm.h"

namespace ember::kernels::quant {

struct QGemmWeights {
  int64_t k = 0, n = 0;
  int64_t num_panels = 0, panel_stride = 0;
  AlignedBuffer panels;
  std::vector<int32_t> col_zp;    // num_panels * 16: zb after the u8 shift
  std::vector<int32_t> col_term;  // num_panels * 16: K * zb - colsum

  int64_t bytes() const {
    return static_cast<int64_t>(panels.size() + (col_zp.size() + col_term.size()) * sizeof(int32_t));
  }
};

// B is [k, n] row-major, int8 when b_signed else uint8. Zero points are read as
// b_zp[j * b_zp_stride] (stride 0: per tensor); null means 0.
QGemmWeights pack_qgemm_weights(const uint8_t* b, bool b_signed, int64_t k, int64_t n, const uint8_t* b_zp,
                                int64_t b_zp_stride);

// The packed form of a constant B [k, n] (u8 or s8) and its zero point, or null
// when they do not fit the packed path: B not constant or not 2-D, or a zero
// point that is given but not constant, or neither per tensor nor per column.
// `zp_given`: the node has a zero-point input (null `zp` then means run-time).
std::unique_ptr<QGemmWeights> pack_constant_weights(const Tensor* b, const Tensor* zp, bool zp_given);

// One A matrix [m, k] (int8 when is_signed), row stride k; zero point of row i at
// zp[i * zp_stride] (null: 0).
struct QGemmA {
  const uint8_t* data = nullptr;
  bool is_signed = false;
  int64_t m = 0;
  const uint8_t* zp = nullptr;
  int64_t zp_stride = 0;
};

// QLinearMatMul's output stage: column j is scaled by a_scale * b_scale[j *
// b_scale_stride] / y_scale, in that order in f32 (as ONNX Runtime computes it).
struct QGemmRequant {
  float a_scale = 1.0f, y_scale = 1.0f;
  const float* b_scale = nullptr;
  int64_t b_scale_stride = 0;
  int32_t y_zp = 0;
  bool y_signed = false;
};

// C [m, n] with row stride n: int32 when `requant` is null, else 8-bit.
void run_qgemm(const QGemmTable& table, const QGemmWeights& w, const QGemmA& a, const QGemmRequant* requant,
               void* c);

// The output stage of one value, as the microkernels compute it.
int32_t qgemm_requantize(int32_t acc, float mult, int32_t y_zp, bool y_signed);

}  // namespace ember::kernels::quant
