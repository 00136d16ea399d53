// RotaryEmbedding as ONNX Runtime's CPU kernels define it.
//
// com.microsoft RotaryEmbedding (inputs: input, position_ids, cos_cache,
// sin_cache): input [B, S, hidden] or [B, N, S, H]; position_ids a scalar or
// 1-element offset p0 (row s uses cache row p0 + s) or [B, S] int64 positions;
// caches [max_positions, rotary_dim / 2]. head_size is 2 * cos_cache.dim(1)
// unless rotary_embedding_dim is set, then hidden / num_heads. `scale` only
// matters to ORT's unimplemented cache update and is ignored, as ORT does.
//
// ONNX RotaryEmbedding-23 (inputs: X, cos_cache, sin_cache, position_ids?):
// X [B, S, hidden] (num_heads required) or [B, N, S, H]; with position_ids
// [B, S] the caches are [max_positions, rotary_dim / 2], without them the
// caches are [B, S, rotary_dim / 2], one row per token.
//
// Both: interleaved=0 pairs x[i] with x[i + rotary_dim/2], interleaved=1 pairs
// x[2i] with x[2i+1]; elements past rotary_dim are copied. f32 and f16 (computed
// in f32, rounded once).
#include "kernels/attention/rotary.h"

#include <algorithm>
#include <cstring>

#include "kernels/attention/rotary_ukernels.h"
#include "kernels/common/convert.h"
#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

enum class Flavor { kContrib, kOnnx };

// Where token (b, s) finds its cache row.
enum class PositionMode {
  kOffset,    // p0 + s, p0 the single value of position_ids (contrib)
  kTable,     // position_ids[b, s]
  kPerToken,  // b * S + s: caches are [B, S, rotary_dim / 2] (ONNX without position_ids)
};

struct InputIndex {
  size_t x, position_ids, cos, sin;
  const char* x_name;
};
constexpr InputIndex kContribInputs{0, 1, 2, 3, "input"};
constexpr InputIndex kOnnxInputs{0, 3, 1, 2, "X"};

struct RotaryAttrs {
  bool interleaved = false;
  int64_t num_heads = 0;
  int64_t rotary_dim = 0;  // 0: the whole head
};

struct Geometry {
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0, rot = 0;
  int64_t batch_stride = 0, seq_stride = 0, head_stride = 0;  // elements
  int64_t cache_rows = 0;
  PositionMode mode = PositionMode::kOffset;
};

// Rows of at least this many elements per thread range (grain = this / head_size
// rows). Measured with a /tmp loop over the AVX-512 half-split microkernel and
// parallel_for on Qwen2.5-0.5B query shapes (14 heads x 64), p50 of 2000 runs,
// load average 1.3-2.4, for grains of 1Ki, 4Ki, 16Ki and 64Ki elements: S=1
// (896 elements) 0.12-0.14 us at any grain (inline); S=16 1.9 us at 1 thread,
// 1.3-2.8 us at 2; S=128 15.5 us (1 thread) and 15.7-16.0 us (2); S=512 66.5 us
// and 67.3 us. All grains within noise; the op reads and writes ~0.14 ns per
// element, bound by cache bandwidth, so the second core gains little. 16Ki keeps
// decode and short prompts inline and splits long prompts into >= 2 us ranges.
constexpr int64_t kRowElementsGrain = 16384;

// f16 rows convert through f32 buffers on the stack, this many pairs at a time.
constexpr int64_t kChunkPairs = 256;

Status check_caches(const Tensor& cos, const Tensor& sin) {
  if (cos.shape() != sin.shape()) {
    return invalid_argument("inputs 'cos_cache' {} and 'sin_cache' {} must have the same shape", cos.describe(),
                            sin.describe());
  }
  return Status::ok();
}

