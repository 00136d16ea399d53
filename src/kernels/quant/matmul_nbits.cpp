// com.microsoft MatMulNBits as ONNX Runtime's contrib-op spec defines it:
// Y[..., n] = sum_k A[..., k] * W[n, k] + bias[n], W dequantized block-wise from
// 4- or 8-bit codes, computed in f32 (f16 A: converted in, rounded once out).
// 4-bit B with f32 A, B, scales and zero points constant: B is repacked at
// creation into column tiles (nbits_ukernels.h) and run by the ISA's microkernel,
// threads over tiles. Otherwise the reference path reads B in the file layout.
// accuracy_level 4 (with integer zero points) quantizes A to int8 per row and
// block as ONNX Runtime does and sums exact int32 products (both paths give the
// same bits); everything else computes in f32.
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/common/convert.h"
#include "kernels/quant/nbits_ukernels.h"
#include "kernels/quant/nbits_weights.h"
#include "kernels/quant/quant_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

using quant::kNBitsKChunk;
using quant::kNBitsTileCols;
using quant::NBitsPacked;
using quant::NBitsWeights;

enum Input : size_t { kA = 0, kB = 1, kScales = 2, kZeroPoints = 3, kGIdx = 4, kBias = 5, kNumInputs = 6 };
constexpr const char* kInputNames[kNumInputs] = {"A", "B", "scales", "zero_points", "g_idx", "bias"};

// Output columns computed per pass over a row of A: the f32 accumulators live on the stack.
constexpr int64_t kNTile = 64;
// Packed path: column tiles a microkernel call covers before moving to the next
// row of A, so M > 1 rereads them from L2 (64 columns x K = 4096, block 32: 168 KiB).
constexpr int64_t kRowReuseTiles = 4;
// Column tiles per thread range: one kRowReuseTiles group, so ranges keep the
// microkernel's four-tile path. Measured with a /tmp timing loop over
// kernels::evaluate (M=1, block 32, best of 7 runs, 2 threads / 1 thread):
// grain 4 gives 0.60 at K=896 N=128 (5.9 us), 0.52 at N=1024, and 0.54 at
// K=4096 N=128; grain 1 gave 1.10 and 0.52 at K=896 N=128 and 1024; a grain of
// 2^16 MACs (5 tiles at K=896) 1.03 and 0.63: ranges off the four-tile groups run
// slower single-tile calls.
constexpr int64_t kTileGrain = kRowReuseTiles;
// Rows of A from which the f32 path dequantizes weights once into panels
// shared by the rows (f32_q4_gemm) instead of decoding them per row.
constexpr int64_t kPanelRows = 4;
// Decode (M = 1) at accuracy_level 4 runs on one thread below this many weight
// bytes, else splits tile by tile (grain 1: even ranges for any tile count;
// 64 KiB ranges left 72 tiles as 21+21+21+9). /tmp loop over cold copies of
// K = 896 weights, best of 41 passes, 2 threads against 1: N = 512 (0.29 MB)
// 8.4-9.0 against 8.9-9.1 us, N = 768 (0.43 MB) 12.2-14.2 against 13.4-13.6 us,
// N = 896 (0.5 MB) 13.6 against 16.9 us.
constexpr int64_t kDecodeSplitBytes = 384 << 10;
// Rows of A per thread range when quantizing A for accuracy_level 4.
constexpr int64_t kQuantizeRowGrain = 16;


