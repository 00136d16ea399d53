// com.microsoft GatherBlockQuantized as ONNX Runtime's contrib-op spec and CPU
// kernel define it, for uint8 data (the only quantized data type Ember loads):
// output = Gather(data, indices, gather_axis) dequantized block-wise along
// quantize_axis, (code - zero_point) * scale, in the scales' dtype. With uint8
// data ORT requires gather_axis 0 and quantize_axis last, and packs 8 / bits
// codes per byte along the last axis (low bits first); every row of K codes has
// ceil(K / block_size) scales and zero points (2-/4-bit zero points packed like
// the codes, each row starting on a new byte; absent: 2^(bits - 1)).
// This is the 4-bit embedding lookup of LLM exports.
#include <algorithm>
#include <memory>

#include "kernels/common/convert.h"
#include "kernels/quant/gbq_ukernels.h"
#include "kernels/quant/nbits_weights.h"
#include "kernels/quant/quant_ops.h"
#include "kernels/tensor/gather_scatter_common.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

enum Input : size_t { kData = 0, kIndices = 1, kScales = 2, kZeroPoints = 3, kNumInputs = 4 };
constexpr const char* kInputNames[kNumInputs] = {"data", "indices", "scales", "zero_points"};

// Codes a work item dequantizes: rows are cut into chunks of this many, so a
// single long row still splits across threads and an f16/bf16 chunk converts
// through a 4 KiB f32 buffer on the stack.
constexpr int64_t kChunk = 1024;
constexpr int64_t kMaxChunkBlocks = kChunk / 16;
// Chunks per thread range: 8 (8Ki codes, 0.9 to 1.8 us of AVX-512 work at the
// 3.6 ns (quiet machine) to 7 ns (loaded) per block of 32 codes that a /tmp
// loop over the microkernel measured), well above a thread hand-off. Measured with a /tmp loop timing run() into a
// preallocated output (p50 of 2000 runs, 4-bit block 32) for grains 2, 8, 32:
// 1-token lookups (1-2 chunks) run inline, 0.12 us (K=896) and 0.23 us
// (K=2048); at 128 tokens all three grains were within noise (11 us at K=896,
// 24 us at K=2048), for 1 and 2 threads alike, with the machine's load average
// at 7 (the second core busy with other builds); ember_ab at 2 threads: 11.5,
// 11.7 and 11.7 us (K=896) and 26.5, 31.6 and 26.5 us (K=2048) for 8, 2, 32.
constexpr int64_t kChunkGrain = 8;

struct GbqAttrs {
  int64_t gather_axis = 0, quantize_axis = 1, block_size = 128;
  int bits = 4;
};

// Sizes of one run, from the input shapes: data is [axis_dim, slab_rows rows
// of k codes], flattened past dim 0.
struct Geometry {
  int64_t axis_dim = 0, slab_rows = 1, k = 0, k_blocks = 0, row_bytes = 0, zp_row_bytes = 0;
};

// Every dim of `t` but the last equals data's, and the last is `last`.
Status check_like_data(const Tensor& data, const Tensor& t, size_t input, int64_t last, const GbqAttrs& at,
                       int64_t k) {
  bool ok = t.rank() == data.rank() && t.shape().back() == last;
  for (int64_t d = 0; ok && d + 1 < data.rank(); ++d) ok = t.dim(d) == data.dim(d);
  if (ok) return Status::ok();
  return invalid_argument("input '{}' {} must have data's dims {} with the last one {} (K={} codes, block_size={}, "
                          "bits={})",
                          kInputNames[input], t.describe(), data.describe(), last, k, at.block_size, at.bits);
}

