// genai_config.json: a config as onnxruntime-genai's model builder writes it
// (Qwen2.5-0.5B-Instruct's, CPU int4), the eos list form, defaults, and one
// malformed field at a time, each named in the error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "genai/genai_config.h"
#include "genai/generator.h"
#include "genai/model_folder.h"

namespace ember::genai {
namespace {

const char* kQwenConfig = R"({
  "model": {
    "bos_token_id": 151643,
    "context_length": 32768,
    "decoder": {
      "session_options": {"log_id": "onnxruntime-genai", "intra_op_num_threads": 2, "provider_options": []},
      "filename": "model.onnx",
      "head_size": 64,
      "hidden_size": 896,
      "inputs": {
        "input_ids": "input_ids",
        "attention_mask": "attention_mask",
        "past_key_names": "past_key_values.%d.key",
        "past_value_names": "past_key_values.%d.value"
      },
      "outputs": {"logits": "logits", "present_key_names": "present.%d.key", "present_value_names": "present.%d.value"},
      "num_attention_heads": 14,
      "num_hidden_layers": 24,
      "num_key_value_heads": 2
    },
    "eos_token_id": [151645, 151643],
    "pad_token_id": 151643,
    "type": "qwen2",
    "vocab_size": 151936
  },
  "search": {
    "diversity_penalty": 0.0, "do_sample": true, "early_stopping": true, "length_penalty": 1.0,
    "max_length": 32768, "min_length": 0, "no_repeat_ngram_size": 0, "num_beams": 1,
    "num_return_sequences": 1, "past_present_share_buffer": true, "repetition_penalty": 1.1,
    "temperature": 0.7, "top_k": 20, "top_p": 0.8, "random_seed": 42
  }
})";

nlohmann::json qwen() { return nlohmann::json::parse(kQwenConfig); }

TEST(GenaiConfig, ModelBuilderConfig) {
  auto c = parse_genai_config(kQwenConfig);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->type, "qwen2");
  EXPECT_EQ(c->bos_token_id, 151643);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_TRUE(c->is_eos(151643));
  EXPECT_FALSE(c->is_eos(0));
  EXPECT_EQ(c->pad_token_id, 151643);
  EXPECT_EQ(c->context_length, 32768);
  EXPECT_EQ(c->vocab_size, 151936);
  EXPECT_EQ(c->decoder.head_size, 64);
  EXPECT_EQ(c->decoder.hidden_size, 896);
  EXPECT_EQ(c->decoder.num_attention_heads, 14);
  EXPECT_EQ(c->decoder.num_key_value_heads, 2);
  EXPECT_EQ(c->decoder.num_hidden_layers, 24);
  EXPECT_EQ(c->decoder.intra_op_num_threads, 2);
  EXPECT_EQ(layer_name(c->decoder.past_key_names, 7), "past_key_values.7.key");
  EXPECT_EQ(layer_name(c->decoder.present_value_names, 23), "present.23.value");
  EXPECT_EQ(c->decoder_path(), "model.onnx");
  EXPECT_TRUE(c->search.do_sample);
  EXPECT_TRUE(c->search.past_present_share_buffer);
  EXPECT_EQ(c->search.max_length, 32768);
  EXPECT_EQ(c->search.top_k, 20);
  EXPECT_FLOAT_EQ(c->search.top_p, 0.8f);
  EXPECT_FLOAT_EQ(c->search.temperature, 0.7f);
  EXPECT_FLOAT_EQ(c->search.repetition_penalty, 1.1f);
  EXPECT_EQ(c->search.random_seed, 42);
}

TEST(GenaiConfig, SingleEosDefaultsAndRenamedInputs) {
  nlohmann::json j = qwen();
  j["model"]["eos_token_id"] = 2;
  j["model"]["decoder"]["inputs"]["position_ids"] = "pos";
  j["model"]["decoder"]["outputs"]["logits"] = "scores";
  j.erase("search");
  j["model"]["context_length"] = 4096;
  auto c = parse_genai_config(j.dump());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(c->decoder.position_ids, "pos");
  EXPECT_EQ(c->decoder.logits, "scores");
  EXPECT_EQ(c->search.max_length, 4096);  // no search section: the context length
  EXPECT_FALSE(c->search.do_sample);
  EXPECT_TRUE(c->search.past_present_share_buffer);
}

