// ember._ember's generation classes behind ember.genai (python/ember/genai.py),
// onnxruntime-genai's Python API: a model folder (its config and the
// Generators that borrow its decoder), its tokenizer, chat template and
// streaming detokenizer, and a step-at-a-time generator with onnxruntime-genai's
// sequence semantics. The per-token path (generate_next_token,
// get_next_tokens, TokenizerStream.decode) is one call each, the GIL released
// while the model runs.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json.h"
#include "bindings.h"
#include "genai/chat_template.h"
#include "genai/generator.h"
#include "genai/model_folder.h"
#include "genai/sampling.h"
#include "genai/tokenizer.h"

namespace ember::python {
namespace {

using genai::GenaiConfig;

using TokenArray = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A new int32 numpy array holding `values`.
nb::object int32_array(std::vector<int32_t> values, std::initializer_list<size_t> shape) {
  auto* owned = new std::vector<int32_t>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<int32_t>*>(p); });
  return nb::ndarray<nb::numpy, int32_t>(owned->data(), shape.size(), shape.begin(), owner).cast();
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  std::stringstream text;
  text << in.rdbuf();
  std::string why;
  auto parsed = parse_json<nlohmann::json>(text.str(), &why);
  if (parsed.is_discarded()) throw StatusError(invalid_argument("{} {}", path, why));
  return parsed;
}

// A model folder: its config and a pool of Generators (each owning a decoder
// session and a KV cache), so that the Generator objects a script makes one
// after another reuse one loaded decoder, as onnxruntime-genai's share its Model.
class GenaiModel {
 public:
  // A Generator with its prefill chunk (0: Ember's default).
  struct Pooled {
    std::unique_ptr<genai::Generator> generator;
    int chunk_size = 0;
  };

  GenaiModel(const std::string& dir, int max_length, int chunk_size) {
    config_ = value_or_throw(genai::load_model_folder(dir));
    release(acquire(max_length > 0 ? max_length : config_.search.max_length, chunk_size));
  }
  GenaiModel(const GenaiModel&) = delete;
  GenaiModel& operator=(const GenaiModel&) = delete;

  const GenaiConfig& config() const { return config_; }

  nb::dict search_defaults() const {
    const genai::SearchConfig& s = config_.search;
    nb::dict d;
    d["do_sample"] = s.do_sample;
    d["max_length"] = s.max_length;
    d["min_length"] = s.min_length;
    d["temperature"] = s.temperature;
    d["top_k"] = s.top_k;
    d["top_p"] = s.top_p;
    d["repetition_penalty"] = s.repetition_penalty;
    d["past_present_share_buffer"] = s.past_present_share_buffer;
    d["random_seed"] = s.random_seed;
    return d;
  }

  // An empty Generator whose KV cache holds at least max_length tokens: a
  // pooled one when one is free, else a new one (a decoder load).
  Pooled acquire(int max_length, int chunk_size) {
    for (auto it = pool_.begin(); it != pool_.end(); ++it) {
      if (it->generator->max_length() >= max_length && it->chunk_size == chunk_size) {
        Pooled p = std::move(*it);
        pool_.erase(it);
        p.generator->reset();
        return p;
      }
    }
    genai::GeneratorOptions options;
    options.max_length = max_length;
    if (chunk_size > 0) options.prefill_chunk = chunk_size;
    Result<std::unique_ptr<genai::Generator>> created = invalid_argument("unreachable");
    {
      nb::gil_scoped_release release;
      created = genai::Generator::create(config_, options);
    }
    return Pooled{value_or_throw(std::move(created)), chunk_size};
  }

  void release(Pooled p) { pool_.push_back(std::move(p)); }

 private:
  GenaiConfig config_;
  std::vector<Pooled> pool_;
};

// The search options of one generation, as ember.genai.GeneratorParams validated them.
struct SearchOptions {
  int max_length = 0;
  int min_length = 0;
  bool do_sample = false;
  float temperature = 1.0f;
  int top_k = 50;
  float top_p = 1.0f;
  float repetition_penalty = 1.0f;
  uint64_t seed = 0;
  int chunk_size = 0;
};

