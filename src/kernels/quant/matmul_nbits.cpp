// com.microsoft MatMulNBits as ONNX Runtime's contrib-op spec defines it:
// Y[..., n] = sum_k A[..., k] * W[n, k] + bias[n], W dequantized block-wise from
// 4- or 8-bit codes, computed in f32 (f16 A: converted in, rounded once out).
// This is the reference path: it reads B in the file layout; accuracy_level is
// accepted and every level computes in f32.
#include <algorithm>
#include <memory>

#include "kernels/common/convert.h"
#include "kernels/quant/nbits_weights.h"
#include "kernels/quant/quant_ops.h"

namespace ember::kernels {
namespace {

using quant::kNBitsKChunk;
using quant::NBitsWeights;

enum Input : size_t { kA = 0, kB = 1, kScales = 2, kZeroPoints = 3, kGIdx = 4, kBias = 5, kNumInputs = 6 };
constexpr const char* kInputNames[kNumInputs] = {"A", "B", "scales", "zero_points", "g_idx", "bias"};

// Output columns computed per pass over a row of A: the f32 accumulators live on the stack.
constexpr int64_t kNTile = 64;

struct NBitsAttrs {
  int64_t k = 0, n = 0, block_size = 0;
  int bits = 4;
  int64_t k_blocks = 0, blob_size = 0, zp_row_bytes = 0;
};

bool shape_is(const Shape& s, std::initializer_list<int64_t> want) {
  return std::equal(s.begin(), s.end(), want.begin(), want.end());
}

// A per-(row, block) input may be stored flat [n * per_row] or as [n, per_row].
Status check_per_row(const KernelContext& ctx, size_t i, const NBitsAttrs& at, int64_t per_row) {
  const Tensor& t = ctx.input(i);
  if (shape_is(t.shape(), {at.n * per_row}) || shape_is(t.shape(), {at.n, per_row})) return Status::ok();
  return invalid_argument("input '{}' {} must have shape [{}] or [{}, {}] (N={}, K={}, block_size={}, bits={})",
                          kInputNames[i], t.describe(), at.n * per_row, at.n, per_row, at.n, at.k, at.block_size,
                          at.bits);
}

class MatMulNBitsKernel final : public OpKernel {
 public:
  MatMulNBitsKernel(NBitsAttrs attrs, DType a_dtype, DType zp_dtype) : at_(attrs), a_dtype_(a_dtype), zp_dtype_(zp_dtype) {}

  Status infer(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(kA);
    if (a.rank() < 1 || a.shape().back() != at_.k) {
      return invalid_argument("input 'A' {} must have last dimension K={}", a.describe(), at_.k);
    }
    const Tensor& b = ctx.input(kB);
    if (!shape_is(b.shape(), {at_.n, at_.k_blocks, at_.blob_size})) {
      return invalid_argument("input 'B' {} must have shape [N={}, k_blocks={}, blob_size={}] (K={}, block_size={}, bits={})",
                              b.describe(), at_.n, at_.k_blocks, at_.blob_size, at_.k, at_.block_size, at_.bits);
    }
    EMBER_RETURN_IF_ERROR(check_per_row(ctx, kScales, at_, at_.k_blocks));
    if (ctx.has_input(kZeroPoints)) {
      EMBER_RETURN_IF_ERROR(check_per_row(ctx, kZeroPoints, at_, zp_dtype_ == DType::kU8 ? at_.zp_row_bytes : at_.k_blocks));
    }
    if (ctx.has_input(kBias) && !shape_is(ctx.input(kBias).shape(), {at_.n})) {
      return invalid_argument("input 'bias' {} must have shape [N={}]", ctx.input(kBias).describe(), at_.n);
    }
    Shape out = a.shape();
    out.back() = at_.n;
    ctx.set_output(0, a_dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const NBitsWeights w = weights(ctx);
    const Tensor& a = ctx.input(kA);
    const int64_t m = a.numel() / at_.k;
    const void* bias = ctx.has_input(kBias) ? ctx.input(kBias).data() : nullptr;
    void* y = ctx.output(0).data();
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t n0 = 0; n0 < at_.n; n0 += kNTile) {
        compute_tile(w, a.data(), bias, row, n0, std::min(n0 + kNTile, at_.n), y);
      }
    }
    return Status::ok();
  }

 private:
  NBitsWeights weights(const KernelContext& ctx) const {
    NBitsWeights w;
    w.bits = at_.bits;
    w.n = at_.n;
    w.k = at_.k;
    w.block_size = at_.block_size;
    w.k_blocks = at_.k_blocks;
    w.blob_size = at_.blob_size;
    w.packed = ctx.input(kB).data_as<uint8_t>();
    w.scale_dtype = a_dtype_;
    w.scales = ctx.input(kScales).data();
    if (ctx.has_input(kZeroPoints)) {
      w.zp_dtype = zp_dtype_;
      w.zero_points = ctx.input(kZeroPoints).data();
      w.zp_row_bytes = at_.zp_row_bytes;
    }
    return w;
  }

