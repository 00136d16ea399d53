#include "ab_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <type_traits>

#include "case_builder.h"
#include "compare.h"
#include "onnx/model_loader.h"

namespace ember::bench {
namespace {

constexpr int64_t kSmall = 4096;     // per-run overhead dominates
constexpr int64_t kLarge = 1 << 20;  // kernel throughput dominates
constexpr int64_t kHidden[] = {896, 2048, 3072, 4096};  // Qwen2-0.5B, Llama-3.2-1B, -3B, Llama-3-8B
constexpr int64_t kTokens[] = {1, 128};                 // one decode step, one prompt chunk
// Rows of the embedding table Gather reads from: 2048 x 4096 f32 is 32 MiB, more
// than this machine's L3 share, so row reads come from memory as in a real model.
constexpr int64_t kVocabRows = 2048;

struct UnaryOp {
  const char* name;  // case name
  const char* op;    // op type; "" marks Silu, written as Sigmoid + Mul
  const char* domain;
};
constexpr UnaryOp kUnaryOps[] = {
    {"Relu", "Relu", ""}, {"Sigmoid", "Sigmoid", ""}, {"Tanh", "Tanh", ""},        {"Erf", "Erf", ""},
    {"Exp", "Exp", ""},   {"Gelu", "Gelu", kMs},      {"FastGelu", "FastGelu", kMs}, {"Silu", "", ""},
};

void add_unary_cases(std::vector<BenchCase>& cases, DType dtype, int64_t n) {
  for (const UnaryOp& u : kUnaryOps) {
    std::string name = fmt::format("{}/{}/{}", u.name, type_tag(dtype), size_tag(n));
    std::string what = *u.op ? fmt::format("{}{}{} over {}[{}]", u.domain, *u.domain ? "." : "", u.op,
                                           dtype_name(dtype), n)
                             : fmt::format("Sigmoid + Mul (SiLU) over {}[{}]", dtype_name(dtype), n);
    cases.push_back({name, what, [u, dtype, n, name] {
                       CaseBuilder c(name);
                       if (*u.domain) c.model().set_opset(u.domain, 1);
                       c.input("x", dtype, {n});
                       if (*u.op) {
                         c.model().add_node(u.op, {"x"}, {"y"}, {}, u.domain);
                       } else {
                         c.model().add_node("Sigmoid", {"x"}, {"s"});
                         c.model().add_node("Mul", {"x", "s"}, {"y"});
                       }
                       c.output("y", dtype);
                       return c.finish();
                     }});
  }
}

void add_binary_cases(std::vector<BenchCase>& cases, DType dtype, int64_t n) {
  std::string tags = fmt::format("{}/{}", type_tag(dtype), size_tag(n));
  cases.push_back({"MulScalar/" + tags, fmt::format("Mul of {}[{}] by a constant scalar", dtype_name(dtype), n),
                   [dtype, n, name = "MulScalar/" + tags] {
                     CaseBuilder c(name);
                     c.input("x", dtype, {n});
                     c.weight("c", dtype, {});
                     c.model().add_node("Mul", {"x", "c"}, {"y"});
                     c.output("y", dtype);
                     return c.finish();
                   }});
  cases.push_back({"Add/" + tags, fmt::format("Add of two {}[{}] inputs", dtype_name(dtype), n),
                   [dtype, n, name = "Add/" + tags] {
                     CaseBuilder c(name);
                     c.input("a", dtype, {n});
                     c.input("b", dtype, {n});
                     c.model().add_node("Add", {"a", "b"}, {"y"});
                     c.output("y", dtype);
                     return c.finish();
                   }});
}

void add_row_bias_cases(std::vector<BenchCase>& cases) {
  for (int64_t h : kHidden) {
    std::string name = fmt::format("AddBias/f32/128x{}", h);
    cases.push_back({name, fmt::format("Add of float32[128,{0}] and a constant float32[{0}] row bias", h),
                     [h, name] {
                       CaseBuilder c(name);
                       c.input("x", DType::kF32, {128, h});
                       c.weight("bias", DType::kF32, {h});
                       c.model().add_node("Add", {"x", "bias"}, {"y"});
                       c.output("y", DType::kF32);
                       return c.finish();
                     }});
  }
}

void add_cast_cases(std::vector<BenchCase>& cases) {
  constexpr std::pair<DType, DType> kCasts[] = {
      {DType::kF32, DType::kF16}, {DType::kF16, DType::kF32}, {DType::kF32, DType::kBF16}, {DType::kBF16, DType::kF32}};
  for (int64_t n : {kSmall, kLarge}) {
    for (auto [from, to] : kCasts) {
      std::string name = fmt::format("Cast/{}-{}/{}", type_tag(from), type_tag(to), size_tag(n));
      cases.push_back({name, fmt::format("Cast of {}[{}] to {}", dtype_name(from), n, dtype_name(to)),
                       [from, to, n, name] {
                         CaseBuilder c(name);
                         c.input("x", from, {n});
                         c.model().add_node("Cast", {"x"}, {"y"}, {attr_int("to", static_cast<int64_t>(to))});
                         c.output("y", to);
                         return c.finish();
                       }});
    }
  }
}

void add_transpose_case(std::vector<BenchCase>& cases, std::vector<int64_t> dims, std::vector<int64_t> perm) {
  std::string name = fmt::format("Transpose/f32/{}/{}", shape_tag(dims), fmt::join(perm, ""));
  cases.push_back({name, fmt::format("Transpose of float32[{}] by perm {}", fmt::join(dims, ","), fmt::join(perm, ",")),
                   [dims, perm, name] {
                     CaseBuilder c(name);
                     c.input("x", DType::kF32, dims);
                     c.model().add_node("Transpose", {"x"}, {"y"}, {attr_ints("perm", perm)});
                     c.output("y", DType::kF32);
                     return c.finish();
                   }});
}

// Two [rows, cols] halves joined on the last axis: every output row is two copies
// from different sources (the KV-cache append pattern).
void add_concat_case(std::vector<BenchCase>& cases, int64_t rows, int64_t cols) {
  std::string name = fmt::format("Concat/f32/2x{}x{}", rows, cols);
  cases.push_back({name, fmt::format("Concat of two float32[{},{}] on axis 1", rows, cols), [rows, cols, name] {
                     CaseBuilder c(name);
                     c.input("a", DType::kF32, {rows, cols});
                     c.input("b", DType::kF32, {rows, cols});
                     c.model().add_node("Concat", {"a", "b"}, {"y"}, {attr_int("axis", 1)});
                     c.output("y", DType::kF32);
                     return c.finish();
                   }});
}

void add_gather_case(std::vector<BenchCase>& cases, int64_t tokens, int64_t hidden) {
  std::string name = fmt::format("Gather/f32/{}x{}", tokens, hidden);
  cases.push_back({name,
                   fmt::format("Gather of {} row{} (int64 ids) from a constant float32[{},{}] embedding table",
                               tokens, tokens == 1 ? "" : "s", kVocabRows, hidden),
                   [tokens, hidden, name] {
                     CaseBuilder c(name);
                     c.weight("table", DType::kF32, {kVocabRows, hidden});
                     c.index_input("ids", {tokens}, kVocabRows);
                     c.model().add_node("Gather", {"table", "ids"}, {"y"}, {attr_int("axis", 0)});
                     c.output("y", DType::kF32);
                     return c.finish();
                   }});
}

// Norms and softmax over the last axis of [tokens, hidden], with constant weights.
void add_row_op_cases(std::vector<BenchCase>& cases) {
  struct RowOp {
    const char* name;
    const char* what;
    void (*build)(CaseBuilder& c, int64_t tokens, int64_t hidden);
  };
  static constexpr RowOp kRowOps[] = {
      {"LayerNorm", "LayerNormalization (axis -1, constant scale and bias)",
       [](CaseBuilder& c, int64_t t, int64_t h) {
         c.input("x", DType::kF32, {t, h});
         c.weight("scale", DType::kF32, {h});
         c.weight("bias", DType::kF32, {h});
         c.model().add_node("LayerNormalization", {"x", "scale", "bias"}, {"y"},
                            {attr_int("axis", -1), attr_float("epsilon", 1e-5f)});
         c.output("y", DType::kF32);
       }},
      {"SimplifiedLayerNorm", "SimplifiedLayerNormalization (RMSNorm; default domain, as ORT registers it)",
       [](CaseBuilder& c, int64_t t, int64_t h) {
         c.input("x", DType::kF32, {t, h});
         c.weight("scale", DType::kF32, {h});
         c.model().add_node("SimplifiedLayerNormalization", {"x", "scale"}, {"y"},
                            {attr_int("axis", -1), attr_float("epsilon", 1e-6f)});
         c.output("y", DType::kF32);
       }},
      {"SkipSimplifiedLayerNorm", "com.microsoft.SkipSimplifiedLayerNormalization (outputs: normalized and the sum)",
       [](CaseBuilder& c, int64_t t, int64_t h) {
         c.model().set_opset(kMs, 1);
         c.input("x", DType::kF32, {t, h});
         c.input("skip", DType::kF32, {t, h});
         c.weight("gamma", DType::kF32, {h});
         c.model().add_node("SkipSimplifiedLayerNormalization", {"x", "skip", "gamma"}, {"y", "", "", "sum"},
                            {attr_float("epsilon", 1e-6f)}, kMs);
         c.output("y", DType::kF32);
         c.output("sum", DType::kF32);
       }},
      {"Softmax", "Softmax over the last axis",
       [](CaseBuilder& c, int64_t t, int64_t h) {
         c.input("x", DType::kF32, {t, h});
         c.model().add_node("Softmax", {"x"}, {"y"}, {attr_int("axis", -1)});
         c.output("y", DType::kF32);
       }},
  };
  for (const RowOp& op : kRowOps) {
    for (int64_t t : kTokens) {
      for (int64_t h : kHidden) {
        std::string name = fmt::format("{}/f32/{}x{}", op.name, t, h);
        cases.push_back({name, fmt::format("{} of float32[{},{}]", op.what, t, h), [&op, t, h, name] {
                           CaseBuilder c(name);
                           op.build(c, t, h);
                           return c.finish();
                         }});
      }
    }
  }
}

}  // namespace

std::vector<BenchCase> default_cases() {
  std::vector<BenchCase> cases;
  for (const FloatType& t : kFloatTypes) {
    for (int64_t n : {kSmall, kLarge}) {
      add_unary_cases(cases, t.dtype, n);
      add_binary_cases(cases, t.dtype, n);
    }
  }
  add_row_bias_cases(cases);
  add_cast_cases(cases);
  add_transpose_case(cases, {64, 64}, {1, 0});
  add_transpose_case(cases, {1024, 1024}, {1, 0});
  add_transpose_case(cases, {1, 128, 32, 64}, {0, 2, 1, 3});
  add_concat_case(cases, 32, 64);
  add_concat_case(cases, 128, 896);
  add_concat_case(cases, 128, 4096);
  for (int64_t t : kTokens) {
    add_gather_case(cases, t, 896);
    add_gather_case(cases, t, 4096);
  }
  add_row_op_cases(cases);
  add_gemm_cases(cases);
  add_lowp_gemm_cases(cases);
  add_nbits_cases(cases);
  add_integer_cases(cases);
  add_gbq_cases(cases);
  add_attention_cases(cases);
  add_overhead_cases(cases);
  add_conv_cases(cases);
  add_image_cases(cases);
  add_recurrent_cases(cases);
  return cases;
}

Result<CaseModel> model_file_case(const std::string& path, const std::vector<std::pair<std::string, int64_t>>& dims) {
  EMBER_ASSIGN_OR_RETURN(onnx::LoadedModel loaded, onnx::load_model(path));
  const ir::Graph& graph = *loaded.graph;
  CaseModel model;
  model.path = path;
  std::mt19937_64 rng(1234);
  for (ir::ValueId id : graph.inputs) {
    const ir::Value& v = graph.value(id);
    if (!v.has_shape) return invalid_argument("input '{}' has no declared shape", v.name);
    std::vector<int64_t> shape;
    for (const ir::Dim& d : v.shape) {
      auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& p) { return p.first == d.symbol; });
      shape.push_back(d.known() ? d.value : it != dims.end() ? it->second : 1);
    }
    if (dtype_size(v.dtype) == 0)
      return not_implemented("input '{}' has dtype {}, which ember_ab cannot fill", v.name, dtype_name(v.dtype));
    model.inputs.push_back({v.name, random_tensor(v.dtype, shape, rng, -1.0f, 1.0f, 4)});
  }
  return model;
}