// Heads, head size and strides from the input's shape; `head_size` is the
// head size the op's attributes/caches imply (0: take it from a 4-D input).
Status layout_of(const Tensor& x, const char* x_name, int64_t num_heads, int64_t head_size, Geometry& g) {
  if (x.rank() != 3 && x.rank() != 4) {
    return invalid_argument("input '{}' {} must be 3-D [batch, sequence, hidden] or 4-D [batch, num_heads, "
                            "sequence, head_size]",
                            x_name, x.describe());
  }
  g.batch = x.dim(0);
  if (x.rank() == 4) {
    g.heads = x.dim(1);
    g.seq = x.dim(2);
    g.head_size = x.dim(3);
    if (head_size != 0 && head_size != g.head_size) {
      return invalid_argument("input '{}' {} has head_size {}, but the caches and attributes imply {}", x_name,
                              x.describe(), g.head_size, head_size);
    }
    g.seq_stride = g.head_size;
    g.head_stride = g.seq * g.head_size;
    g.batch_stride = g.heads * g.head_stride;
    return Status::ok();
  }
  g.seq = x.dim(1);
  const int64_t hidden = x.dim(2);
  g.head_size = head_size > 0 ? head_size : (num_heads > 0 ? hidden / num_heads : 0);
  g.heads = num_heads > 0 ? num_heads : (g.head_size > 0 ? hidden / g.head_size : 0);
  if (g.head_size <= 0 || g.heads * g.head_size != hidden) {
    return invalid_argument("input '{}' {}: hidden size {} is not num_heads={} x head_size={}", x_name, x.describe(),
                            hidden, num_heads, g.head_size);
  }
  g.head_stride = g.head_size;
  g.seq_stride = g.heads * g.head_size;
  g.batch_stride = g.seq * g.seq_stride;
  return Status::ok();
}

Status set_rotary_dim(const RotaryAttrs& at, Geometry& g) {
  g.rot = at.rotary_dim > 0 ? at.rotary_dim : g.head_size;
  if (g.rot > g.head_size || g.rot % 2 != 0) {
    return invalid_argument("rotary_embedding_dim={} must be even and at most head_size={}", g.rot, g.head_size);
  }
  return Status::ok();
}

Result<Geometry> contrib_geometry(const KernelContext& ctx, const RotaryAttrs& at) {
  const InputIndex& in = kContribInputs;
  const Tensor& x = ctx.input(in.x);
  const Tensor& pos = ctx.input(in.position_ids);
  const Tensor& cos = ctx.input(in.cos);
  EMBER_RETURN_IF_ERROR(check_caches(cos, ctx.input(in.sin)));
  if (cos.rank() != 2) {
    return invalid_argument("input 'cos_cache' {} must be 2-D [max_position, rotary_dim / 2]", cos.describe());
  }
  // As ORT: head_size is 2 * cos_cache.dim(1) unless rotary_embedding_dim is set.
  const int64_t hidden = x.rank() == 4 ? x.dim(1) * x.dim(3) : (x.rank() == 3 ? x.dim(2) : 0);
  const int64_t head_size = at.rotary_dim > 0 ? hidden / at.num_heads : 2 * cos.dim(1);
  Geometry g;
  EMBER_RETURN_IF_ERROR(layout_of(x, in.x_name, at.num_heads, head_size, g));
  if (x.rank() == 4 && at.num_heads > 0 && at.num_heads != g.heads) {
    return invalid_argument("input 'input' {} has {} heads but num_heads={}", x.describe(), g.heads, at.num_heads);
  }
  EMBER_RETURN_IF_ERROR(set_rotary_dim(at, g));
  // ORT also accepts cos_cache.dim(1) == head_size / 2 with a smaller rotary
  // dim but then strides the cache by rotary_dim / 2; only the consistent form is taken.
  if (cos.dim(1) != g.rot / 2) {
    return invalid_argument("input 'cos_cache' {} must have rotary_dim / 2 = {} columns", cos.describe(), g.rot / 2);
  }
  g.cache_rows = cos.dim(0);
  if (pos.numel() == 1 && pos.rank() <= 1) {
    g.mode = PositionMode::kOffset;
  } else if (pos.rank() == 2 && pos.dim(0) == g.batch && pos.dim(1) == g.seq) {
    g.mode = PositionMode::kTable;
  } else {
    return invalid_argument("input 'position_ids' {} must be a scalar, a 1-element vector or [batch={}, sequence={}]",
                            pos.describe(), g.batch, g.seq);
  }
  if (g.seq > g.cache_rows) {
    return not_implemented("sequence length {} exceeds the {} rows of 'cos_cache' {} (ORT does not extend the caches)",
                           g.seq, g.cache_rows, cos.describe());
  }
  return g;
}

