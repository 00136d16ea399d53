#include "genai/decoder_io.h"

namespace ember::genai {

int find_io(const std::vector<runtime::IoInfo>& infos, std::string_view name) {
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Result<DecoderIo> bind_decoder_io(const GenaiConfig& config, const runtime::Session& session,
                                  std::span<const std::string_view> extra_inputs) {
  const DecoderConfig& d = config.decoder;
  const auto& inputs = session.inputs();
  const auto& outputs = session.outputs();
  DecoderIo io;
  io.input_ids = find_io(inputs, d.input_ids);
  io.attention_mask = find_io(inputs, d.attention_mask);
  io.position_ids = find_io(inputs, d.position_ids);
  io.logits = find_io(outputs, d.logits);
  if (io.input_ids < 0) {
    return invalid_model("{}: the decoder has no input '{}' (input_ids)", config.dir, d.input_ids);
  }
  if (io.logits < 0) return invalid_model("{}: the decoder has no output '{}' (logits)", config.dir, d.logits);
  if (outputs[static_cast<size_t>(io.logits)].dtype != DType::kF32) {
    return not_implemented("{}: logits of type {}: Ember samples from float32 logits", config.dir,
                           dtype_name(outputs[static_cast<size_t>(io.logits)].dtype));
  }
  for (int layer = 0; layer < d.num_hidden_layers; ++layer) {
    for (const std::string* name : {&d.past_key_names, &d.past_value_names}) {
      const std::string n = layer_name(*name, layer);
      const int at = find_io(inputs, n);
      if (at < 0) {
        return invalid_model("{}: the decoder has no input '{}' (layer {} of {})", config.dir, n, layer,
                             d.num_hidden_layers);
      }
      io.past.push_back(at);
    }
    for (const std::string* name : {&d.present_key_names, &d.present_value_names}) {
      const std::string n = layer_name(*name, layer);
      const int at = find_io(outputs, n);
      if (at < 0) {
        return invalid_model("{}: the decoder has no output '{}' (layer {} of {})", config.dir, n, layer,
                             d.num_hidden_layers);
      }
      io.present.push_back(at);
    }
  }
  const size_t known = 1 + (io.attention_mask >= 0) + (io.position_ids >= 0) + io.past.size() + extra_inputs.size();
  if (known != inputs.size()) {
    for (const runtime::IoInfo& info : inputs) {
      bool listed = info.name == d.input_ids || info.name == d.attention_mask || info.name == d.position_ids;
      for (int at : io.past) listed = listed || inputs[static_cast<size_t>(at)].name == info.name;
      for (std::string_view extra : extra_inputs) listed = listed || info.name == extra;
      if (!listed && !info.has_default) {
        return invalid_model("{}: decoder input '{}' is none of those genai_config.json names", config.dir, info.name);
      }
    }
  }
  io.kv_dtype = inputs[static_cast<size_t>(io.past.front())].dtype;
  // [batch, kv_heads, sequence, head_size] where the graph declares them.
  for (int at : io.past) {
    const runtime::IoInfo& info = inputs[static_cast<size_t>(at)];
    if (!info.has_shape) continue;
    const std::vector<ir::Dim>& dims = info.shape;
    if (dims.size() != 4 || (dims[1].known() && dims[1].value != d.num_key_value_heads) ||
        (dims[3].known() && dims[3].value != d.head_size) || info.dtype != io.kv_dtype) {
      return invalid_model("{}: decoder input '{}' is declared {} {}; the config says [batch, {}, sequence, {}] {}",
                           config.dir, info.name, dtype_name(info.dtype), ir::dims_to_string(dims),
                           d.num_key_value_heads, d.head_size, dtype_name(io.kv_dtype));
    }
  }
  return io;
}

}  // namespace ember::genai
