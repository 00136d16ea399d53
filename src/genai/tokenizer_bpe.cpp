// The BPE model of tokenizer.json: vocab, ranked merges, byte fallback, unk fusing,
// ignore_merges, and a per-word cache (HF tokenizers' models::bpe semantics).
#include <queue>

#include "genai/tokenizer_internal.h"

namespace ember::genai::detail {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

uint64_t mix(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

constexpr uint64_t kEmptyKey = ~0ULL;
// Words longer than this are not cached (HF caches below 256 characters as well);
// the cache is cleared when it reaches kCacheCapacity words.
constexpr size_t kCacheMaxWordBytes = 256;
constexpr size_t kCacheCapacity = 1 << 16;

Result<std::pair<std::string, std::string>> merge_pair(const Json& m, size_t index) {
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      return invalid_model("tokenizer.json: model.merges[{}] '{}' is not two tokens separated by one space", index, s);
    }
    return std::pair{s.substr(0, space), s.substr(space + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    return std::pair{m[0].get<std::string>(), m[1].get<std::string>()};
  }
  return invalid_model("tokenizer.json: model.merges[{}] must be \"a b\" or [\"a\", \"b\"]", index);
}

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::parse(const Json& model) {
  const std::string where = "model";
  auto bpe = std::make_unique<BpeModel>();
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) return invalid_model("tokenizer.json: model.vocab must be an object");
  bpe->vocab_.reserve(vocab->size());
  int32_t max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX) {
      return invalid_model("tokenizer.json: model.vocab['{}'] must be a non-negative integer id", it.key());
    }
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    bpe->vocab_.emplace(it.key(), id);
    max_id = std::max(max_id, id);
  }
  bpe->tokens_.resize(static_cast<size_t>(max_id + 1));
  bpe->has_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : bpe->vocab_) {
    bpe->tokens_[static_cast<size_t>(id)] = token;
    bpe->has_token_[static_cast<size_t>(id)] = true;
  }
  EMBER_ASSIGN_OR_RETURN(bpe->fuse_unk_, json_bool(model, "fuse_unk", false, where));
  EMBER_ASSIGN_OR_RETURN(bpe->byte_fallback_, json_bool(model, "byte_fallback", false, where));
  EMBER_ASSIGN_OR_RETURN(bpe->ignore_merges_, json_bool(model, "ignore_merges", false, where));
  for (auto [key, field] : {std::pair{"continuing_subword_prefix", &bpe->prefix_}, {"end_of_word_suffix", &bpe->suffix_}}) {
    if (model.contains(key) && !model[key].is_null()) {
      EMBER_ASSIGN_OR_RETURN(*field, json_string(model, key, where));
    }
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() != 0.0) {
    return not_implemented("tokenizer.json: model.dropout is not supported (inference tokenizers have none)");
  }
  if (model.contains("unk_token") && !model["unk_token"].is_null()) {
    EMBER_ASSIGN_OR_RETURN(std::string unk, json_string(model, "unk_token", where));
    auto it = bpe->vocab_.find(unk);
    if (it == bpe->vocab_.end()) return invalid_model("tokenizer.json: model.unk_token '{}' is not in the vocab", unk);
    bpe->unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = bpe->vocab_.find(fmt::format("<0x{:02X}>", b));
    bpe->byte_ids_[b] = it == bpe->vocab_.end() ? -1 : it->second;
  }

  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) return invalid_model("tokenizer.json: model.merges must be an array");
  size_t capacity = 16;
  while (capacity < merges->size() * 2) capacity <<= 1;
  bpe->merge_keys_.assign(capacity, kEmptyKey);
  bpe->merge_values_.resize(capacity);
  bpe->merge_mask_ = capacity - 1;
  for (size_t i = 0; i < merges->size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(auto pair, merge_pair((*merges)[i], i));
    const int32_t left = bpe->token_to_id(pair.first), right = bpe->token_to_id(pair.second);
    if (left < 0 || right < 0) {
      return invalid_model("tokenizer.json: model.merges[{}] uses '{}', which is not in the vocab", i,
                           left < 0 ? pair.first : pair.second);
    }
    const std::string merged = pair.first + pair.second.substr(std::min(bpe->prefix_.size(), pair.second.size()));
    const int32_t merged_id = bpe->token_to_id(merged);
    if (merged_id < 0) return invalid_model("tokenizer.json: model.merges[{}] makes '{}', which is not in the vocab", i, merged);
    const uint64_t key = pair_key(left, right);
    for (uint64_t slot = mix(key) & bpe->merge_mask_;; slot = (slot + 1) & bpe->merge_mask_) {
      if (bpe->merge_keys_[slot] == key) break;  // a repeated merge keeps its first (best) rank
      if (bpe->merge_keys_[slot] == kEmptyKey) {
        bpe->merge_keys_[slot] = key;
        bpe->merge_values_[slot] = {static_cast<int32_t>(i), merged_id};
        break;
      }
    }
  }
  return bpe;
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !has_token_[static_cast<size_t>(id)]) return nullptr;
  return &tokens_[static_cast<size_t>(id)];
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  for (uint64_t slot = mix(key) & merge_mask_;; slot = (slot + 1) & merge_mask_) {
    if (merge_keys_[slot] == key) return &merge_values_[slot];
    if (merge_keys_[slot] == kEmptyKey) return nullptr;
  }
}

