// genai::Tokenizer: the HF tokenizers pipeline over the components of
// tokenizer_internal.h — added tokens split out, normalizer, pre-tokenizer, BPE,
// post-processor — and decoding, streaming included.
#include "genai/tokenizer.h"

#include <unicode/uchar.h>

#include <array>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/json.h"
#include "genai/tokenizer_internal.h"

namespace ember::genai {

using namespace detail;

namespace {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// A byte trie of added-token contents, scanned for leftmost-longest matches (the
// aho-corasick MatchKind::LeftmostLongest that HF uses).
class AddedTokenTrie {
 public:
  void add(std::string_view text, int32_t index) {
    if (text.empty()) return;
    if (nodes_.empty()) nodes_.emplace_back();
    int32_t node = 0;
    for (char c : text) {
      const auto b = static_cast<uint8_t>(c);
      int32_t child = find_child(node, b);
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_[static_cast<size_t>(node)].children.emplace_back(b, child);
        nodes_.emplace_back();
      }
      node = child;
    }
    if (nodes_[static_cast<size_t>(node)].token < 0) nodes_[static_cast<size_t>(node)].token = index;
    starts_[static_cast<uint8_t>(text[0])] = true;
  }
  bool empty() const { return nodes_.empty(); }
  // The longest token starting at pos (its index, and its length in `len`), or -1.
  int32_t longest_at(std::string_view text, size_t pos, size_t& len) const {
    if (!starts_[static_cast<uint8_t>(text[pos])]) return -1;
    int32_t node = 0, best = -1;
    for (size_t i = pos; i < text.size(); ++i) {
      node = find_child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      if (nodes_[static_cast<size_t>(node)].token >= 0) {
        best = nodes_[static_cast<size_t>(node)].token;
        len = i + 1 - pos;
      }
    }
    return best;
  }

 private:
  struct Node {
    int32_t token = -1;
    std::vector<std::pair<uint8_t, int32_t>> children;
  };
  int32_t find_child(int32_t node, uint8_t b) const {
    for (auto [c, child] : nodes_[static_cast<size_t>(node)].children) {
      if (c == b) return child;
    }
    return -1;
  }
  std::vector<Node> nodes_;
  std::array<bool, 256> starts_{};
};

bool is_word_char(char32_t c) { return c == '_' || u_isalnum(static_cast<UChar32>(c)); }

char32_t char_before(std::string_view s, size_t pos) {
  size_t p = pos - 1;
  while (p > 0 && (static_cast<uint8_t>(s[p]) & 0xC0) == 0x80) --p;
  return utf8_decode(s, p);
}

}  // namespace

struct TokenizerImpl {
  std::optional<Normalizer> normalizer;
  std::optional<PreTokenizer> pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  std::optional<Decoder> decoder;
  std::vector<int32_t> special_prefix, special_suffix;  // post-processor, with add_special
  std::vector<AddedToken> added;
  std::unordered_map<int32_t, size_t> added_by_id;
  StringMap<int32_t> added_by_content;
  AddedTokenTrie raw_trie, normalized_trie;
  std::unordered_set<int32_t> special_ids;
  std::unordered_set<std::string> special_contents;

  // Splits each text piece of `pieces` at the matches of `trie` (HF AddedVocabulary::split_with_indices).
  void split_added(const AddedTokenTrie& trie, std::vector<Piece>& pieces) const;
  Status parse_added_tokens(const Json& j);
  Status parse_post_processor(const Json& j, const std::string& where);
};

