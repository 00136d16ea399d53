#pragma once
// Hugging Face `tokenizer.json` tokenizers (BPE: byte-level as GPT-2 / Llama-3 / Qwen /
// DeepSeek, SentencePiece-style as Llama-2 / Mistral / Gemma), byte-exact with the
// `tokenizers` library: added tokens, normalizer, pre-tokenizer, model, post-processor
// and decoder follow its pipeline (see docs of huggingface/tokenizers).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ember::genai {

struct TokenizerImpl;

class Tokenizer {
 public:
  // Refuses (naming the field) a malformed file or a component it does not implement.
  static Result<Tokenizer> from_file(const std::string& path);
  static Result<Tokenizer> from_json(std::string_view json_text);

  // HF encode(text, add_special_tokens=add_special).ids. Invalid UTF-8 in `text` is
  // read as U+FFFD, as Python's str would hold it after a lossy decode.
  std::vector<int32_t> encode(std::string_view text, bool add_special) const;
  // HF decode(ids, skip_special_tokens=skip_special); unknown ids are dropped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special) const;

  int32_t token_to_id(std::string_view token) const;  // -1 when absent
  std::string id_to_token(int32_t id) const;          // "" when absent
  bool is_special(int32_t id) const;
  // The bytes `id` stands for in the middle of a text, exactly (a byte-level or
  // <0xNN> token may be part of a UTF-8 character): what a grammar matcher
  // needs. Added tokens give their content; "" for an id outside the vocabulary.
  std::string token_bytes(int32_t id) const;
  int32_t vocab_size() const;  // one past the largest id (model and added tokens)

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const TokenizerImpl> impl_;
};

// Detokenizes one id at a time. put() returns only complete UTF-8 text: while the ids
// so far end inside a character (byte-level or <0xNN> byte tokens) it returns "".
// The concatenation of every put() and finish() equals tokenizer.decode(all ids).
class StreamingDetokenizer {
 public:
  StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}
  std::string put(int32_t id);
  // The text still held back (an incomplete character decodes to U+FFFD, as decode does).
  std::string finish();

 private:
  Tokenizer tokenizer_;  // shares the loaded tables
  bool skip_special_;
  std::vector<int32_t> ids_;
  // ids_[prefix_begin_, read_begin_) decode to prefix_text_, already emitted; the
  // window keeps one earlier token so decoders that treat the first token specially
  // (Metaspace, Strip) see the same context in both decodes.
  size_t prefix_begin_ = 0;
  size_t read_begin_ = 0;
  std::string prefix_text_;
};

}  // namespace ember::genai