Result<Geometry> onnx_geometry(const KernelContext& ctx, const RotaryAttrs& at) {
  const InputIndex& in = kOnnxInputs;
  const Tensor& x = ctx.input(in.x);
  const Tensor& cos = ctx.input(in.cos);
  EMBER_RETURN_IF_ERROR(check_caches(cos, ctx.input(in.sin)));
  if (x.rank() == 3 && at.num_heads <= 0) {
    return invalid_argument("input 'X' {} is 3-D: attribute num_heads is required", x.describe());
  }
  Geometry g;
  EMBER_RETURN_IF_ERROR(layout_of(x, in.x_name, x.rank() == 4 ? 0 : at.num_heads, 0, g));
  EMBER_RETURN_IF_ERROR(set_rotary_dim(at, g));
  if (ctx.has_input(in.position_ids)) {
    const Tensor& pos = ctx.input(in.position_ids);
    if (pos.rank() != 2 || pos.dim(0) != g.batch || pos.dim(1) != g.seq) {
      return invalid_argument("input 'position_ids' {} must be [batch={}, sequence={}]", pos.describe(), g.batch,
                              g.seq);
    }
    if (cos.rank() != 2 || cos.dim(1) != g.rot / 2) {
      return invalid_argument("input 'cos_cache' {} must be [max_position, rotary_dim / 2 = {}] with position_ids",
                              cos.describe(), g.rot / 2);
    }
    g.mode = PositionMode::kTable;
    g.cache_rows = cos.dim(0);
    return g;
  }
  if (cos.rank() != 3 || cos.dim(0) != g.batch || cos.dim(1) != g.seq || cos.dim(2) != g.rot / 2) {
    return invalid_argument("input 'cos_cache' {} must be [batch={}, sequence={}, rotary_dim / 2 = {}] without "
                            "position_ids",
                            cos.describe(), g.batch, g.seq, g.rot / 2);
  }
  g.mode = PositionMode::kPerToken;
  g.cache_rows = g.batch * g.seq;
  return g;
}

Status check_positions(const Tensor& pos, const Geometry& g) {
  const int64_t* p = pos.data_as<int64_t>();
  if (g.mode == PositionMode::kOffset) {
    if (g.seq > 0 && (p[0] < 0 || p[0] > g.cache_rows - g.seq)) {
      return invalid_argument("input 'position_ids' offset {} plus sequence length {} is outside the {} rows of the "
                              "cos/sin caches",
                              p[0], g.seq, g.cache_rows);
    }
    return Status::ok();
  }
  for (int64_t i = 0; i < pos.numel(); ++i) {
    if (p[i] < 0 || p[i] >= g.cache_rows) {
      return invalid_argument("input 'position_ids' value {} at [{}, {}] is out of range [0, {}) (rows of the "
                              "cos/sin caches)",
                              p[i], i / g.seq, i % g.seq, g.cache_rows);
    }
  }
  return Status::ok();
}

class RotaryKernel final : public OpKernel {
 public:
  RotaryKernel(Flavor flavor, RotaryAttrs attrs, DType dtype)
      : flavor_(flavor), at_(attrs), dtype_(dtype), ukernels_(&rotary_table()), convert_(&convert_table()) {}

