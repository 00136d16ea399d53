// Pre-tokenizers of tokenizer.json: Split, ByteLevel, Metaspace and Sequence (HF
// tokenizers' pre_tokenizers), applied to the text pieces left between added tokens.
#include <algorithm>
#include <array>

#include "genai/tokenizer_internal.h"

namespace ember::genai::detail {
namespace {

// GPT-2's pre-tokenization regex, used by ByteLevel with use_regex.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteLevelTables {
  std::array<std::string, 256> chars;
  std::array<int, 324> bytes;  // code point -> byte; every mapped code point is < 324
  ByteLevelTables() {
    bytes.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      utf8_append(chars[b], c);
      bytes[c] = b;
    }
  }
};

const ByteLevelTables& byte_level_tables() {
  static const ByteLevelTables tables;
  return tables;
}

struct Segment {
  size_t begin, end;
  bool remove;
};

// HF NormalizedString::split: matches and the text between them, merged per behavior.
void segments_for(std::string_view text, const std::vector<std::pair<size_t, size_t>>& matches, SplitBehavior behavior,
                  bool invert, std::vector<Segment>& out) {
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> parts;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b != prev) parts.push_back({{prev, b}, invert});
    parts.push_back({{b, e}, !invert});
    prev = e;
  }
  if (prev != text.size() || text.empty()) parts.push_back({{prev, text.size()}, invert});
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (auto& [r, m] : parts) out.push_back({r.first, r.second, false});
      break;
    case SplitBehavior::kRemoved:
      for (auto& [r, m] : parts) out.push_back({r.first, r.second, m});
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (auto& [r, m] : parts) {
        if (m && !previous_match && !out.empty()) {
          out.back().end = r.second;
        } else {
          out.push_back({r.first, r.second, false});
        }
        previous_match = m;
      }
      break;
    case SplitBehavior::kMergedWithNext: {
      const size_t first = out.size();
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !previous_match && out.size() > first) {
          out.back().begin = it->first.first;
        } else {
          out.push_back({it->first.first, it->first.second, false});
        }
        previous_match = it->second;
      }
      std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
      break;
    }
    case SplitBehavior::kContiguous:
      for (auto& [r, m] : parts) {
        if (m == previous_match && !out.empty()) {
          out.back().end = r.second;
        } else {
          out.push_back({r.first, r.second, false});
        }
        previous_match = m;
      }
      break;
  }
}

