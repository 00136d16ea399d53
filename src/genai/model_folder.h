#pragma once
// A model folder as exporters write it: onnxruntime-genai's model builder
// (genai_config.json) or Hugging Face optimum and transformers.js (config.json,
// generation_config.json, model.onnx or onnx/model*.onnx, no genai_config.json).
#include <string>

#include "base/status.h"
#include "genai/genai_config.h"

namespace ember::genai {

// The folder's generation config. With genai_config.json, that file (and
// `decoder_file`, when given, replaces its decoder filename). Without it, the
// config is derived from config.json and generation_config.json: the decoder
// is `decoder_file`, else model.onnx, else onnx/model.onnx; inputs and outputs
// carry optimum's names (input_ids, attention_mask, position_ids,
// past_key_values.N.key/value -> logits, present.N.key/value), checked
// against the graph when it loads; the KV layout comes from num_hidden_layers,
// num_key_value_heads and head_dim; EOS and BOS ids and the search defaults
// (do_sample, temperature, top_k, top_p, repetition_penalty) from
// generation_config.json over config.json; the context from
// max_position_embeddings. `decoder_file` is relative to the folder.
Result<GenaiConfig> load_model_folder(const std::string& dir, const std::string& decoder_file = "");

// Parses config.json and (possibly empty) generation_config.json texts.
Result<GenaiConfig> config_from_hugging_face(std::string_view config_json, std::string_view generation_config_json);

}  // namespace ember::genai