void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& symbols) const {
  bool pending_unk = false;  // the last symbol is an unk that fuse_unk may extend
  std::string key;
  for (size_t pos = 0; pos < word.size();) {
    const size_t n = utf8_char_length(word, pos);
    const std::string_view c = word.substr(pos, n);
    const bool first = pos == 0;
    pos += n;
    int32_t id;
    if (prefix_.empty() && suffix_.empty()) {
      id = token_to_id(c);
    } else {
      key.assign(first ? "" : prefix_);
      key.append(c);
      if (pos == word.size()) key += suffix_;
      id = token_to_id(key);
    }
    if (id >= 0) {
      symbols.push_back(id);
      pending_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char b : c) all = all && byte_ids_[static_cast<uint8_t>(b)] >= 0;
      if (all) {
        for (char b : c) symbols.push_back(byte_ids_[static_cast<uint8_t>(b)]);
        pending_unk = false;
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // HF drops characters it cannot represent when there is no unk
    if (!(fuse_unk_ && pending_unk)) symbols.push_back(unk_id_);
    pending_unk = true;
  }
}

// Lowest rank first, leftmost on ties (HF Word::merge_all), with a heap of candidate
// pairs over a linked list of symbols: O(n log n) per word.
void BpeModel::merge_symbols(std::vector<int32_t>& symbols) const {
  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const auto n = static_cast<int32_t>(symbols.size());
  thread_local std::vector<int32_t> prev, next;
  prev.resize(static_cast<size_t>(n));
  next.resize(static_cast<size_t>(n));
  std::priority_queue<Candidate> heap;
  for (int32_t i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
    if (i + 1 < n) {
      if (const Merge* m = find_merge(symbols[static_cast<size_t>(i)], symbols[static_cast<size_t>(i) + 1])) {
        heap.push({m->rank, i, m->new_id});
      }
    }
  }
  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    const auto pos = static_cast<size_t>(top.pos);
    if (symbols[pos] < 0 || next[pos] < 0) continue;  // merged away, or now last
    const auto right = static_cast<size_t>(next[pos]);
    const Merge* m = find_merge(symbols[pos], symbols[right]);
    if (!m || m->new_id != top.new_id) continue;  // a neighbour changed since this pair was queued
    symbols[pos] = top.new_id;
    symbols[right] = -1;
    next[pos] = next[right];
    if (next[pos] >= 0) prev[static_cast<size_t>(next[pos])] = top.pos;
    if (prev[pos] >= 0) {
      const auto left = static_cast<size_t>(prev[pos]);
      if (const Merge* lm = find_merge(symbols[left], symbols[pos])) heap.push({lm->rank, prev[pos], lm->new_id});
    }
    if (next[pos] >= 0) {
      if (const Merge* rm = find_merge(symbols[pos], symbols[static_cast<size_t>(next[pos])])) {
        heap.push({rm->rank, top.pos, rm->new_id});
      }
    }
  }
  size_t out = 0;
  for (int32_t s : symbols) {
    if (s >= 0) symbols[out++] = s;
  }
  symbols.resize(out);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> symbols;
  const int32_t whole = ignore_merges_ ? token_to_id(word) : -1;
  if (whole >= 0) {
    symbols.push_back(whole);
  } else {
    initial_symbols(word, symbols);
    merge_symbols(symbols);
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::string(word), std::move(symbols));
  }
}

}  // namespace ember::genai::detail