// Each edit breaks one field; the error must name it.
TEST(GenaiConfig, MalformedFieldsAreNamed) {
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"/model/decoder/head_size", "64", "model.decoder.head_size: expected an integer"},
      {"/model/decoder/head_size", 0, "model.decoder.head_size"},
      {"/model/decoder/num_hidden_layers", 2.5, "model.decoder.num_hidden_layers"},
      {"/model/decoder/inputs/past_key_names", "past.key", "model.decoder.inputs.past_key_names"},
      {"/model/decoder/outputs/logits", 3, "model.decoder.outputs.logits: expected a string"},
      {"/model/decoder/session_options/intra_op_num_threads", -1, "intra_op_num_threads"},
      {"/model/decoder/num_attention_heads", 15, "num_attention_heads 15 is not a multiple"},
      {"/model/eos_token_id", nlohmann::json::array({1, "x"}), "model.eos_token_id[1]"},
      {"/model/eos_token_id", nlohmann::json::array(), "model.eos_token_id: an empty list"},
      {"/model/eos_token_id", 200000, "eos_token_id 200000 is not below vocab_size"},
      {"/model/bos_token_id", -5, "model.bos_token_id"},
      {"/model/type", "resnet", "unknown model type 'resnet'"},
      {"/model/type", "whisper", "'whisper' needs more than one model"},
      {"/search/top_p", 1.5, "search.top_p"},
      {"/search/temperature", -1, "search.temperature"},
      {"/search/do_sample", 1, "search.do_sample: expected true or false"},
      {"/search/num_beams", 4, "search.num_beams"},
      {"/search/chunk_size", "x", "search.chunk_size: expected an integer"},
      {"/model/bot_token_id", 200000, "model.bot_token_id 200000 is not below vocab_size"},
      {"/model/eor_token_id", "x", "model.eor_token_id: expected an integer"},
      {"/model/vision", 3, "model.vision: expected an object"},
      {"/model/decoder/inputs/block_table", 1, "model.decoder.inputs.block_table: expected a string"},
      {"/model/decoder/layer_types", "x", "model.decoder.layer_types: expected a list"},
      {"/model/decoder/pipeline", nlohmann::json::array(), "model.decoder.pipeline: a pipeline"},
      {"/model/decoder/sliding_window", 32, "model.decoder.sliding_window: expected an object"},
      {"/model/decoder/sliding_window", nlohmann::json::object(), "sliding_window.window_size is missing"},
      {"/model/decoder/sliding_window", {{"window_size", 0}}, "sliding_window.window_size"},
      {"/model/decoder/sliding_window", {{"window_size", 32}, {"layers", {0, 24}}},
       "layer 24 is not below num_hidden_layers 24"},
      {"/model/decoder/sliding_window", {{"window_size", 32}, {"slide_inputs", 0}},
       "sliding_window.slide_inputs: expected true or false"},
      {"/model/decoder/sliding_window", {{"window_size", 32}, {"cache_slack", -1}}, "sliding_window.cache_slack"},
      {"/model/decoder/sliding_window", {{"window_size", 32}, {"alignment", "middle"}}, "sliding_window.alignment"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = qwen();
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    auto parsed = parse_genai_config(j.dump());
    ASSERT_FALSE(parsed.is_ok()) << c.pointer;
    EXPECT_NE(parsed.status().message().find(c.expected), std::string::npos)
        << c.pointer << ": " << parsed.status().to_string();
  }
}

// Fields today's model builder writes (onnxruntime-genai 0.18: qwen3 and gemma2 folders).
TEST(GenaiConfig, BuilderFieldsOfToday) {
  nlohmann::json j = qwen();
  j["model"]["bot_token_id"] = 151657;
  j["model"]["eot_token_id"] = 151658;
  j["model"]["bor_token_id"] = 151667;
  j["model"]["eor_token_id"] = 151668;
  j["model"]["decoder"]["sliding_window"] = {{"window_size", 32}, {"slide_key_value_cache", false},
                                             {"slide_inputs", false}, {"layers", {0, 2}}, {"cache_slack", 0}};
  j["search"]["chunk_size"] = 512;
  auto c = parse_genai_config(j.dump());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE(c->warnings.empty());
  EXPECT_EQ(c->bot_token_id, 151657);
  EXPECT_EQ(c->eot_token_id, 151658);
  EXPECT_EQ(c->bor_token_id, 151667);
  EXPECT_EQ(c->eor_token_id, 151668);
  ASSERT_TRUE(c->decoder.sliding_window.has_value());
  const SlidingWindowConfig& w = *c->decoder.sliding_window;
  EXPECT_EQ(w.window_size, 32);
  EXPECT_FALSE(w.slide_key_value_cache);
  EXPECT_FALSE(w.slide_inputs);
  EXPECT_EQ(w.layers, (std::vector<int>{0, 2}));
  EXPECT_EQ(w.cache_slack, 0);
  // onnxruntime-genai's defaults: both slides on when the fields are absent.
  j["model"]["decoder"]["sliding_window"] = {{"window_size", 4096}};
  auto defaults = parse_genai_config(j.dump());
  ASSERT_TRUE(defaults.is_ok()) << defaults.status().to_string();
  EXPECT_TRUE(defaults->decoder.sliding_window->slide_key_value_cache);
  EXPECT_TRUE(defaults->decoder.sliding_window->slide_inputs);
  EXPECT_TRUE(defaults->decoder.sliding_window->layers.empty());
  EXPECT_EQ(parse_genai_config(kQwenConfig)->bot_token_id, -1);
}

