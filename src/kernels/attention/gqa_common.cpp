#include "kernels/attention/gqa_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "threading/thread_pool.h"

namespace ember::kernels::attention {
namespace {

// float16 calls compute in f32: inputs and output staged here.
thread_local AlignedBuffer t_stage_in;
thread_local AlignedBuffer t_stage_out;

}  // namespace

Result<GqaAttrs> read_gqa_attrs(ir::AttrReader& r) {
  GqaAttrs at;
  at.num_heads = r.get_int("num_heads", 0);
  at.kv_num_heads = r.get_int("kv_num_heads", 0);
  at.scale = r.get_float("scale", 0.0f);
  at.softcap = r.get_float("softcap", 0.0f);
  at.local_window = r.get_int("local_window_size", -1);
  const int64_t do_rotary = r.get_int("do_rotary", 0);
  const int64_t interleaved = r.get_int("rotary_interleaved", 0);
  const int64_t smooth = r.get_int("smooth_softmax", 0);
  const int64_t qk_output = r.get_int("qk_output", 0);
  EMBER_RETURN_IF_ERROR(r.status());
  if (at.num_heads <= 0 || at.kv_num_heads <= 0 || at.num_heads % at.kv_num_heads != 0) {
    return invalid_argument("num_heads={} and kv_num_heads={} must be positive with num_heads a multiple of "
                            "kv_num_heads",
                            at.num_heads, at.kv_num_heads);
  }
  if (at.local_window == 0 || at.local_window < -1) {
    return invalid_argument("local_window_size={} must be -1 (no window) or positive", at.local_window);
  }
  if (at.softcap < 0 || !std::isfinite(at.softcap) || !std::isfinite(at.scale)) {
    return invalid_argument("softcap={} must be finite and >= 0, scale={} finite", at.softcap, at.scale);
  }
  if (qk_output != 0) return not_implemented("qk_output={}: the attention-scores output is not implemented", qk_output);
  at.do_rotary = do_rotary == 1;
  at.interleaved = interleaved == 1;
  at.smooth_softmax = smooth == 1;
  return at;
}

Result<DType> gqa_float_dtype(const KernelInit& init, const char* op, size_t query,
                              std::initializer_list<size_t> others) {
  const DType dtype = input_dtype(init, query);
  if (dtype != DType::kF32 && dtype != DType::kF16) {
    return not_implemented("input 'query' is {}; {} runs float32 and float16", dtype_name(dtype), op);
  }
  for (size_t i : others) {
    const DType t = input_dtype(init, i);
    if (t != DType::kUndefined && t != dtype) {
      return invalid_argument("input {} is {} but 'query' is {}", i, dtype_name(t), dtype_name(dtype));
    }
  }
  return dtype;
}

Status check_int32_input(const KernelInit& init, size_t i, const char* name) {
  if (input_dtype(init, i) != DType::kI32) {
    return invalid_argument("input {} ('{}') must be int32, got {}", i, name, dtype_name(input_dtype(init, i)));
  }
  return Status::ok();
}

float* grow_floats(AlignedBuffer& b, int64_t n) {
  b.resize(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float));
  return static_cast<float*>(b.data());
}

GqaKernel::GqaKernel(GqaAttrs at, DType dtype)
    : at_(at), dtype_(dtype), rotary_(&rotary_table()), convert_(&convert_table()) {}

Result<int64_t> GqaKernel::head_size(const KernelContext& ctx, const Tensor& q, bool packed, size_t value) const {
  const int64_t heads = packed ? at_.num_heads + 2 * at_.kv_num_heads : at_.num_heads;
  const int64_t hs = q.dim(2) / heads;
  if (hs * heads != q.dim(2) || hs == 0) {
    return invalid_argument("input 'query' {}: hidden size {} is not a multiple of {} heads{}", q.describe(), q.dim(2),
                            heads, packed ? " (packed Q, K and V)" : "");
  }
  if (packed != !ctx.has_input(value)) {
    return invalid_argument("inputs 'key' and 'value' must both be given or both be omitted (packed QKV)");
  }
  return hs;
}

Result<int64_t> GqaKernel::rotary_dim(const KernelContext& ctx, size_t cos_input, size_t sin_input,
                                      int64_t head_size) const {
  if (!at_.do_rotary) return int64_t{0};
  if (!ctx.has_input(cos_input) || !ctx.has_input(sin_input)) {
    return invalid_argument("do_rotary=1 needs inputs 'cos_cache' and 'sin_cache'");
  }
  const Tensor& cos = ctx.input(cos_input);
  if (cos.rank() != 2 || cos.shape() != ctx.input(sin_input).shape() || 2 * cos.dim(1) > head_size) {
    return invalid_argument("inputs 'cos_cache' {} and 'sin_cache' {} must both be [max_position, rotary_dim / 2] "
                            "with rotary_dim <= head_size={}",
                            cos.describe(), ctx.input(sin_input).describe(), head_size);
  }
  return 2 * cos.dim(1);
}