Result<Geometry> geometry_of(const KernelContext& ctx, const GbqAttrs& at) {
  const Tensor& data = ctx.input(kData);
  if (data.rank() < 2) return invalid_argument("input 'data' {} must have rank >= 2", data.describe());
  EMBER_ASSIGN_OR_RETURN(int64_t gather_axis, normalize_axis(at.gather_axis, data.rank(), "gather_axis"));
  EMBER_ASSIGN_OR_RETURN(int64_t quantize_axis, normalize_axis(at.quantize_axis, data.rank(), "quantize_axis"));
  if (gather_axis != 0 || quantize_axis != data.rank() - 1) {
    return not_implemented("gather_axis={} and quantize_axis={} with uint8 data {}: ONNX Runtime defines uint8 data "
                           "for gather_axis 0 and quantize_axis the last axis only",
                           at.gather_axis, at.quantize_axis, data.describe());
  }
  Geometry g;
  g.axis_dim = data.dim(0);
  g.slab_rows = gather_scatter::dims_product(data.shape(), 1, data.rank() - 1);
  g.row_bytes = data.shape().back();
  g.k = g.row_bytes * (8 / at.bits);
  g.k_blocks = (g.k + at.block_size - 1) / at.block_size;
  g.zp_row_bytes = quant::nbits_zp_row_bytes(g.k_blocks, at.bits);
  EMBER_RETURN_IF_ERROR(check_like_data(data, ctx.input(kScales), kScales, g.k_blocks, at, g.k));
  if (ctx.has_input(kZeroPoints)) {
    EMBER_RETURN_IF_ERROR(check_like_data(data, ctx.input(kZeroPoints), kZeroPoints, g.zp_row_bytes, at, g.k));
  }
  return g;
}

template <typename I>
Status check_indices(const I* indices, int64_t count, int64_t axis_dim) {
  for (int64_t j = 0; j < count; ++j) {
    int64_t i = indices[j];
    if (!gather_scatter::wrap_index(i, axis_dim)) {
      return gather_scatter::index_out_of_range("GatherBlockQuantized", indices[j], 0, axis_dim);
    }
  }
  return Status::ok();
}

class GatherBlockQuantizedKernel final : public OpKernel {
 public:
  GatherBlockQuantizedKernel(GbqAttrs attrs, DType out_dtype)
      : at_(attrs), out_dtype_(out_dtype), ukernels_(&quant::gbq_table()), convert_(&convert_table()) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry_of(ctx, at_));
    const Tensor& data = ctx.input(kData);
    Shape out = ctx.input(kIndices).shape();
    for (int64_t d = 1; d + 1 < data.rank(); ++d) out.push_back(data.dim(d));
    out.push_back(g.k);
    ctx.set_output(0, out_dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry_of(ctx, at_));
    const Tensor& indices = ctx.input(kIndices);
    Status status;
    gather_scatter::visit_index_type(indices.dtype(), [&]<typename I>() {
      status = check_indices(indices.data_as<I>(), indices.numel(), g.axis_dim);
      if (status.is_ok()) gather(ctx, g, indices.data_as<I>(), indices.numel());
    });
    return status;
  }

 private:
  template <typename I>
  void gather(KernelContext& ctx, const Geometry& g, const I* indices, int64_t count) const {
    const int64_t chunks_per_row = (g.k + kChunk - 1) / kChunk;
    const int64_t items = count * g.slab_rows * chunks_per_row;
    threading::parallel_for(items, kChunkGrain, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t out_row = item / chunks_per_row;
        const int64_t j = out_row / g.slab_rows;
        int64_t index = indices[j];
        if (index < 0) index += g.axis_dim;
        const int64_t src_row = index * g.slab_rows + (out_row - j * g.slab_rows);
        dequantize_chunk(ctx, g, src_row, out_row, (item - out_row * chunks_per_row) * kChunk);
      }
    });
  }

  // Codes [k0, k0 + kChunk) of data row `src_row` into output row `out_row`.
  void dequantize_chunk(KernelContext& ctx, const Geometry& g, int64_t src_row, int64_t out_row, int64_t k0) const {
    const int64_t len = std::min(kChunk, g.k - k0);
    // A chunk covers whole blocks, or lies inside one block longer than a chunk.
    const int64_t block = std::min(at_.block_size, kChunk);
    const int64_t first_block = k0 / at_.block_size;
    const int64_t blocks = (len + block - 1) / block;
    const int64_t meta = src_row * g.k_blocks + first_block;
    float scales_f32[kMaxChunkBlocks];
    uint8_t zps_u8[kMaxChunkBlocks];
    const float* scales = scales_f32;
    const Tensor& scale_tensor = ctx.input(kScales);
    if (out_dtype_ == DType::kF32) {
      scales = scale_tensor.data_as<float>() + meta;
    } else if (out_dtype_ == DType::kF16) {
      convert_->f16_to_f32(scale_tensor.data_as<uint16_t>() + meta, scales_f32, blocks);
    } else {
      convert_->bf16_to_f32(scale_tensor.data_as<uint16_t>() + meta, scales_f32, blocks);
    }
    const uint8_t* zps = nullptr;
    if (ctx.has_input(kZeroPoints)) {
      const uint8_t* zp_row = ctx.input(kZeroPoints).data_as<uint8_t>() + src_row * g.zp_row_bytes;
      if (at_.bits == 8) {
        zps = zp_row + first_block;
      } else {
        const int64_t per_byte = 8 / at_.bits;
        for (int64_t t = 0; t < blocks; ++t) {
          const int64_t b = first_block + t;
          const int shift = static_cast<int>(b % per_byte) * at_.bits;
          zps_u8[t] = static_cast<uint8_t>((zp_row[b / per_byte] >> shift) & ((1 << at_.bits) - 1));
        }
        zps = zps_u8;
      }
    }
    const uint8_t* codes = ctx.input(kData).data_as<uint8_t>() + src_row * g.row_bytes + k0 * at_.bits / 8;
    const auto dequant = at_.bits == 2   ? ukernels_->f32_q2_dequant
                         : at_.bits == 4 ? ukernels_->f32_q4_dequant
                                         : ukernels_->f32_q8_dequant;
    const int64_t out_offset = out_row * g.k + k0;
    if (out_dtype_ == DType::kF32) {
      dequant(codes, len, block, scales, zps, ctx.output(0).data_as<float>() + out_offset);
      return;
    }
    float y[kChunk];
    dequant(codes, len, block, scales, zps, y);
    uint16_t* out = ctx.output(0).data_as<uint16_t>() + out_offset;
    if (out_dtype_ == DType::kF16) {
      convert_->f32_to_f16(y, out, len);
    } else {
      convert_->f32_to_bf16(y, out, len);
    }
  }

  GbqAttrs at_;
  DType out_dtype_;
  const quant::GbqTable* ukernels_;
  const ConvertTable* convert_;
};