Result<CaseModel> decoder_step_case(const std::string& path, int64_t past) {
  EMBER_ASSIGN_OR_RETURN(onnx::LoadedModel loaded, onnx::load_model(path));
  const ir::Graph& graph = *loaded.graph;
  const bool shared = std::any_of(graph.nodes.begin(), graph.nodes.end(),
                                  [](const ir::Node& n) { return n.op_type == "GroupQueryAttention"; });
  CaseModel model;
  model.path = path;
  const bool int8_activations = std::any_of(graph.nodes.begin(), graph.nodes.end(), [](const ir::Node& n) {
    return n.op_type == "MatMulNBits" && ir::AttrReader(n).get_int("accuracy_level", 0) == 4;
  });
  const auto layers = static_cast<int>(std::count_if(graph.inputs.begin(), graph.inputs.end(), [&](ir::ValueId id) {
    return graph.value(id).name.starts_with("past_key_values.") && graph.value(id).name.ends_with(".key");
  }));
  model.rms_tolerance = ortref::decoder_logits_tolerance(int8_activations, layers);
  std::mt19937_64 rng(1234);
  constexpr std::string_view kPast = "past_key_values.";
  for (ir::ValueId id : graph.inputs) {
    const ir::Value& v = graph.value(id);
    if (v.name == "input_ids") {
      model.inputs.push_back({v.name, random_tensor(v.dtype, {1, 1}, rng, 0, 0, 4)});
    } else if (v.name == "attention_mask") {
      Tensor mask = Tensor::allocate(v.dtype, {1, past + 1});
      for (int64_t i = 0; i < mask.numel(); ++i) mask.data_as<int64_t>()[i] = 1;
      model.inputs.push_back({v.name, std::move(mask)});
    } else if (v.name == "position_ids") {
      Tensor pos = Tensor::allocate(v.dtype, {1, 1});
      pos.data_as<int64_t>()[0] = past;
      model.inputs.push_back({v.name, std::move(pos)});
    } else if (v.name.starts_with(kPast) && v.has_shape && v.shape.size() == 4 && v.shape[1].known() &&
               v.shape[3].known()) {
      const std::vector<int64_t> dims = {1, v.shape[1].value, shared ? past + 1 : past, v.shape[3].value};
      model.inputs.push_back({v.name, random_tensor(v.dtype, dims, rng, -1.0f, 1.0f, 0)});
      if (shared) model.bound_outputs.emplace_back("present." + v.name.substr(kPast.size()), v.name);
    } else {
      return invalid_argument("--decode-step: input '{}' is not one a decoder export has (input_ids, "
                              "attention_mask, position_ids, past_key_values.N.key/value [B, kv_heads, past, head])",
                              v.name);
    }
  }
  return model;
}

}  // namespace ember::bench