  Status infer(KernelContext& ctx) const override {
    EMBER_RETURN_IF_ERROR(geometry(ctx).status());
    ctx.set_output(0, dtype_, ctx.input(0).shape());
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(Geometry g, geometry(ctx));
    const InputIndex& in = flavor_ == Flavor::kContrib ? kContribInputs : kOnnxInputs;
    const int64_t* pos = nullptr;
    if (g.mode != PositionMode::kPerToken) {
      EMBER_RETURN_IF_ERROR(check_positions(ctx.input(in.position_ids), g));
      pos = ctx.input(in.position_ids).data_as<int64_t>();
    }
    const int64_t rows = g.batch * g.seq * g.heads;
    const int64_t grain = std::max<int64_t>(1, kRowElementsGrain / std::max<int64_t>(1, g.head_size));
    const void* x = ctx.input(in.x).data();
    void* y = ctx.output(0).data();
    const void* cos = ctx.input(in.cos).data();
    const void* sin = ctx.input(in.sin).data();
    threading::parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r % g.heads, bs = r / g.heads, s = bs % g.seq, b = bs / g.seq;
        const int64_t offset = b * g.batch_stride + s * g.seq_stride + n * g.head_stride;
        int64_t cache_row = bs;
        if (g.mode == PositionMode::kOffset) cache_row = pos[0] + s;
        if (g.mode == PositionMode::kTable) cache_row = pos[bs];
        const int64_t cache_offset = cache_row * (g.rot / 2);
        if (dtype_ == DType::kF32) {
          rotate_row_f32(g, static_cast<const float*>(x) + offset, static_cast<const float*>(cos) + cache_offset,
                         static_cast<const float*>(sin) + cache_offset, static_cast<float*>(y) + offset);
        } else {
          rotate_row_f16(g, static_cast<const uint16_t*>(x) + offset, static_cast<const uint16_t*>(cos) + cache_offset,
                         static_cast<const uint16_t*>(sin) + cache_offset, static_cast<uint16_t*>(y) + offset);
        }
      }
    });
    return Status::ok();
  }

  // Every output row depends only on the same input row.
  int inplace_input() const override { return 0; }

 private:
  Result<Geometry> geometry(const KernelContext& ctx) const {
    return flavor_ == Flavor::kContrib ? contrib_geometry(ctx, at_) : onnx_geometry(ctx, at_);
  }

  void rotate_row_f32(const Geometry& g, const float* x, const float* cos, const float* sin, float* y) const {
    const int64_t half = g.rot / 2;
    if (at_.interleaved) {
      ukernels_->f32_rotate_pairs(x, cos, sin, y, half);
    } else {
      ukernels_->f32_rotate_half(x, x + half, cos, sin, y, y + half, half);
    }
    if (g.rot < g.head_size && x != y) std::memcpy(y + g.rot, x + g.rot, (g.head_size - g.rot) * sizeof(float));
  }

  void rotate_row_f16(const Geometry& g, const uint16_t* x, const uint16_t* cos, const uint16_t* sin,
                      uint16_t* y) const {
    float xa[2 * kChunkPairs], ya[2 * kChunkPairs], c[kChunkPairs], s[kChunkPairs];
    const int64_t half = g.rot / 2;
    for (int64_t i = 0; i < half; i += kChunkPairs) {
      const int64_t n = std::min(kChunkPairs, half - i);
      convert_->f16_to_f32(cos + i, c, n);
      convert_->f16_to_f32(sin + i, s, n);
      if (at_.interleaved) {
        convert_->f16_to_f32(x + 2 * i, xa, 2 * n);
        ukernels_->f32_rotate_pairs(xa, c, s, ya, n);
        convert_->f32_to_f16(ya, y + 2 * i, 2 * n);
      } else {
        convert_->f16_to_f32(x + i, xa, n);
        convert_->f16_to_f32(x + half + i, xa + kChunkPairs, n);
        ukernels_->f32_rotate_half(xa, xa + kChunkPairs, c, s, ya, ya + kChunkPairs, n);
        convert_->f32_to_f16(ya, y + i, n);
        convert_->f32_to_f16(ya + kChunkPairs, y + half + i, n);
      }
    }
    if (g.rot < g.head_size && x != y) std::memcpy(y + g.rot, x + g.rot, (g.head_size - g.rot) * sizeof(uint16_t));
  }

  Flavor flavor_;
  RotaryAttrs at_;
  DType dtype_;
  const RotaryTable* ukernels_;
  const ConvertTable* convert_;
};