// Returns the output dtype (the scales').
Result<DType> check_dtypes(const KernelInit& init) {
  if (init.input_dtypes.size() > kNumInputs) {
    return invalid_model("has {} inputs; GatherBlockQuantized takes at most {}", init.input_dtypes.size(),
                         size_t{kNumInputs});
  }
  EMBER_RETURN_IF_ERROR(require_inputs(init, 3));
  if (input_dtype(init, kData) != DType::kU8) {
    return not_implemented("input 'data' is {}; uint8 is supported", dtype_name(input_dtype(init, kData)));
  }
  EMBER_RETURN_IF_ERROR(gather_scatter::check_index_dtype(input_dtype(init, kIndices), "indices"));
  const DType scales = input_dtype(init, kScales);
  if (scales != DType::kF32 && scales != DType::kF16 && scales != DType::kBF16) {
    return invalid_argument("input 'scales' is {}; float32, float16 and bfloat16 are supported", dtype_name(scales));
  }
  const DType zp = input_dtype(init, kZeroPoints);
  if (zp != DType::kUndefined && zp != DType::kU8) {
    return invalid_argument("input 'zero_points' is {}; it must be uint8 like 'data'", dtype_name(zp));
  }
  return scales;
}

Result<GbqAttrs> read_attrs(const ir::Node& node) {
  ir::AttrReader r(node);
  GbqAttrs at;
  at.gather_axis = r.get_int("gather_axis", 0);
  at.quantize_axis = r.get_int("quantize_axis", 1);
  at.block_size = r.get_int("block_size", 128);
  const int64_t bits = r.get_int("bits", 4);
  EMBER_RETURN_IF_ERROR(r.status());
  if (at.block_size < 16 || (at.block_size & (at.block_size - 1)) != 0) {
    return invalid_argument("block_size={} must be a power of 2 and at least 16", at.block_size);
  }
  if (bits != 2 && bits != 4 && bits != 8) return invalid_argument("bits={} must be 2, 4 or 8 for uint8 data", bits);
  at.bits = static_cast<int>(bits);
  return at;
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_gather_block_quantized(const KernelInit& init) {
  EMBER_ASSIGN_OR_RETURN(DType out_dtype, check_dtypes(init));
  EMBER_ASSIGN_OR_RETURN(GbqAttrs attrs, read_attrs(init.node));
  return std::unique_ptr<OpKernel>(std::make_unique<GatherBlockQuantizedKernel>(attrs, out_dtype));
}

}  // namespace ember::kernels