// onnxruntime-genai's Generator for one sequence. The sequence holds the
// prompt and every chosen token; the decoder has run all of it but the last
// chosen token, which runs when the next token is asked for (or get_logits),
// so the last step before EOS or max_length costs no model run. An EOS ends
// generation without entering the sequence; a sequence at max_length is done.
class GenaiGenerator {
 public:
  GenaiGenerator(std::shared_ptr<GenaiModel> model, const SearchOptions& search)
      : model_(std::move(model)), search_(search), sampler_(sampling_params(search)) {
    const GenaiConfig& config = model_->config();
    if (search.max_length <= 0) throw StatusError(invalid_argument("search max_length is {}", search.max_length));
    if (search.max_length > config.context_length) {
      throw StatusError(invalid_argument("max_length ({}) cannot be greater than model context_length ({})",
                                         search.max_length, config.context_length));
    }
    pooled_ = model_->acquire(search.max_length, search.chunk_size);
    generator_ = pooled_.generator.get();
    vocab_ = config.vocab_size;
  }
  ~GenaiGenerator() { model_->release(std::move(pooled_)); }
  GenaiGenerator(const GenaiGenerator&) = delete;
  GenaiGenerator& operator=(const GenaiGenerator&) = delete;

  void append_tokens(TokenArray tokens) {
    const size_t n = tokens.shape(0);
    if (n == 0) throw StatusError(invalid_argument("input_ids is empty"));
    if (sequence_.size() + n > static_cast<size_t>(search_.max_length)) {
      throw StatusError(invalid_argument("input_ids size ({}) + current sequence length ({}) exceeds max length ({})",
                                         n, sequence_.size(), search_.max_length));
    }
    const size_t before = sequence_.size();
    sequence_.insert(sequence_.end(), tokens.data(), tokens.data() + n);
    const Status ran = run_pending();
    if (!ran.is_ok()) {
      sequence_.resize(before);
      throw StatusError(ran);
    }
    next_token_ = sequence_.back();
    rewound_token_.reset();
    done_ = false;
    logits_ready_ = true;
  }

  void generate_next_token() {
    if (sequence_.size() >= static_cast<size_t>(search_.max_length)) {
      throw StatusError(invalid_argument("generate_next_token called with the sequence already at max_length ({})",
                                         search_.max_length));
    }
    if (!logits_ready_) {
      if (sequence_.empty()) {
        throw StatusError(invalid_argument("generate_next_token called with no prior state: call append_tokens first"));
      }
      // onnxruntime-genai's rewind_to(n) keeps the token that was at position n
      // as the next input: the step after a rewind runs it again, then samples.
      if (rewound_token_) sequence_.push_back(*rewound_token_);
      rewound_token_.reset();
      if (sequence_.size() == generator_->cached_tokens().size()) {
        throw StatusError(invalid_argument("generation is done (EOS): append_tokens or rewind_to to continue"));
      }
      throw_if_error(run_pending());
    }
    std::span<float> logits = generator_->last_logits();
    if (static_cast<int>(sequence_.size()) < search_.min_length) {
      for (int64_t eos : model_->config().eos_token_ids) logits[static_cast<size_t>(eos)] = std::numeric_limits<float>::lowest();
    }
    const auto token = static_cast<int32_t>(sampler_.sample(logits, generator_->cached_tokens()));
    logits_ready_ = false;
    next_token_ = token;
    if (model_->config().is_eos(token)) {
      done_ = true;
      return;
    }
    sequence_.push_back(token);
    done_ = sequence_.size() == static_cast<size_t>(search_.max_length);
  }

  bool is_done() const { return !logits_ready_ && done_; }
  int32_t next_token() const { return next_token_; }
  nb::object get_next_tokens() const { return int32_array({next_token_}, {1}); }
  nb::object get_sequence() const { return int32_array(sequence_, {sequence_.size()}); }
  size_t token_count() const { return sequence_.size(); }

  void rewind_to(size_t length) {
    if (length > sequence_.size()) {
      throw StatusError(invalid_argument("cannot rewind to {} tokens: the sequence has {}", length, sequence_.size()));
    }
    if (length == sequence_.size()) return;
    const size_t keep = std::min(length, generator_->cached_tokens().size());
    throw_if_error(generator_->truncate(static_cast<int64_t>(keep)));
    rewound_token_.reset();
    if (length > 0) rewound_token_ = sequence_[length];
    next_token_ = length > 0 ? sequence_[length] : 0;
    sequence_.resize(length);
    sampler_.chain().reset();
    done_ = false;
    logits_ready_ = false;
  }

  // The logits the next token is chosen from, [1, 1, vocab]; runs the pending token first.
  nb::object get_logits() {
    if (!logits_ready_) {
      if (rewound_token_) sequence_.push_back(*rewound_token_);
      rewound_token_.reset();
      throw_if_error(run_pending());
      logits_ready_ = true;
    }
    std::span<const float> logits = generator_->last_logits();
    Tensor t = Tensor::allocate_uninitialized(DType::kF32, {1, 1, vocab_});
    std::copy(logits.begin(), logits.end(), t.data_as<float>());
    return tensor_to_array(std::move(t));
  }