Result<RotaryAttrs> read_attrs(const ir::Node& node, Flavor flavor) {
  ir::AttrReader r(node);
  RotaryAttrs at;
  const int64_t interleaved = r.get_int("interleaved", 0);
  at.num_heads = r.get_int("num_heads", 0);
  at.rotary_dim = r.get_int("rotary_embedding_dim", 0);
  const int64_t packed = flavor == Flavor::kContrib ? r.get_int("is_packed_batching", 0) : 0;
  EMBER_RETURN_IF_ERROR(r.status());
  if (interleaved != 0 && interleaved != 1) return invalid_argument("interleaved={} must be 0 or 1", interleaved);
  if (at.num_heads < 0 || at.rotary_dim < 0) {
    return invalid_argument("num_heads={} and rotary_embedding_dim={} must not be negative", at.num_heads,
                            at.rotary_dim);
  }
  if (flavor == Flavor::kContrib && at.rotary_dim > 0 && at.num_heads == 0) {
    return invalid_argument("num_heads must be set when rotary_embedding_dim={} is", at.rotary_dim);
  }
  if (packed != 0) {
    return not_implemented("is_packed_batching={}: ONNX Runtime's CPU kernel has no packed-batching form", packed);
  }
  at.interleaved = interleaved == 1;
  return at;
}

Result<DType> check_dtypes(const KernelInit& init, const InputIndex& in) {
  const DType t = input_dtype(init, in.x);
  if (t != DType::kF32 && t != DType::kF16) {
    return invalid_argument("input '{}' is {}; RotaryEmbedding takes float32 or float16", in.x_name, dtype_name(t));
  }
  if (input_dtype(init, in.cos) != t || input_dtype(init, in.sin) != t) {
    return invalid_argument("inputs 'cos_cache' ({}) and 'sin_cache' ({}) must have the dtype of '{}' ({})",
                            dtype_name(input_dtype(init, in.cos)), dtype_name(input_dtype(init, in.sin)), in.x_name,
                            dtype_name(t));
  }
  const DType p = input_dtype(init, in.position_ids);
  if (p != DType::kUndefined && p != DType::kI64) {
    return invalid_argument("input 'position_ids' is {}; it must be int64", dtype_name(p));
  }
  return t;
}

Result<std::unique_ptr<OpKernel>> create(const KernelInit& init, Flavor flavor) {
  const InputIndex& in = flavor == Flavor::kContrib ? kContribInputs : kOnnxInputs;
  EMBER_RETURN_IF_ERROR(require_inputs(init, flavor == Flavor::kContrib ? 4 : 3));
  EMBER_ASSIGN_OR_RETURN(DType dtype, check_dtypes(init, in));
  EMBER_ASSIGN_OR_RETURN(RotaryAttrs attrs, read_attrs(init.node, flavor));
  return std::unique_ptr<OpKernel>(std::make_unique<RotaryKernel>(flavor, attrs, dtype));
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_rotary_embedding_contrib(const KernelInit& init) {
  return create(init, Flavor::kContrib);
}

Result<std::unique_ptr<OpKernel>> create_rotary_embedding_onnx(const KernelInit& init) {
  return create(init, Flavor::kOnnx);
}

}  // namespace ember::kernels::attention
