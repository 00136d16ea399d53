#include "decoder_fixture.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include <fmt/format.h>

namespace ember::fixtures {

std::string fixture_name(const DecoderFixtureSpec& spec) {
  std::string name = spec.family + "-" + spec.weights + "-" + spec.shape;
  if (spec.layers > 0) name += "-l" + std::to_string(spec.layers);
  if (spec.vocab > 0) name += "-v" + std::to_string(spec.vocab);
  if (spec.attention != "gqa") name += "-" + spec.attention;
  if (spec.window != DecoderFixtureSpec{}.window) name += "-w" + std::to_string(spec.window);
  return name;
}

Status make_decoder_fixture(const DecoderFixtureSpec& spec, const std::string& generator, const std::string& out_dir) {
  std::string cmd = fmt::format(
      "python3 '{}' --family {} --weights {} --shape {} --attention {} --max-length {} --window {} --original-length {} "
      "--seed {} --out '{}'",
      generator, spec.family, spec.weights, spec.shape, spec.attention, spec.max_length, spec.window,
      spec.original_length, spec.seed, out_dir);
  if (spec.layers > 0) cmd += fmt::format(" --layers {}", spec.layers);
  if (spec.vocab > 0) cmd += fmt::format(" --vocab {}", spec.vocab);
  int rc = std::system(cmd.c_str());
  if (rc != 0) return io_error("decoder fixture {}: '{}' exited with {}", fixture_name(spec), cmd, rc);
  return Status::ok();
}

Result<DecoderConfig> read_decoder_config(const std::string& dir) {
  std::string path = dir + "/genai_config.json";
  std::ifstream in(path);
  if (!in) return io_error("cannot open {}", path);
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.contains("model")) return invalid_model("{}: not a genai_config.json", path);
  const auto& model = json["model"];
  const auto& decoder = model["decoder"];
  DecoderConfig config;
  config.layers = decoder.value("num_hidden_layers", 0);
  config.kv_heads = decoder.value("num_key_value_heads", 0);
  config.head_size = decoder.value("head_size", 0);
  config.vocab = model.value("vocab_size", 0);
  config.position_ids = decoder["inputs"].contains("position_ids");
  if (config.layers <= 0 || config.kv_heads <= 0 || config.head_size <= 0 || config.vocab <= 0) {
    return invalid_model("{}: layers {}, kv heads {}, head size {}, vocab {} must be positive", path, config.layers,
                         config.kv_heads, config.head_size, config.vocab);
  }
  return config;
}

DecoderFeeds::DecoderFeeds(DecoderConfig config, const std::vector<std::vector<int64_t>>& prompt,
                           int64_t shared_length)
    : config_(config), batch_(static_cast<int64_t>(prompt.size())), shared_length_(shared_length) {
  for (int i = 0; i < 2 * config_.layers; ++i) {
    past_kv_.push_back(Tensor::allocate(DType::kF32, {batch_, config_.kv_heads, shared_length_, config_.head_size}));
  }
  set_tokens(prompt);
}

std::vector<Tensor*> DecoderFeeds::shared_presents() {
  std::vector<Tensor*> out;
  for (Tensor& t : past_kv_) out.push_back(&t);
  return out;
}

void DecoderFeeds::set_tokens(const std::vector<std::vector<int64_t>>& rows) {
  auto s = static_cast<int64_t>(rows.front().size());
  input_ids_ = Tensor::allocate(DType::kI64, {batch_, s});
  position_ids_ = Tensor::allocate(DType::kI64, {batch_, s});
  attention_mask_ = Tensor::allocate(DType::kI64, {batch_, past_ + s});
  for (int64_t b = 0; b < batch_; ++b) {
    for (int64_t i = 0; i < s; ++i) {
      input_ids_.data_as<int64_t>()[b * s + i] = rows[static_cast<size_t>(b)][static_cast<size_t>(i)];
      position_ids_.data_as<int64_t>()[b * s + i] = past_ + i;
    }
  }
  std::fill_n(attention_mask_.data_as<int64_t>(), attention_mask_.numel(), int64_t{1});
}

std::vector<StepInput> DecoderFeeds::inputs() const {
  std::vector<StepInput> in = {{"input_ids", &input_ids_}, {"attention_mask", &attention_mask_}};
  if (config_.position_ids) in.push_back({"position_ids", &position_ids_});
  for (int layer = 0; layer < config_.layers; ++layer) {
    in.push_back({fmt::format("past_key_values.{}.key", layer), &past_kv_[2 * static_cast<size_t>(layer)]});
    in.push_back({fmt::format("past_key_values.{}.value", layer), &past_kv_[2 * static_cast<size_t>(layer) + 1]});
  }
  return in;
}

void DecoderFeeds::advance(const std::vector<int64_t>& next_tokens, std::vector<Tensor> presents) {
  past_ += input_ids_.dim(1);
  if (shared_length_ == 0) past_kv_ = std::move(presents);
  std::vector<std::vector<int64_t>> rows;
  for (int64_t token : next_tokens) rows.push_back({token});
  set_tokens(rows);
}

}  // namespace ember::fixtures