// A field nobody knows is a warning naming it, and the folder still loads.
TEST(GenaiConfig, UnknownFieldsWarnAndLoad) {
  nlohmann::json j = qwen();
  j["model"]["decoder"]["unknown_knob"] = 1;
  j["model"]["decoder"]["inputs"]["token_type_ids"] = "t";
  j["model"]["decoder"]["sliding_window"] = {{"window_size", 32}, {"future", true}};
  j["search"]["beam_width"] = 4;
  j["extra"] = {{"a", 1}};
  auto c = parse_genai_config(j.dump());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  std::vector<std::string> expected = {"extra", "model.decoder.inputs.token_type_ids",
                                       "model.decoder.sliding_window.future", "model.decoder.unknown_knob",
                                       "search.beam_width"};
  ASSERT_EQ(c->warnings.size(), expected.size());
  for (const std::string& path : expected) {
    const std::string message = "genai_config.json: unknown field " + path + " (ignored)";
    EXPECT_NE(std::find(c->warnings.begin(), c->warnings.end(), message), c->warnings.end()) << message;
  }
  EXPECT_EQ(c->decoder.head_size, 64);
}

TEST(GenaiConfig, MissingSections) {
  for (const char* field : {"decoder", "type", "vocab_size", "eos_token_id", "context_length"}) {
    nlohmann::json j = qwen();
    j["model"].erase(field);
    auto parsed = parse_genai_config(j.dump());
    ASSERT_FALSE(parsed.is_ok()) << field;
    EXPECT_NE(parsed.status().message().find(field), std::string::npos) << parsed.status().to_string();
  }
  EXPECT_FALSE(parse_genai_config("{\"model\": ").is_ok());
  EXPECT_FALSE(parse_genai_config("[]").is_ok());
  auto missing = load_genai_config("/nonexistent-folder");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("/nonexistent-folder/genai_config.json"), std::string::npos);
}

// max_length and min_length count the prompt, as onnxruntime-genai's do.
TEST(GenaiConfig, SearchDefaultsToParams) {
  auto c = parse_genai_config(kQwenConfig);
  ASSERT_TRUE(c.is_ok());
  c->search.max_length = 100;
  c->search.min_length = 30;
  GenerationParams p = params_from_search(c->search, 20);
  EXPECT_EQ(p.max_new_tokens, 80);
  EXPECT_EQ(p.min_new_tokens, 10);
  EXPECT_FALSE(p.sampling.greedy);
  EXPECT_EQ(p.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.8f);
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(p.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(p.sampling.seed, 42u);
  c->search.do_sample = false;
  EXPECT_TRUE(params_from_search(c->search, 200).sampling.greedy);
  EXPECT_EQ(params_from_search(c->search, 200).max_new_tokens, 1);
  EXPECT_EQ(params_from_search(c->search, 200).min_new_tokens, 0);
}

// config.json and generation_config.json as transformers 4.57 saves them for
// a Qwen2 model with GQA (what optimum exports copy next to model.onnx).
const char* kHfQwen2 = R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 151665,
  "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 2048, "bos_token_id": 151643, "eos_token_id": 151645, "tie_word_embeddings": true})";
const char* kHfGeneration = R"({"bos_token_id": 151643, "eos_token_id": [151645, 151643], "do_sample": true,
  "temperature": 0.7, "top_k": 20, "top_p": 0.8, "repetition_penalty": 1.05})";