void TokenizerImpl::split_added(const AddedTokenTrie& trie, std::vector<Piece>& pieces) const {
  if (trie.empty()) return;
  std::vector<Piece> out;
  for (Piece& piece : pieces) {
    if (piece.token >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    const std::string& s = piece.text;
    size_t emitted = 0;  // end of the last match taken
    for (size_t pos = 0; pos < s.size();) {
      size_t len = 0;
      const int32_t index = trie.longest_at(s, pos, len);
      if (index < 0) {
        ++pos;
        continue;
      }
      const AddedToken& tok = added[static_cast<size_t>(index)];
      size_t begin = pos, end = pos + len;
      pos = end;
      if (tok.single_word && ((begin > 0 && is_word_char(char_before(s, begin))) ||
                              (end < s.size() && is_word_char(utf8_decode(s, end))))) {
        continue;
      }
      while (tok.lstrip && begin > emitted) {
        size_t p = begin - 1;
        while (p > emitted && (static_cast<uint8_t>(s[p]) & 0xC0) == 0x80) --p;
        if (!u_isUWhiteSpace(static_cast<UChar32>(utf8_decode(s, p)))) break;
        begin = p;
      }
      while (tok.rstrip && end < s.size() && u_isUWhiteSpace(static_cast<UChar32>(utf8_decode(s, end)))) {
        end += utf8_char_length(s, end);
      }
      pos = end;
      if (begin > emitted) out.push_back({s.substr(emitted, begin - emitted), -1, piece.at_start && emitted == 0});
      out.push_back({s.substr(begin, end - begin), tok.id, false});
      emitted = end;
    }
    if (emitted < s.size()) out.push_back({s.substr(emitted), -1, piece.at_start && emitted == 0});
  }
  pieces = std::move(out);
}

Status TokenizerImpl::parse_added_tokens(const Json& j) {
  if (j.is_null()) return Status::ok();
  if (!j.is_array()) return invalid_model("tokenizer.json: added_tokens must be an array");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = fmt::format("added_tokens[{}]", i);
    const Json& t = j[i];
    if (!t.is_object()) return invalid_model("tokenizer.json: {} must be an object", where);
    AddedToken tok;
    EMBER_ASSIGN_OR_RETURN(tok.content, json_string(t, "content", where));
    EMBER_ASSIGN_OR_RETURN(int64_t id, json_int(t, "id", -1, where));
    if (id < 0 || id > INT32_MAX) return invalid_model("tokenizer.json: {}.id must be a non-negative integer", where);
    tok.id = static_cast<int32_t>(id);
    EMBER_ASSIGN_OR_RETURN(tok.special, json_bool(t, "special", false, where));
    EMBER_ASSIGN_OR_RETURN(tok.lstrip, json_bool(t, "lstrip", false, where));
    EMBER_ASSIGN_OR_RETURN(tok.rstrip, json_bool(t, "rstrip", false, where));
    EMBER_ASSIGN_OR_RETURN(tok.single_word, json_bool(t, "single_word", false, where));
    EMBER_ASSIGN_OR_RETURN(tok.normalized, json_bool(t, "normalized", !tok.special, where));
    const auto index = static_cast<int32_t>(added.size());
    if (tok.normalized) {
      std::string content = tok.content;
      if (normalizer) normalize(*normalizer, content);
      normalized_trie.add(content, index);
    } else {
      raw_trie.add(tok.content, index);
    }
    if (tok.special) {
      special_ids.insert(tok.id);
      special_contents.insert(tok.content);
    }
    added_by_id.emplace(tok.id, added.size());
    added_by_content.emplace(tok.content, tok.id);
    added.push_back(std::move(tok));
  }
  return Status::ok();
}

Status TokenizerImpl::parse_post_processor(const Json& j, const std::string& where) {
  if (j.is_null()) return Status::ok();
  EMBER_ASSIGN_OR_RETURN(std::string type, json_string(j, "type", where));
  if (type == "ByteLevel") return Status::ok();  // adjusts offsets only
  if (type == "Sequence") {
    auto it = j.find("processors");
    if (it == j.end() || !it->is_array()) return invalid_model("tokenizer.json: {}.processors must be an array", where);
    for (size_t i = 0; i < it->size(); ++i) {
      EMBER_RETURN_IF_ERROR(parse_post_processor((*it)[i], fmt::format("{}.processors[{}]", where, i)));
    }
    return Status::ok();
  }
  std::vector<int32_t> prefix, suffix;
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      auto it = j.find(key);
      if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer()) {
        return invalid_model("tokenizer.json: {}.{} must be [token, id]", where, key);
      }
      (std::string_view(key) == "cls" ? prefix : suffix).push_back((*it)[1].get<int32_t>());
    }
  } else if (type == "TemplateProcessing") {
    auto single = j.find("single");
    auto specials = j.find("special_tokens");
    if (single == j.end() || !single->is_array()) return invalid_model("tokenizer.json: {}.single must be an array", where);
    bool after_sequence = false;
    for (size_t i = 0; i < single->size(); ++i) {
      const Json& piece = (*single)[i];
      if (piece.contains("Sequence")) {
        after_sequence = true;
        continue;
      }
      const Json* special = piece.contains("SpecialToken") ? &piece["SpecialToken"] : nullptr;
      if (!special || !special->contains("id") || !(*special)["id"].is_string()) {
        return invalid_model("tokenizer.json: {}.single[{}] must be a Sequence or a SpecialToken with an id", where, i);
      }
      const std::string name = (*special)["id"].get<std::string>();
      if (specials == j.end() || !specials->contains(name) || !(*specials)[name].contains("ids") ||
          !(*specials)[name]["ids"].is_array()) {
        return invalid_model("tokenizer.json: {}.special_tokens has no ids for '{}'", where, name);
      }
      for (const Json& id : (*specials)[name]["ids"]) (after_sequence ? suffix : prefix).push_back(id.get<int32_t>());
    }
  } else {
    return not_implemented("tokenizer.json: {}.type '{}' is not supported (TemplateProcessing, ByteLevel, "
                           "RobertaProcessing, BertProcessing, Sequence are)", where, type);
  }
  special_prefix.insert(special_prefix.begin(), prefix.begin(), prefix.end());
  special_suffix.insert(special_suffix.end(), suffix.begin(), suffix.end());
  return Status::ok();
}

