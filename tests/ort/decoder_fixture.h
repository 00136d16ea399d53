#pragma once
// Decoder fixtures (tools/make_decoder_fixtures.py) for tests and benchmarks:
// generating a model folder, reading its genai_config.json, and the per-step
// inputs of greedy generation with a non-shared KV cache (past P -> present P+S).
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor.h"

namespace ember::fixtures {

struct DecoderFixtureSpec {
  std::string family;            // llama qwen2 qwen3 phi3 gemma2 mistral optimum
  std::string weights = "int4";  // int4 or fp32
  std::string shape = "tiny";    // a preset of the generator
  std::string attention = "gqa";  // gqa, or mha: the older RotaryEmbedding + MultiHeadAttention export
  int layers = 0;                // 0: the preset's
  int vocab = 0;                 // 0: the preset's
  int max_length = 128;
  int window = 8;            // local_window_size of mistral and gemma2's sliding layers
  int original_length = 32;  // phi3 switches to the long rotary caches past this total length
  int seed = 1;
};

// "qwen2-int4-tiny", with "-l<layers>" / "-v<vocab>" / "-w<window>" when overridden and "-mha" for that form.
std::string fixture_name(const DecoderFixtureSpec& spec);

// Runs `generator` (tools/make_decoder_fixtures.py) with python3, the
// interpreter scripts/setup.sh gives onnx and numpy, into `out_dir`.
Status make_decoder_fixture(const DecoderFixtureSpec& spec, const std::string& generator, const std::string& out_dir);

struct DecoderConfig {
  int layers = 0;
  int kv_heads = 0;
  int head_size = 0;
  int vocab = 0;
  bool position_ids = false;  // optimum-style exports take position_ids
};

// The decoder section of `dir`/genai_config.json.
Result<DecoderConfig> read_decoder_config(const std::string& dir);

struct StepInput {
  std::string name;
  const Tensor* tensor;
};

// The inputs of one generation step for a batch of equal-length rows: input_ids,
// attention_mask (all ones over past + new tokens), position_ids when the model
// takes them, and past_key_values.*: zero-length on the first step, or, with a
// `shared_length`, buffers of that many rows that the model's present.* outputs
// are bound to (past_present_share_buffer, as onnxruntime-genai runs GQA models).
class DecoderFeeds {
 public:
  DecoderFeeds(DecoderConfig config, const std::vector<std::vector<int64_t>>& prompt, int64_t shared_length = 0);

  std::vector<StepInput> inputs() const;
  // With a shared length: where present.* go (graph order: present.0.key, present.0.value, ...).
  std::vector<Tensor*> shared_presents();
  // The next step: one new token per row; `presents` are the model's present.*
  // outputs in graph order (empty with a shared length: they were written in place).
  void advance(const std::vector<int64_t>& next_tokens, std::vector<Tensor> presents);
  int64_t past_length() const { return past_; }

 private:
  void set_tokens(const std::vector<std::vector<int64_t>>& rows);

  DecoderConfig config_;
  int64_t batch_ = 0;
  int64_t past_ = 0;
  int64_t shared_length_ = 0;
  Tensor input_ids_, attention_mask_, position_ids_;
  std::vector<Tensor> past_kv_;
};

}  // namespace ember::fixtures