void byte_level(const PreTokenizer& p, std::vector<Piece>& pieces) {
  static const auto gpt2 = Regex::compile(kGpt2Pattern);
  std::vector<Piece> out;
  std::vector<std::pair<size_t, size_t>> matches;
  const ByteLevelTables& tables = byte_level_tables();
  for (Piece& piece : pieces) {
    if (piece.token >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    if (p.add_prefix_space && (piece.text.empty() || piece.text[0] != ' ')) piece.text = " " + piece.text;
    const size_t first = out.size();
    if (p.use_regex) {
      matches.clear();
      gpt2.value()->find_all(piece.text, matches);
      split_by_matches(piece, matches, SplitBehavior::kIsolated, false, out);
    } else if (!piece.text.empty()) {
      out.push_back(std::move(piece));
    }
    for (size_t i = first; i < out.size(); ++i) {
      std::string mapped;
      mapped.reserve(out[i].text.size() * 2);
      for (char c : out[i].text) mapped += tables.chars[static_cast<uint8_t>(c)];
      out[i].text = std::move(mapped);
    }
  }
  pieces = std::move(out);
}

void metaspace(const PreTokenizer& p, std::vector<Piece>& pieces) {
  std::vector<Piece> out;
  std::vector<std::pair<size_t, size_t>> matches;
  const Pattern space{" ", nullptr};
  const Pattern replacement{p.replacement, nullptr};
  for (Piece& piece : pieces) {
    if (piece.token >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    replace_all(space, p.replacement, piece.text);
    const bool prepend = p.prepend_scheme == PrependScheme::kAlways ||
                         (p.prepend_scheme == PrependScheme::kFirst && piece.at_start);
    if (prepend && !piece.text.starts_with(p.replacement)) piece.text.insert(0, p.replacement);
    if (!p.split) {
      if (!piece.text.empty()) out.push_back(std::move(piece));
      continue;
    }
    matches.clear();
    replacement.find_all(piece.text, matches);
    split_by_matches(piece, matches, SplitBehavior::kMergedWithNext, false, out);
  }
  pieces = std::move(out);
}

Result<SplitBehavior> parse_behavior(const Json& j, const std::string& where) {
  EMBER_ASSIGN_OR_RETURN(std::string name, json_string(j, "behavior", where));
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return invalid_model("tokenizer.json: {}.behavior '{}' is not a split behavior", where, name);
}

}  // namespace

const std::string& byte_level_char(uint8_t byte) { return byte_level_tables().chars[byte]; }

int byte_level_byte(char32_t c) { return c < 324 ? byte_level_tables().bytes[c] : -1; }

void split_by_matches(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                      SplitBehavior behavior, bool invert, std::vector<Piece>& out) {
  thread_local std::vector<Segment> segments;
  segments.clear();
  segments_for(piece.text, matches, behavior, invert, segments);
  for (const Segment& s : segments) {
    if (s.remove || s.end == s.begin) continue;
    out.push_back({piece.text.substr(s.begin, s.end - s.begin), -1, piece.at_start && s.begin == 0});
  }
}

Result<PreTokenizer> parse_pre_tokenizer(const Json& j, const std::string& where) {
  EMBER_ASSIGN_OR_RETURN(std::string type, json_string(j, "type", where));
  PreTokenizer p;
  if (type == "Split") {
    p.kind = PreTokenizer::Kind::kSplit;
    if (!j.contains("pattern")) return invalid_model("tokenizer.json: {}.pattern is missing", where);
    EMBER_ASSIGN_OR_RETURN(p.pattern, parse_pattern(j["pattern"], where));
    EMBER_ASSIGN_OR_RETURN(p.behavior, parse_behavior(j, where));
    EMBER_ASSIGN_OR_RETURN(p.invert, json_bool(j, "invert", false, where));
  } else if (type == "ByteLevel") {
    p.kind = PreTokenizer::Kind::kByteLevel;
    EMBER_ASSIGN_OR_RETURN(p.add_prefix_space, json_bool(j, "add_prefix_space", true, where));
    EMBER_ASSIGN_OR_RETURN(p.use_regex, json_bool(j, "use_regex", true, where));
  } else if (type == "Metaspace") {
    p.kind = PreTokenizer::Kind::kMetaspace;
    EMBER_ASSIGN_OR_RETURN(p.replacement, json_string(j, "replacement", where));
    EMBER_ASSIGN_OR_RETURN(p.split, json_bool(j, "split", true, where));
    EMBER_ASSIGN_OR_RETURN(p.prepend_scheme, parse_prepend_scheme(j, where));
  } else if (type == "Sequence") {
    p.kind = PreTokenizer::Kind::kSequence;
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) return invalid_model("tokenizer.json: {}.pretokenizers must be an array", where);
    for (size_t i = 0; i < it->size(); ++i) {
      EMBER_ASSIGN_OR_RETURN(PreTokenizer child,
                             parse_pre_tokenizer((*it)[i], fmt::format("{}.pretokenizers[{}]", where, i)));
      p.children.push_back(std::move(child));
    }
  } else {
    return not_implemented("tokenizer.json: {}.type '{}' is not supported (Split, ByteLevel, Metaspace, Sequence are)",
                           where, type);
  }
  return p;
}

void pre_tokenize(const PreTokenizer& p, std::vector<Piece>& pieces) {
  switch (p.kind) {
    case PreTokenizer::Kind::kSplit: {
      std::vector<Piece> out;
      std::vector<std::pair<size_t, size_t>> matches;
      for (Piece& piece : pieces) {
        if (piece.token >= 0) {
          out.push_back(std::move(piece));
          continue;
        }
        matches.clear();
        p.pattern.find_all(piece.text, matches);
        split_by_matches(piece, matches, p.behavior, p.invert, out);
      }
      pieces = std::move(out);
      break;
    }
    case PreTokenizer::Kind::kByteLevel: byte_level(p, pieces); break;
    case PreTokenizer::Kind::kMetaspace: metaspace(p, pieces); break;
    case PreTokenizer::Kind::kSequence:
      for (const PreTokenizer& child : p.children) pre_tokenize(child, pieces);
      break;
  }
}

Result<PrependScheme> parse_prepend_scheme(const Json& j, const std::string& where) {
  std::string scheme = "always";
  if (j.contains("prepend_scheme")) {
    EMBER_ASSIGN_OR_RETURN(scheme, json_string(j, "prepend_scheme", where));
  } else {
    EMBER_ASSIGN_OR_RETURN(bool add_prefix_space, json_bool(j, "add_prefix_space", true, where));
    if (!add_prefix_space) scheme = "never";
  }
  if (scheme == "always") return PrependScheme::kAlways;
  if (scheme == "first") return PrependScheme::kFirst;
  if (scheme == "never") return PrependScheme::kNever;
  return invalid_model("tokenizer.json: {}.prepend_scheme '{}' is not always/first/never", where, scheme);
}

}  // namespace ember::genai::detail
