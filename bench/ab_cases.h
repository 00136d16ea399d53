#pragma once
// The models ember_ab times: the built-in suite of single-op models (written in
// memory with the test ModelBuilder, so Ember and ONNX Runtime read the same
// bytes), or one model file with random inputs of its declared shapes.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <optional>

#include "base/status.h"
#include "base/tensor_compare.h"
#include "base/tensor.h"

namespace ember::bench {

struct CaseInput {
  std::string name;
  Tensor value;
};

struct CaseModel {
  std::string bytes;              // a serialized ModelProto
  std::vector<CaseInput> inputs;  // every graph input, with its value
  // How many independent copies of the timed op the model holds: cold cases
  // cycle through more weight bytes than the L3 holds. Times are reported per
  // copy; ratios are unaffected.
  int64_t copies = 1;
  // How close Ember's outputs must be to ORT's; unset: the whole-model default
  // of the output dtype (tests/ort/compare.cpp).
  std::optional<Tolerance> tolerance;
  // (output, input): timed runs write the output into the input's buffer, as a
  // decode loop binds present KV to past KV (past_present_share_buffer).
  std::vector<std::pair<std::string, std::string>> bound_outputs;
  // Instead of bytes: a model file, read with its external data.
  std::string path;
  // Decoder models: only the output named "logits" is compared, by
  // tests/ort/compare.h check_logits with this tolerance. (Present KV is checked
  // by the parity tests, which carry it through 32 decode steps.)
  std::optional<double> rms_tolerance;
};

struct BenchCase {
  std::string name;  // "Sigmoid/f32/1Mi", "LayerNorm/f32/128x4096"
  std::string what;  // one line for --list
  std::function<Result<CaseModel>()> build;  // lazily: only the cases that pass --filter
};

// The suite, in a fixed order: elementwise (f32, f16, bf16) at 4Ki and 1Mi
// elements, casts, data movement, then norms and softmax at LLM shapes
// (tokens 1 and 128 x hidden 896, 2048, 3072, 4096).
std::vector<BenchCase> default_cases();

// `path` with random inputs of its declared shapes; `dims` sets symbolic
// dimensions (others are 1). Float inputs are uniform in [-1, 1], integer inputs
// 0..3 (a valid token id, position or index in any model).
Result<CaseModel> model_file_case(const std::string& path, const std::vector<std::pair<std::string, int64_t>>& dims);
// One decode step of a decoder export after `past` tokens: input_ids [B, 1]
// (B = 1), attention_mask all ones [1, past + 1], position_ids [[past]] when the
// model takes them, past_key_values.* random. With GroupQueryAttention the past
// buffers hold past + 1 rows and present.* are bound to them
// (past_present_share_buffer); otherwise they hold past rows.
Result<CaseModel> decoder_step_case(const std::string& path, int64_t past);

}  // namespace ember::bench