namespace {

Result<std::shared_ptr<TokenizerImpl>> parse_tokenizer(const Json& root) {
  if (!root.is_object()) return invalid_model("tokenizer.json: the top level must be an object");
  auto impl = std::make_shared<TokenizerImpl>();
  auto model = root.find("model");
  if (model == root.end() || !model->is_object()) return invalid_model("tokenizer.json: model must be an object");
  std::string type = "BPE";  // HF writes the type; very old files leave it out for BPE
  if (model->contains("type")) {
    EMBER_ASSIGN_OR_RETURN(type, json_string(*model, "type", "model"));
  }
  if (type != "BPE") {
    return not_implemented("tokenizer.json: model.type '{}' is not supported (BPE is)", type);
  }
  EMBER_ASSIGN_OR_RETURN(impl->model, BpeModel::parse(*model));
  if (auto it = root.find("normalizer"); it != root.end() && !it->is_null()) {
    EMBER_ASSIGN_OR_RETURN(impl->normalizer, parse_normalizer(*it, "normalizer"));
  }
  if (auto it = root.find("pre_tokenizer"); it != root.end() && !it->is_null()) {
    EMBER_ASSIGN_OR_RETURN(impl->pre_tokenizer, parse_pre_tokenizer(*it, "pre_tokenizer"));
  }
  if (auto it = root.find("decoder"); it != root.end() && !it->is_null()) {
    EMBER_ASSIGN_OR_RETURN(impl->decoder, parse_decoder(*it, "decoder"));
  }
  if (auto it = root.find("post_processor"); it != root.end()) {
    EMBER_RETURN_IF_ERROR(impl->parse_post_processor(*it, "post_processor"));
  }
  if (auto it = root.find("added_tokens"); it != root.end()) {
    EMBER_RETURN_IF_ERROR(impl->parse_added_tokens(*it));
  }
  return impl;
}

}  // namespace

Result<Tokenizer> Tokenizer::from_json(std::string_view json_text) {
  if (std::string deep = json_depth_error(json_text); !deep.empty()) return invalid_model("tokenizer.json {}", deep);
  try {
    const Json root = Json::parse(json_text);
    EMBER_ASSIGN_OR_RETURN(auto impl, parse_tokenizer(root));
    return Tokenizer(std::move(impl));
  } catch (const nlohmann::json::exception& e) {
    return invalid_model("tokenizer.json: {}", e.what());
  }
}