struct NBitsAttrs {
  int64_t k = 0, n = 0, block_size = 0;
  int bits = 4;
  // accuracy_level 4 with integer zero points. ONNX Runtime computes float zero
  // points in f32 at every level (its int8 path takes uint8 zero points only;
  // checked against it in tests/ort/matmul_nbits_ort_test.cpp), and so do we.
  bool int8_activations = false;
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

// Shapes of B, scales and zero points (when given).
Status check_weight_shapes(const KernelContext& ctx, const NBitsAttrs& at, DType zp_dtype) {
  const Tensor& b = ctx.input(kB);
  if (!shape_is(b.shape(), {at.n, at.k_blocks, at.blob_size})) {
    return invalid_argument("input 'B' {} must have shape [N={}, k_blocks={}, blob_size={}] (K={}, block_size={}, bits={})",
                            b.describe(), at.n, at.k_blocks, at.blob_size, at.k, at.block_size, at.bits);
  }
  EMBER_RETURN_IF_ERROR(check_per_row(ctx, kScales, at, at.k_blocks));
  if (ctx.has_input(kZeroPoints)) {
    EMBER_RETURN_IF_ERROR(check_per_row(ctx, kZeroPoints, at, zp_dtype == DType::kU8 ? at.zp_row_bytes : at.k_blocks));
  }
  return Status::ok();
}

NBitsWeights weights_of(const KernelContext& ctx, const NBitsAttrs& at, DType scale_dtype, DType zp_dtype) {
  NBitsWeights w;
  w.bits = at.bits;
  w.n = at.n;
  w.k = at.k;
  w.block_size = at.block_size;
  w.k_blocks = at.k_blocks;
  w.blob_size = at.blob_size;
  w.packed = ctx.input(kB).data_as<uint8_t>();
  w.scale_dtype = scale_dtype;
  w.scales = ctx.input(kScales).data();
  if (ctx.has_input(kZeroPoints)) {
    w.zp_dtype = zp_dtype;
    w.zero_points = ctx.input(kZeroPoints).data();
    w.zp_row_bytes = at.zp_row_bytes;
  }
  return w;
}

class MatMulNBitsKernel final : public OpKernel {
 public:
  MatMulNBitsKernel(NBitsAttrs attrs, DType a_dtype, DType zp_dtype, std::unique_ptr<NBitsPacked> packed)
      : at_(attrs), a_dtype_(a_dtype), zp_dtype_(zp_dtype), packed_(std::move(packed)),
        ukernels_(&quant::nbits_table()) {}

  int64_t packed_bytes() const override { return packed_ ? static_cast<int64_t>(packed_->bytes.size()) : 0; }
  bool prepacked_input(size_t i) const override {
    return packed_ && (i == kB || i == kScales || i == kZeroPoints);
  }