 private:
  static genai::SamplingParams sampling_params(const SearchOptions& search) {
    genai::SamplingParams p;
    p.greedy = !search.do_sample;
    p.temperature = search.temperature;
    p.top_k = search.top_k;
    p.top_p = search.top_p;
    p.repetition_penalty = search.repetition_penalty;
    p.seed = search.seed;
    return p;
  }

  // Runs the tokens of the sequence the decoder has not seen.
  Status run_pending() {
    const size_t cached = generator_->cached_tokens().size();
    pending_.assign(sequence_.begin() + static_cast<std::ptrdiff_t>(cached), sequence_.end());
    if (pending_.empty()) return Status::ok();
    nb::gil_scoped_release release;
    return generator_->append(pending_);
  }

  std::shared_ptr<GenaiModel> model_;
  SearchOptions search_;
  genai::Sampler sampler_;
  GenaiModel::Pooled pooled_;
  genai::Generator* generator_ = nullptr;  // pooled_'s
  int64_t vocab_ = 0;
  std::vector<int32_t> sequence_;
  std::vector<int64_t> pending_;
  std::optional<int32_t> rewound_token_;
  int32_t next_token_ = 0;
  bool done_ = false;
  bool logits_ready_ = false;
};

// tokenizer.json as onnxruntime-genai 0.18 applies it: encode adds no special
// tokens (neither tokenizer.json's post-processor nor tokenizer_config.json's
// add_bos_token: measured, with each of them set, on models/default and the
// decoder fixtures), decode skips special tokens.
class GenaiTokenizer {
 public:
  explicit GenaiTokenizer(const std::string& dir) : dir_(dir) {
    tokenizer_ = std::make_shared<genai::Tokenizer>(value_or_throw(genai::Tokenizer::from_file(dir + "/tokenizer.json")));
    tokenizer_config_ = read_json_file(dir + "/tokenizer_config.json");
  }

  std::vector<int32_t> encode_ids(const std::string& text) const { return tokenizer_->encode(text, false); }
  nb::object encode(const std::string& text) const {
    std::vector<int32_t> ids = encode_ids(text);
    const size_t n = ids.size();
    return int32_array(std::move(ids), {n});
  }
  // The texts' ids as rows of one [len(texts), longest] array, shorter rows padded with `pad` on the right.
  nb::object encode_batch(const std::vector<std::string>& texts, int32_t pad) const {
    std::vector<std::vector<int32_t>> rows;
    size_t longest = 0;
    for (const std::string& text : texts) {
      rows.push_back(encode_ids(text));
      longest = std::max(longest, rows.back().size());
    }
    std::vector<int32_t> flat(rows.size() * longest, pad);
    for (size_t r = 0; r < rows.size(); ++r) std::copy(rows[r].begin(), rows[r].end(), flat.begin() + r * longest);
    return int32_array(std::move(flat), {rows.size(), longest});
  }
  std::string decode(TokenArray ids) const {
    return tokenizer_->decode(std::span<const int32_t>(ids.data(), ids.shape(0)), /*skip_special=*/true);
  }
  int32_t to_token_id(const std::string& token) const { return tokenizer_->token_to_id(token); }

  // messages and tools as JSON text; an empty or absent template_str uses the folder's template.
  std::string apply_chat_template(const std::string& messages, const std::optional<std::string>& template_str,
                                  const std::optional<std::string>& tools, bool add_generation_prompt) {
    genai::ChatTemplateInput input;
    input.messages = parse_json_argument("messages", messages);
    if (tools && !tools->empty()) input.tools = parse_json_argument("tools", *tools);
    input.add_generation_prompt = add_generation_prompt;
    const genai::ChatTemplate& chat_template = pick_template(template_str.value_or(""));
    return value_or_throw(chat_template.render(input));
  }

  const std::shared_ptr<genai::Tokenizer>& tokenizer() const { return tokenizer_; }

 private:
  static nlohmann::ordered_json parse_json_argument(const char* what, const std::string& text) {
    std::string why;
    auto parsed = parse_json<nlohmann::ordered_json>(text, &why);
    if (parsed.is_discarded()) throw StatusError(invalid_argument("{} {}: {}", what, why, text));
    return parsed;
  }

  const genai::ChatTemplate& pick_template(const std::string& template_str) {
    if (template_str.empty()) {
      if (!folder_template_) folder_template_ = value_or_throw(genai::ChatTemplate::load(dir_));
      return *folder_template_;
    }
    if (!given_template_ || given_source_ != template_str) {
      nlohmann::json config = tokenizer_config_;
      config["chat_template"] = template_str;
      given_template_ = value_or_throw(genai::ChatTemplate::from_config(config, "template_str"));
      given_source_ = template_str;
    }
    return *given_template_;
  }