  // Y[row, n0 .. n1) = A[row, :] . W[n0 .. n1, :]^T + bias, accumulated in f32
  // over K in chunks of kNBitsKChunk.
  void compute_tile(const NBitsWeights& w, const void* a, const void* bias, int64_t row, int64_t n0, int64_t n1,
                    void* y) const {
    const bool f16 = a_dtype_ == DType::kF16;
    const ConvertTable& cvt = convert_table();
    float acc[kNTile] = {};
    float a_chunk[kNBitsKChunk];
    float tail[kNTile];
    const int64_t cols = n1 - n0;
    for (int64_t k0 = 0; k0 < at_.k; k0 += kNBitsKChunk) {
      const int64_t k1 = std::min(k0 + kNBitsKChunk, at_.k);
      const float* a_f32 = static_cast<const float*>(a) + row * at_.k + k0;
      if (f16) {
        cvt.f16_to_f32(static_cast<const uint16_t*>(a) + row * at_.k + k0, a_chunk, k1 - k0);
        a_f32 = a_chunk;
      }
      quant::nbits_dot_f32_ref(w, a_f32, k0, k1, n0, n1, acc);
    }
    if (bias) {
      if (f16) {
        cvt.f16_to_f32(static_cast<const uint16_t*>(bias) + n0, tail, cols);
      } else {
        std::copy_n(static_cast<const float*>(bias) + n0, cols, tail);
      }
      for (int64_t j = 0; j < cols; ++j) acc[j] += tail[j];
    }
    if (f16) {
      cvt.f32_to_f16(acc, static_cast<uint16_t*>(y) + row * at_.n + n0, cols);
    } else {
      std::copy_n(acc, cols, static_cast<float*>(y) + row * at_.n + n0);
    }
  }

  NBitsAttrs at_;
  DType a_dtype_;
  DType zp_dtype_;
};

Result<NBitsAttrs> read_attrs(const ir::Node& node) {
  ir::AttrReader r(node);
  r.require("K");
  r.require("N");
  r.require("block_size");
  NBitsAttrs at;
  at.k = r.get_int("K", 0);
  at.n = r.get_int("N", 0);
  at.block_size = r.get_int("block_size", 0);
  const int64_t bits = r.get_int("bits", 4);
  const int64_t accuracy_level = r.get_int("accuracy_level", 0);
  EMBER_RETURN_IF_ERROR(r.status());
  if (at.k < 1 || at.n < 1) return invalid_argument("attributes K={} and N={} must be positive", at.k, at.n);
  if (bits != 4 && bits != 8) return not_implemented("bits={} is not supported (4 and 8 are)", bits);
  if (at.block_size < 16 || (at.block_size & (at.block_size - 1)) != 0) {
    return invalid_argument("block_size={} must be a power of 2 and at least 16", at.block_size);
  }
  if (accuracy_level < 0 || accuracy_level > 4) {
    return invalid_argument("accuracy_level={} must be in 0..4", accuracy_level);
  }
  at.bits = static_cast<int>(bits);
  at.k_blocks = (at.k + at.block_size - 1) / at.block_size;
  at.blob_size = at.block_size * at.bits / 8;
  at.zp_row_bytes = quant::nbits_zp_row_bytes(at.k_blocks, at.bits);
  return at;
}

DType input_dtype(const KernelInit& init, size_t i) {
  return i < init.input_dtypes.size() ? init.input_dtypes[i] : DType::kUndefined;
}

// Returns the dtype of zero_points (kUndefined when absent).
Result<DType> check_dtypes(const KernelInit& init) {
  if (init.input_dtypes.size() > kNumInputs) {
    return invalid_model("has {} inputs; MatMulNBits takes at most {}", init.input_dtypes.size(), size_t{kNumInputs});
  }
  for (size_t i : {kA, kB, kScales}) {
    if (input_dtype(init, i) == DType::kUndefined) return invalid_model("input '{}' is required", kInputNames[i]);
  }
  const DType a = input_dtype(init, kA);
  if (a != DType::kF32 && a != DType::kF16) {
    return not_implemented("input 'A' is {}; float32 and float16 are supported", dtype_name(a));
  }
  if (input_dtype(init, kB) != DType::kU8) {
    return not_implemented("input 'B' is {}; uint8 is supported", dtype_name(input_dtype(init, kB)));
  }
  if (input_dtype(init, kGIdx) != DType::kUndefined) return not_implemented("input 'g_idx' is not supported");
  for (size_t i : {kScales, kBias}) {
    const DType t = input_dtype(init, i);
    if (t != DType::kUndefined && t != a) {
      return invalid_argument("input '{}' is {} but input 'A' is {}", kInputNames[i], dtype_name(t), dtype_name(a));
    }
  }
  const DType zp = input_dtype(init, kZeroPoints);
  if (zp != DType::kUndefined && zp != DType::kU8 && zp != a) {
    return invalid_argument("input 'zero_points' is {}; it must be uint8 or A's dtype {}", dtype_name(zp), dtype_name(a));
  }
  return zp;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_matmul_nbits(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(DType zp_dtype, check_dtypes(init));
  EMBER_ASSIGN_OR_RETURN(NBitsAttrs attrs, read_attrs(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulNBitsKernel>(attrs, init.input_dtypes[kA], zp_dtype));
}

}  // namespace ember::kernels