  Status infer(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(kA);
    if (a.rank() < 1 || a.shape().back() != at_.k) {
      return invalid_argument("input 'A' {} must have last dimension K={}", a.describe(), at_.k);
    }
    EMBER_RETURN_IF_ERROR(check_weight_shapes(ctx, at_, zp_dtype_));
    if (ctx.has_input(kBias) && !shape_is(ctx.input(kBias).shape(), {at_.n})) {
      return invalid_argument("input 'bias' {} must have shape [N={}]", ctx.input(kBias).describe(), at_.n);
    }
    Shape out = a.shape();
    out.back() = at_.n;
    ctx.set_output(0, a_dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const int64_t m = ctx.input(kA).numel() / at_.k;
    if (m == 0) return Status::ok();
    if (packed_) {
      if (at_.int8_activations) {
        run_packed_q8(ctx, m);
      } else {
        run_packed(ctx, m);
      }
      return Status::ok();
    }
    const NBitsWeights w = weights_of(ctx, at_, a_dtype_, zp_dtype_);
    const Tensor& a = ctx.input(kA);
    const void* bias = ctx.has_input(kBias) ? ctx.input(kBias).data() : nullptr;
    void* y = ctx.output(0).data();
    for (int64_t row = 0; row < m; ++row) {
      if (at_.int8_activations) quantize_row(a.data(), row);
      for (int64_t n0 = 0; n0 < at_.n; n0 += kNTile) {
        compute_tile(w, a.data(), bias, row, n0, std::min(n0 + kNTile, at_.n), y);
      }
    }
    return Status::ok();
  }

 private:
  // Rows of A quantized for accuracy_level 4, reused across runs on a thread.
  struct Q8Rows {
    std::vector<int8_t> q;
    std::vector<float> scales, a_f32;
    std::vector<int32_t> sums;
  };
  static Q8Rows& q8_rows(int64_t rows, const quant::NBitsPackedGeometry& g) {
    thread_local Q8Rows r;
    const auto grow = [](auto& v, int64_t size) {
      if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
    };
    grow(r.q, rows * g.k_blocks * g.block_size);
    grow(r.scales, rows * g.k_blocks);
    grow(r.sums, rows * g.k_blocks);
    grow(r.a_f32, g.k);
    return r;
  }

  quant::NBitsPackedGeometry row_geometry() const {
    quant::NBitsPackedGeometry g;
    g.k = at_.k;
    g.block_size = at_.block_size;
    g.k_blocks = at_.k_blocks;
    return g;
  }

  // Reference path: row `row` of A (f16 converted) into this thread's Q8Rows.
  void quantize_row(const void* a, int64_t row) const {
    const quant::NBitsPackedGeometry g = row_geometry();
    Q8Rows& r = q8_rows(1, g);
    const float* a_f32 = static_cast<const float*>(a) + row * at_.k;
    if (a_dtype_ == DType::kF16) {
      convert_table().f16_to_f32(static_cast<const uint16_t*>(a) + row * at_.k, r.a_f32.data(), at_.k);
      a_f32 = r.a_f32.data();
    }
    ukernels_->quantize_rows_q8(a_f32, at_.k, 1, g, r.q.data(), r.scales.data(), r.sums.data());
  }

  // f32 A over the packed tiles: threads split the column tiles, so every
  // output sums in the same order for any thread count.
  void run_packed(KernelContext& ctx, int64_t m) const {
    const float* a = ctx.input(kA).data_as<float>();
    const float* bias = ctx.has_input(kBias) ? ctx.input(kBias).data_as<float>() : nullptr;
    float* y = ctx.output(0).data_as<float>();
    const quant::NBitsPackedGeometry& g = packed_->geometry;
    const uint8_t* tiles = static_cast<const uint8_t*>(packed_->bytes.data());
    const int64_t num_tiles = (at_.n + kNBitsTileCols - 1) / kNBitsTileCols;
    threading::parallel_for(num_tiles, kTileGrain, [&](int64_t t_begin, int64_t t_end) {
      for (int64_t t0 = t_begin; t0 < t_end; t0 += kRowReuseTiles) {
        const int64_t col = t0 * kNBitsTileCols;
        const int64_t cols = std::min(std::min(t_end, t0 + kRowReuseTiles) * kNBitsTileCols, at_.n) - col;
        const uint8_t* group = tiles + t0 * g.tile_bytes;
        const float* group_bias = bias ? bias + col : nullptr;
        if (m >= kPanelRows) {
          ukernels_->f32_q4_gemm(a, at_.k, m, group, g, cols, group_bias, y + col, at_.n);
          continue;
        }
        for (int64_t row = 0; row < m; ++row) {
          ukernels_->f32_q4_gemv(a + row * at_.k, group, g, cols, group_bias, y + row * at_.n + col);
        }
      }
    });
  }

  // accuracy_level 4 over the packed tiles: rows of A quantized first (threads
  // over rows), then threads over column tiles, each running every row over
  // its kRowReuseTiles tiles while they sit in L2.
  void run_packed_q8(KernelContext& ctx, int64_t m) const {
    const float* a = ctx.input(kA).data_as<float>();
    const float* bias = ctx.has_input(kBias) ? ctx.input(kBias).data_as<float>() : nullptr;
    float* y = ctx.output(0).data_as<float>();
    const quant::NBitsPackedGeometry& g = packed_->geometry;
    const uint8_t* tiles = static_cast<const uint8_t*>(packed_->bytes.data());
    const int64_t num_tiles = (at_.n + kNBitsTileCols - 1) / kNBitsTileCols;
    Q8Rows& r = q8_rows(m, g);
    const int64_t padded = g.k_blocks * g.block_size;
    threading::parallel_for(m, kQuantizeRowGrain, [&](int64_t r_begin, int64_t r_end) {
      ukernels_->quantize_rows_q8(a + r_begin * at_.k, at_.k, r_end - r_begin, g, r.q.data() + r_begin * padded,
                                  r.scales.data() + r_begin * g.k_blocks, r.sums.data() + r_begin * g.k_blocks);
    });
    const quant::NBitsQ8Rows rows{r.q.data(), r.scales.data(), r.sums.data()};
    // Decode reads each thread's range of tiles as one stream: one call per range.
    const int64_t group = m == 1 ? num_tiles : kRowReuseTiles;
    const int64_t grain = m > 1 ? kRowReuseTiles : num_tiles * g.tile_bytes < kDecodeSplitBytes ? num_tiles : 1;
    threading::parallel_for(num_tiles, grain, [&](int64_t t_begin, int64_t t_end) {
      for (int64_t t0 = t_begin; t0 < t_end; t0 += group) {
        const int64_t col = t0 * kNBitsTileCols;
        const int64_t cols = std::min(std::min(t_end, t0 + group) * kNBitsTileCols, at_.n) - col;
        ukernels_->q8_q4_gemm(rows, m, tiles + t0 * g.tile_bytes, g, cols, bias ? bias + col : nullptr, y + col,
                              at_.n);
      }
    });
  }

  // Y[row, n0 .. n1) = A[row, :] . W[n0 .. n1, :]^T + bias: accumulated in f32
  // over K in chunks of kNBitsKChunk, or (accuracy_level 4) from the bias over
  // the row quantize_row left in this thread's Q8Rows.
  void compute_tile(const NBitsWeights& w, const void* a, const void* bias, int64_t row, int64_t n0, int64_t n1,
                    void* y) const {
    const bool f16 = a_dtype_ == DType::kF16;
    const ConvertTable& cvt = convert_table();
    float acc[kNTile] = {};
    const int64_t cols = n1 - n0;
    if (bias && f16) cvt.f16_to_f32(static_cast<const uint16_t*>(bias) + n0, acc, cols);
    if (bias && !f16) std::copy_n(static_cast<const float*>(bias) + n0, cols, acc);
    if (at_.int8_activations) {
      const Q8Rows& r = q8_rows(1, row_geometry());
      quant::nbits_dot_q8_ref(w, r.q.data(), r.scales.data(), r.sums.data(), n0, n1, acc);
    } else {
      float a_chunk[kNBitsKChunk];
      for (int64_t k0 = 0; k0 < at_.k; k0 += kNBitsKChunk) {
        const int64_t k1 = std::min(k0 + kNBitsKChunk, at_.k);
        const float* a_f32 = static_cast<const float*>(a) + row * at_.k + k0;
        if (f16) {
          cvt.f16_to_f32(static_cast<const uint16_t*>(a) + row * at_.k + k0, a_chunk, k1 - k0);
          a_f32 = a_chunk;
        }
        quant::nbits_dot_f32_ref(w, a_f32, k0, k1, n0, n1, acc);
      }
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
  std::unique_ptr<NBitsPacked> packed_;  // null: the reference path
  const quant::NBitsTable* ukernels_;
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
  // Bounds that keep every size computed from the attributes (and the int32
  // block sums of 8-bit codes: 127 * 255 * 2^16 < 2^31) from overflowing.
  constexpr int64_t kMaxDim = int64_t{1} << 40, kMaxBlockSize = int64_t{1} << 16;
  if (at.k > kMaxDim || at.n > kMaxDim) return invalid_argument("attributes K={} and N={} must be at most 2^40", at.k, at.n);
  if (bits != 4 && bits != 8) return not_implemented("bits={} is not supported (4 and 8 are)", bits);
  if (at.block_size < 16 || at.block_size > kMaxBlockSize || (at.block_size & (at.block_size - 1)) != 0) {
    return invalid_argument("block_size={} must be a power of 2 from 16 to 65536", at.block_size);
  }
  if (accuracy_level < 0 || accuracy_level > 4) {
    return invalid_argument("accuracy_level={} must be in 0..4", accuracy_level);
  }
  at.bits = static_cast<int>(bits);
  at.int8_activations = accuracy_level == 4;
  at.k_blocks = (at.k + at.block_size - 1) / at.block_size;
  at.blob_size = at.block_size * at.bits / 8;
  at.zp_row_bytes = quant::nbits_zp_row_bytes(at.k_blocks, at.bits);
  return at;
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

// The packed weights when the fast path applies: 4-bit codes, f32 A, and B,
// scales and zero points (when given) all constant.
Result<std::unique_ptr<NBitsPacked>> prepack(const KernelInit& init, const NBitsAttrs& at, DType zp_dtype) {
  const auto constant = [&](size_t i) { return i < init.constant_inputs.size() && init.constant_inputs[i]; };
  const bool zp_ready = input_dtype(init, kZeroPoints) == DType::kUndefined || constant(kZeroPoints);
  if (at.bits != 4 || at.block_size > quant::kNBitsMaxPackedBlock || init.input_dtypes[kA] != DType::kF32 || !constant(kB) ||
      !constant(kScales) || !zp_ready) {
    return std::unique_ptr<NBitsPacked>();
  }
  const KernelContext constants(init.constant_inputs, {});
  EMBER_RETURN_IF_ERROR(check_weight_shapes(constants, at, zp_dtype));
  return std::make_unique<NBitsPacked>(quant::nbits_pack_q4(weights_of(constants, at, DType::kF32, zp_dtype)));
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_matmul_nbits(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(DType zp_dtype, check_dtypes(init));
  EMBER_ASSIGN_OR_RETURN(NBitsAttrs attrs, read_attrs(init.node));
  attrs.int8_activations = attrs.int8_activations && (zp_dtype == DType::kUndefined || zp_dtype == DType::kU8);
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<NBitsPacked> packed, prepack(init, attrs, zp_dtype));
  return std::unique_ptr<OpKernel>(
      std::make_unique<MatMulNBitsKernel>(attrs, init.input_dtypes[kA], zp_dtype, std::move(packed)));
}

}  // namespace ember::kernels