Status GqaKernel::check_head_sink(const KernelContext& ctx, size_t sink_input) const {
  if (!ctx.has_input(sink_input)) return Status::ok();
  const Tensor& sink = ctx.input(sink_input);
  if (sink.rank() != 1 || sink.dim(0) != at_.num_heads) {
    return invalid_argument("input 'head_sink' {} must be [num_heads={}]", sink.describe(), at_.num_heads);
  }
  return Status::ok();
}

void GqaKernel::float_inputs(const KernelContext& ctx,
                             std::initializer_list<std::pair<size_t, const float**>> inputs) const {
  if (dtype_ == DType::kF32) {
    for (const auto& [i, dst] : inputs) *dst = ctx.has_input(i) ? ctx.input(i).data_as<float>() : nullptr;
    return;
  }
  int64_t total = 0;
  for (const auto& [i, dst] : inputs) total += ctx.has_input(i) ? ctx.input(i).numel() : 0;
  float* at = grow_floats(t_stage_in, total);
  for (const auto& [i, dst] : inputs) {
    *dst = nullptr;
    if (!ctx.has_input(i)) continue;
    const Tensor& t = ctx.input(i);
    float* f = at;
    threading::parallel_for(t.numel(), kGqaCopyGrainElements, [&](int64_t begin, int64_t end) {
      convert_->f16_to_f32(t.data_as<uint16_t>() + begin, f + begin, end - begin);
    });
    at += t.numel();
    *dst = f;
  }
}

QkvRows GqaKernel::qkv_rows(const float* query, const float* key, const float* value, bool packed,
                            int64_t head_size) const {
  const int64_t n = at_.num_heads, nkv = at_.kv_num_heads, hs = head_size;
  QkvRows r;
  r.query = query;
  r.key = packed ? query + n * hs : key;
  r.value = packed ? query + (n + nkv) * hs : value;
  r.row_floats = packed ? (n + 2 * nkv) * hs : n * hs;
  r.kv_row_floats = packed ? r.row_floats : nkv * hs;
  return r;
}

TrigRows GqaKernel::trig_rows(const void* cos, const void* sin, int64_t rot, int64_t position, float* buf) const {
  const int64_t half = rot / 2;
  if (dtype_ == DType::kF32) {
    return {static_cast<const float*>(cos) + position * half, static_cast<const float*>(sin) + position * half};
  }
  convert_->f16_to_f32(static_cast<const uint16_t*>(cos) + position * half, buf, half);
  convert_->f16_to_f32(static_cast<const uint16_t*>(sin) + position * half, buf + half, half);
  return {buf, buf + half};
}

void GqaKernel::rotate(const float* x, TrigRows trig, float* y, int64_t rot, int64_t head_size) const {
  const int64_t half = rot / 2;
  if (at_.interleaved) {
    rotary_->f32_rotate_pairs(x, trig.cos, trig.sin, y, half);
  } else {
    rotary_->f32_rotate_half(x, x + half, trig.cos, trig.sin, y, y + half, half);
  }
  if (rot < head_size) std::memcpy(y + rot, x + rot, static_cast<size_t>(head_size - rot) * sizeof(float));
}

void GqaKernel::store_row(const float* src, char* dst, int64_t head_size) const {
  if (dtype_ == DType::kF32) std::memcpy(dst, src, static_cast<size_t>(head_size) * sizeof(float));
  else convert_->f32_to_f16(src, reinterpret_cast<uint16_t*>(dst), head_size);
}

AttentionSpec GqaKernel::attention_spec(int64_t head_size, bool sinks) const {
  AttentionSpec spec;
  spec.head_size = head_size;
  spec.v_head_size = head_size;
  spec.scale = at_.scale != 0.0f ? at_.scale : 1.0f / std::sqrt(static_cast<float>(head_size));
  spec.softcap = at_.softcap;
  spec.smooth_softmax = at_.smooth_softmax || sinks;
  return spec;
}

float* GqaKernel::output_floats(KernelContext& ctx, int64_t n) const {
  return dtype_ == DType::kF16 ? grow_floats(t_stage_out, n) : ctx.output(0).data_as<float>();
}

void GqaKernel::finish_output(KernelContext& ctx, const float* out, int64_t n) const {
  if (dtype_ != DType::kF16) return;
  uint16_t* y = ctx.output(0).data_as<uint16_t>();
  threading::parallel_for(n, kGqaCopyGrainElements, [&](int64_t begin, int64_t end) {
    convert_->f32_to_f16(out + begin, y + begin, end - begin);
  });
}

}  // namespace ember::kernels::attention