TEST(HuggingFaceConfig, OptimumFolderConfig) {
  auto c = config_from_hugging_face(kHfQwen2, kHfGeneration);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->type, "qwen2");
  EXPECT_EQ(c->vocab_size, 151665);
  EXPECT_EQ(c->context_length, 2048);
  EXPECT_EQ(c->decoder.num_hidden_layers, 2);
  EXPECT_EQ(c->decoder.num_attention_heads, 4);
  EXPECT_EQ(c->decoder.num_key_value_heads, 2);
  EXPECT_EQ(c->decoder.head_size, 32);  // hidden_size / num_attention_heads
  EXPECT_EQ(c->bos_token_id, 151643);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{151645, 151643}));  // generation_config.json wins
  EXPECT_EQ(c->pad_token_id, 151645);
  EXPECT_EQ(layer_name(c->decoder.past_key_names, 1), "past_key_values.1.key");
  EXPECT_EQ(layer_name(c->decoder.present_value_names, 0), "present.0.value");
  EXPECT_TRUE(c->search.do_sample);
  EXPECT_EQ(c->search.top_k, 20);
  EXPECT_FLOAT_EQ(c->search.top_p, 0.8f);
  EXPECT_FLOAT_EQ(c->search.temperature, 0.7f);
  EXPECT_FLOAT_EQ(c->search.repetition_penalty, 1.05f);
  EXPECT_EQ(c->search.max_length, 2048);
  EXPECT_FALSE(c->search.past_present_share_buffer);

  nlohmann::json gemma = nlohmann::json::parse(kHfQwen2);
  gemma["head_dim"] = 64;  // gemma's heads are wider than hidden_size / heads
  gemma.erase("num_key_value_heads");
  auto g = config_from_hugging_face(gemma.dump(), "");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->decoder.head_size, 64);
  EXPECT_EQ(g->decoder.num_key_value_heads, 4);
  EXPECT_EQ(g->eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_FALSE(g->search.do_sample);
}

TEST(HuggingFaceConfig, MalformedFieldsAreNamed) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"num_hidden_layers", nullptr, "config.json: num_hidden_layers is missing"},
      {"num_hidden_layers", "2", "config.json: num_hidden_layers: expected a positive integer"},
      {"vocab_size", 0, "config.json: vocab_size: expected a positive integer"},
      {"num_key_value_heads", 3, "num_attention_heads 4 is not a multiple of num_key_value_heads 3"},
      {"eos_token_id", nullptr, "eos_token_id is missing"},
      {"eos_token_id", "x", "config.json: eos_token_id: expected a token id"},
      {"eos_token_id", 200000, "eos_token_id 200000 is not below vocab_size"},
      {"max_position_embeddings", nullptr, "max_position_embeddings is missing"},
      {"text_config", nlohmann::json::object(), "multimodal"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = nlohmann::json::parse(kHfQwen2);
    if (c.value.is_null()) {
      j.erase(c.key);
    } else {
      j[c.key] = c.value;
    }
    auto parsed = config_from_hugging_face(j.dump(), "");
    ASSERT_FALSE(parsed.is_ok()) << c.key;
    EXPECT_NE(parsed.status().message().find(c.expected), std::string::npos) << c.key << ": " << parsed.status().to_string();
  }
  auto bad_top_p = config_from_hugging_face(kHfQwen2, R"({"top_p": 2})");
  ASSERT_FALSE(bad_top_p.is_ok());
  EXPECT_NE(bad_top_p.status().message().find("top_p"), std::string::npos);
  EXPECT_FALSE(config_from_hugging_face("[1]", "").is_ok());
  EXPECT_FALSE(config_from_hugging_face(kHfQwen2, "{").is_ok());
}

// Which decoder file a folder without genai_config.json runs.
TEST(HuggingFaceConfig, FolderLayouts) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ember_folder_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "onnx");
  auto write = [&](const fs::path& p, const std::string& text) { std::ofstream(dir / p) << text; };
  auto decoder = [&](const std::string& flag) {
    auto c = load_model_folder(dir.string(), flag);
    return c.is_ok() ? c->decoder_path() : c.status().message();
  };
  EXPECT_NE(decoder("").find("neither genai_config.json"), std::string::npos) << decoder("");
  write("config.json", kHfQwen2);
  write("onnx/model_q4.onnx", "");
  EXPECT_NE(decoder("").find("no model.onnx or onnx/model.onnx (it has onnx/model_q4.onnx)"), std::string::npos)
      << decoder("");
  EXPECT_EQ(decoder("onnx/model_q4.onnx"), (dir / "onnx/model_q4.onnx").string());
  write("onnx/model.onnx", "");
  EXPECT_EQ(decoder(""), (dir / "onnx/model.onnx").string());
  write("model.onnx", "");
  EXPECT_EQ(decoder(""), (dir / "model.onnx").string());
  EXPECT_NE(decoder("onnx/model_fp16.onnx").find("no decoder file onnx/model_fp16.onnx"), std::string::npos);
  write("genai_config.json", kQwenConfig);
  EXPECT_EQ(decoder(""), (dir / "model.onnx").string());
  EXPECT_EQ(decoder("onnx/model_q4.onnx"), (dir / "onnx/model_q4.onnx").string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember::genai