  std::string dir_;
  std::shared_ptr<genai::Tokenizer> tokenizer_;
  nlohmann::json tokenizer_config_;
  std::optional<genai::ChatTemplate> folder_template_, given_template_;
  std::string given_source_;
};

// One token at a time to text: only whole UTF-8 characters, special tokens skipped.
class GenaiTokenizerStream {
 public:
  explicit GenaiTokenizerStream(const GenaiTokenizer& tokenizer) : stream_(*tokenizer.tokenizer(), true) {}
  std::string decode(int32_t token) { return stream_.put(token); }

 private:
  genai::StreamingDetokenizer stream_;
};

}  // namespace

void bind_genai(nb::module_& m) {
  nb::class_<GenaiModel>(m, "GenaiModel")
      .def(nb::new_([](const std::string& dir, int max_length, int chunk_size) {
             return std::make_shared<GenaiModel>(dir, max_length, chunk_size);
           }),
           nb::arg("dir"), nb::arg("max_length"), nb::arg("chunk_size"))
      .def("search_defaults", &GenaiModel::search_defaults)
      .def_prop_ro("type", [](const GenaiModel& m) { return m.config().type; })
      .def_prop_ro("dir", [](const GenaiModel& m) { return m.config().dir; })
      .def_prop_ro("context_length", [](const GenaiModel& m) { return m.config().context_length; })
      .def_prop_ro("vocab_size", [](const GenaiModel& m) { return m.config().vocab_size; })
      .def_prop_ro("bos_token_id", [](const GenaiModel& m) { return m.config().bos_token_id; })
      .def_prop_ro("pad_token_id", [](const GenaiModel& m) { return m.config().pad_token_id; })
      .def_prop_ro("eos_token_ids", [](const GenaiModel& m) { return m.config().eos_token_ids; });

  nb::class_<SearchOptions>(m, "SearchOptions")
      .def(nb::init<>())
      .def_rw("max_length", &SearchOptions::max_length)
      .def_rw("min_length", &SearchOptions::min_length)
      .def_rw("do_sample", &SearchOptions::do_sample)
      .def_rw("temperature", &SearchOptions::temperature)
      .def_rw("top_k", &SearchOptions::top_k)
      .def_rw("top_p", &SearchOptions::top_p)
      .def_rw("repetition_penalty", &SearchOptions::repetition_penalty)
      .def_rw("seed", &SearchOptions::seed)
      .def_rw("chunk_size", &SearchOptions::chunk_size);

  nb::class_<GenaiGenerator>(m, "GenaiGenerator")
      .def(nb::new_([](std::shared_ptr<GenaiModel> model, const SearchOptions& search) {
             return std::make_unique<GenaiGenerator>(std::move(model), search);
           }),
           nb::arg("model"), nb::arg("search"))
      .def("append_tokens", &GenaiGenerator::append_tokens, nb::arg("tokens"))
      .def("generate_next_token", &GenaiGenerator::generate_next_token)
      .def("is_done", &GenaiGenerator::is_done)
      .def("next_token", &GenaiGenerator::next_token)
      .def("get_next_tokens", &GenaiGenerator::get_next_tokens)
      .def("get_sequence", &GenaiGenerator::get_sequence)
      .def("token_count", &GenaiGenerator::token_count)
      .def("rewind_to", &GenaiGenerator::rewind_to, nb::arg("length"))
      .def("get_logits", &GenaiGenerator::get_logits);

  nb::class_<GenaiTokenizer>(m, "GenaiTokenizer")
      .def("__init__",
           [](GenaiTokenizer* self, const GenaiModel& model) {
             new (self) GenaiTokenizer(model.config().dir);
           },
           nb::arg("model"))
      .def("encode", &GenaiTokenizer::encode, nb::arg("text"))
      .def("encode_batch", &GenaiTokenizer::encode_batch, nb::arg("texts"), nb::arg("pad"))
      .def("decode", &GenaiTokenizer::decode, nb::arg("tokens"))
      .def("to_token_id", &GenaiTokenizer::to_token_id, nb::arg("token"))
      .def("apply_chat_template", &GenaiTokenizer::apply_chat_template, nb::arg("messages"),
           nb::arg("template_str").none(), nb::arg("tools").none(), nb::arg("add_generation_prompt"));

  nb::class_<GenaiTokenizerStream>(m, "GenaiTokenizerStream")
      .def(nb::init<const GenaiTokenizer&>(), nb::arg("tokenizer"))
      .def("decode", &GenaiTokenizerStream::decode, nb::arg("token"));
}

}  // namespace ember::python
