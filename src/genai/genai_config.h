#pragma once
// genai_config.json of an onnxruntime-genai model folder: the decoder's file,
// shapes and input/output name templates, the special token ids, and the
// `search` defaults of generation.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ember::genai {

struct SearchConfig {
  bool do_sample = false;
  int max_length = 0;  // 0: the model's context_length
  int min_length = 0;
  float temperature = 1.0f;
  int top_k = 50;  // onnxruntime-genai's default
  float top_p = 1.0f;
  float repetition_penalty = 1.0f;
  bool past_present_share_buffer = true;
  int64_t random_seed = -1;  // -1: seeded from the clock
};

// decoder.sliding_window of onnxruntime-genai: the layers (all when `layers`
// is empty) that attend to the last `window_size` positions only.
// slide_key_value_cache and slide_inputs default to true there, as here.
struct SlidingWindowConfig {
  int window_size = 0;
  int cache_slack = 0;  // positions kept beyond the window; 0: the runtime's default
  bool slide_key_value_cache = true;
  bool slide_inputs = true;
  std::vector<int> layers;
};

struct DecoderConfig {
  std::string filename = "model.onnx";
  int head_size = 0;
  int hidden_size = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int num_hidden_layers = 0;
  int intra_op_num_threads = 0;  // session_options; 0: Ember's default
  // Input and output names; the key/value ones are printf templates over the layer.
  std::string input_ids = "input_ids";
  std::string attention_mask = "attention_mask";
  std::string position_ids = "position_ids";
  std::string past_key_names = "past_key_values.%d.key";
  std::string past_value_names = "past_key_values.%d.value";
  std::string logits = "logits";
  std::string present_key_names = "present.%d.key";
  std::string present_value_names = "present.%d.value";
  std::optional<SlidingWindowConfig> sliding_window;
};

struct GenaiConfig {
  std::string type;
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = -1;
  // Tool-call and reasoning delimiters (onnxruntime-genai's Tokenizer exposes
  // them; they neither stop nor steer generation): -1 when absent.
  int64_t bot_token_id = -1;  // begin of a tool call
  int64_t eot_token_id = -1;  // end of a tool call
  int64_t bor_token_id = -1;  // begin of reasoning
  int64_t eor_token_id = -1;  // end of reasoning
  int context_length = 0;
  int vocab_size = 0;
  DecoderConfig decoder;
  SearchConfig search;
  std::string dir;  // the model folder (empty when parsed from text)
  // Fields neither onnxruntime-genai nor Ember knows, by path: ignored, so a
  // folder from a newer exporter still loads; the command line prints them.
  std::vector<std::string> warnings;

  std::string decoder_path() const { return dir.empty() ? decoder.filename : dir + "/" + decoder.filename; }
  bool is_eos(int64_t token) const;
};

// Parses the text of a genai_config.json. Every field onnxruntime-genai knows
// is accepted when its value has the right type, whether Ember uses it or not
// (beam search, provider options, logging); a field neither knows is recorded
// in `warnings` and ignored (onnxruntime-genai itself refuses those, but the
// folder may come from a newer exporter). A malformed value of a known field
// is an error naming its path. Model types other than decoder-only text
// models are refused by name.
Result<GenaiConfig> parse_genai_config(std::string_view text);
// `dir`/genai_config.json.
Result<GenaiConfig> load_genai_config(const std::string& dir);
// "present.%d.key", 3 -> "present.3.key".
std::string layer_name(const std::string& name_template, int layer);

}  // namespace ember::genai