Result<Tokenizer> Tokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open tokenizer file '{}'", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto tokenizer = from_json(buffer.str());
  if (!tokenizer) return tokenizer.status().with_context(path + ": ");
  return tokenizer;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  const TokenizerImpl& t = *impl_;
  std::vector<Piece> pieces;
  pieces.push_back({utf8_valid(text) ? std::string(text) : utf8_lossy(text), -1, true});
  t.split_added(t.raw_trie, pieces);
  if (t.normalizer) {
    for (Piece& piece : pieces) {
      if (piece.token < 0) normalize(*t.normalizer, piece.text);
    }
  }
  t.split_added(t.normalized_trie, pieces);
  if (t.pre_tokenizer) pre_tokenize(*t.pre_tokenizer, pieces);
  std::vector<int32_t> ids;
  if (add_special) ids = t.special_prefix;
  for (const Piece& piece : pieces) {
    if (piece.token >= 0) {
      ids.push_back(piece.token);
    } else {
      t.model->tokenize(piece.text, ids);
    }
  }
  if (add_special) ids.insert(ids.end(), t.special_suffix.begin(), t.special_suffix.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  const TokenizerImpl& t = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* token = nullptr;
    if (auto it = t.added_by_id.find(id); it != t.added_by_id.end()) {
      token = &t.added[it->second].content;
    } else {
      token = t.model->id_to_token(id);
    }
    if (!token || (skip_special && t.special_contents.contains(*token))) continue;
    tokens.push_back(*token);
  }
  if (!t.decoder) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  decode_chain(*t.decoder, tokens);
  std::string joined;
  for (const std::string& token : tokens) joined += token;
  return joined;
}

int32_t Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(token); it != impl_->added_by_content.end()) return it->second;
  return impl_->model->token_to_id(token);
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (auto it = impl_->added_by_id.find(id); it != impl_->added_by_id.end()) return impl_->added[it->second].content;
  const std::string* token = impl_->model->id_to_token(id);
  return token ? *token : std::string();
}

bool Tokenizer::is_special(int32_t id) const { return impl_->special_ids.contains(id); }

std::string Tokenizer::token_bytes(int32_t id) const {
  std::string bytes;
  if (auto it = impl_->added_by_id.find(id); it != impl_->added_by_id.end()) {
    bytes = impl_->added[it->second].content;
    // decode() runs added tokens through the decoder too (Gemma's "▁▁"), special ones aside.
    if (impl_->special_ids.contains(id)) return bytes;
  } else if (const std::string* token = impl_->model->id_to_token(id)) {
    bytes = *token;
  } else {
    return {};
  }
  if (impl_->decoder) token_bytes_chain(*impl_->decoder, bytes);
  return bytes;
}

int32_t Tokenizer::vocab_size() const {
  int32_t size = impl_->model->vocab_size();
  for (const AddedToken& tok : impl_->added) size = std::max(size, tok.id + 1);
  return size;
}

std::string StreamingDetokenizer::put(int32_t id) {
  ids_.push_back(id);
  const std::span<const int32_t> window(ids_.data() + prefix_begin_, ids_.size() - prefix_begin_);
  std::string text = tokenizer_.decode(window, skip_special_);
  // New ids are held while the text has not grown, ends with U+FFFD (almost always
  // an incomplete character that later ids complete) or no longer extends what was
  // emitted (decoders that merge bytes across tokens can change it). Each settles
  // within a few ids unless the tokenizer never does; after kMaxHeldIds ids the
  // text goes out as it is (from a character boundary), as Hugging Face's
  // DecodeStream emits it: holding on would decode an ever longer window at every
  // id, quadratic in the ids held.
  constexpr size_t kMaxHeldIds = 16;
  const bool grew = text.size() > prefix_text_.size();
  const bool settled = grew && !text.ends_with("\xEF\xBF\xBD") && text.starts_with(prefix_text_);
  if (!settled && ids_.size() - read_begin_ < kMaxHeldIds) return {};
  std::string fresh;
  if (grew) {
    size_t from = prefix_text_.size();
    while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
    fresh = text.substr(from);
  }
  prefix_begin_ = read_begin_;
  read_begin_ = ids_.size();
  prefix_text_ = tokenizer_.decode(
      std::span<const int32_t>(ids_.data() + prefix_begin_, read_begin_ - prefix_begin_), skip_special_);
  return fresh;
}

std::string StreamingDetokenizer::finish() {
  if (read_begin_ == ids_.size()) return {};
  const std::span<const int32_t> window(ids_.data() + prefix_begin_, ids_.size() - prefix_begin_);
  std::string text = tokenizer_.decode(window, skip_special_);
  read_begin_ = ids_.size();
  return text.size() > prefix_text_.size() ? text.substr(prefix_text_.size()) : std::string();
}

}  // namespace ember::genai
