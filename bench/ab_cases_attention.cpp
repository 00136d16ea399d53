// com.microsoft GroupQueryAttention cases at the attention shapes of
// Qwen2.5-0.5B (14 query heads, 2 KV heads) and Llama-3.2-1B (32 and 8), head
// size 64, as onnxruntime-genai exports them: packed QKV, rotary in the op,
// BNSH caches.
#include "case_builder.h"

namespace ember::bench {
namespace {

struct Heads {
  const char* tag;
  int64_t q, kv;
};
constexpr Heads kHeads[] = {{"qwen0.5b", 14, 2}, {"llama1b", 32, 8}};
constexpr int64_t kHeadSize = 64;

// total_sequence_length as a constant: in exports it comes from the attention
// mask's shape, which the planner knows before the run.
void add_total_length(CaseBuilder& c, int64_t total) {
  Tensor t = Tensor::allocate(DType::kI32, Shape{});
  t.data_as<int32_t>()[0] = static_cast<int32_t>(total);
  c.model().add_initializer("total_sequence_length", t);
}

void add_rotary_caches(CaseBuilder& c, int64_t rows) {
  c.weight("cos", DType::kF32, {rows, kHeadSize / 2}, -1.0f, 1.0f);
  c.weight("sin", DType::kF32, {rows, kHeadSize / 2}, -1.0f, 1.0f);
}

std::vector<ir::Attribute> gqa_attrs(const Heads& h) {
  return {attr_int("num_heads", h.q), attr_int("kv_num_heads", h.kv), attr_int("do_rotary", 1)};
}

// One decode step (S = 1) over a past of `past` tokens in a cache buffer of
// past + 1 rows that present shares (past_present_share_buffer, as
// onnxruntime-genai runs it): both runtimes append the token in place and
// attend over past + 1 keys. `copies` nodes, each with its own cache.
CaseModel decode_case(const std::string& name, const Heads& h, int64_t past, int64_t copies) {
  CaseBuilder c(name);
  c.model().set_opset(kMs, 1);
  const int64_t total = past + 1;
  c.input("qkv", DType::kF32, {1, 1, (h.q + 2 * h.kv) * kHeadSize}, -1.0f, 1.0f);
  c.int_input("seqlens_k", DType::kI32, {1}, 1);
  add_total_length(c, total);
  add_rotary_caches(c, total);
  CaseModel m;
  std::vector<std::pair<std::string, std::string>> bound;
  for (int64_t i = 0; i < copies; ++i) {
    const std::string k = fmt::format("past_key_{}", i), v = fmt::format("past_value_{}", i);
    c.input(k, DType::kF32, {1, h.kv, total, kHeadSize}, -1.0f, 1.0f);
    c.input(v, DType::kF32, {1, h.kv, total, kHeadSize}, -1.0f, 1.0f);
    const std::string out = fmt::format("out_{}", i), pk = fmt::format("present_key_{}", i),
                      pv = fmt::format("present_value_{}", i);
    c.model().add_node("GroupQueryAttention",
                       {"qkv", "", "", k, v, "seqlens_k", "total_sequence_length", "cos", "sin"}, {out, pk, pv},
                       gqa_attrs(h), kMs);
    c.output(out, DType::kF32);
    c.output(pk, DType::kF32);
    c.output(pv, DType::kF32);
    bound.emplace_back(pk, k);
    bound.emplace_back(pv, v);
  }
  // Outputs are f32 sums over past + 1 keys in different orders (chunked online
  // softmax vs MLAS GEMMs): a few ulps of values of magnitude <= 1.
  m = c.finish(copies, Tolerance{1e-5, 2e-5});
  for (CaseInput& in : m.inputs) {
    if (in.name == "seqlens_k") in.value.data_as<int32_t>()[0] = static_cast<int32_t>(past);
  }
  m.bound_outputs = std::move(bound);
  return m;
}

// A first prompt of `tokens` tokens, no past: causal attention over the prompt.
CaseModel prefill_case(const std::string& name, const Heads& h, int64_t tokens) {
  CaseBuilder c(name);
  c.model().set_opset(kMs, 1);
  c.input("qkv", DType::kF32, {1, tokens, (h.q + 2 * h.kv) * kHeadSize}, -1.0f, 1.0f);
  c.int_input("seqlens_k", DType::kI32, {1}, 1);
  add_total_length(c, tokens);
  add_rotary_caches(c, tokens);
  c.model().add_node("GroupQueryAttention", {"qkv", "", "", "", "", "seqlens_k", "total_sequence_length", "cos", "sin"},
                     {"out", "present_key", "present_value"}, gqa_attrs(h), kMs);
  c.output("out", DType::kF32);
  c.output("present_key", DType::kF32);
  c.output("present_value", DType::kF32);
  CaseModel m = c.finish(1, Tolerance{1e-5, 2e-5});
  for (CaseInput& in : m.inputs) {
    if (in.name == "seqlens_k") in.value.data_as<int32_t>()[0] = static_cast<int32_t>(tokens - 1);
  }
  return m;
}

}  // namespace

void add_attention_cases(std::vector<BenchCase>& cases) {
  for (const Heads& h : kHeads) {
    for (int64_t past : {128, 2048, 8192}) {
      std::string name = fmt::format("GroupQueryAttention/decode/{}/past{}", h.tag, past);
      cases.push_back({name,
                       fmt::format("com.microsoft.GroupQueryAttention, 1 token, {}/{} heads x {}, packed QKV, rotary, "
                                   "in-place cache of {} + 1 tokens",
                                   h.q, h.kv, kHeadSize, past),
                       [name, h, past] { return decode_case(name, h, past, 1); }});
      if (past < 2048) continue;
      const int64_t cache_bytes = 2 * h.kv * (past + 1) * kHeadSize * 4;
      name += "/cold";
      cases.push_back({name,
                       fmt::format("the decode step above in {} copies with their own caches (one run reads >= 64 MiB "
                                   "of KV cache, as a step of a many-layer model does)",
                                   cold_copies(cache_bytes)),
                       [name, h, past, cache_bytes] { return decode_case(name, h, past, cold_copies(cache_bytes)); }});
    }
    std::string name = fmt::format("GroupQueryAttention/prefill/{}/512", h.tag);
    cases.push_back({name,
                     fmt::format("com.microsoft.GroupQueryAttention, first prompt of 512 tokens, {}/{} heads x {}, "
                                 "packed QKV, rotary, causal",
                                 h.q, h.kv, kHeadSize),
                     [name, h] { return prefill_case(name, h, 512); }});
  }
}

}  // namespace ember::bench
