// Decoders of tokenizer.json: ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
// Replace and Sequence (HF tokenizers' decoders, each a decode_chain over tokens).
#include "genai/tokenizer_internal.h"

namespace ember::genai::detail {
namespace {

// Each token's characters become the bytes they stand for; a token with a character
// outside the byte alphabet (an added token such as "<｜User｜>") keeps its own bytes.
void byte_level_decode(std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& token : tokens) {
    const size_t mark = bytes.size();
    bool mapped = true;
    for (size_t pos = 0; pos < token.size() && mapped;) {
      const int b = byte_level_byte(utf8_decode(token, pos));
      pos += utf8_char_length(token, pos);
      if (b < 0) {
        mapped = false;
      } else {
        bytes.push_back(static_cast<char>(b));
      }
    }
    if (!mapped) {
      bytes.resize(mark);
      bytes += token;
    }
  }
  tokens.assign(1, utf8_lossy(bytes));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xNN>" tokens in a row become their bytes: the string when they form valid UTF-8,
// else one U+FFFD per byte.
void byte_fallback_decode(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  size_t byte_count = 0;
  auto flush = [&] {
    if (byte_count == 0) return;
    if (utf8_valid(bytes)) {
      out.push_back(bytes);
    } else {
      for (size_t i = 0; i < byte_count; ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    bytes.clear();
    byte_count = 0;
  };
  for (std::string& token : tokens) {
    if (token.size() == 6 && token.starts_with("<0x") && token[5] == '>' && hex_value(token[3]) >= 0 &&
        hex_value(token[4]) >= 0) {
      bytes.push_back(static_cast<char>(hex_value(token[3]) * 16 + hex_value(token[4])));
      ++byte_count;
      continue;
    }
    flush();
    out.push_back(std::move(token));
  }
  flush();
  tokens = std::move(out);
}

// Every replacement character becomes a space, except in the first token, where HF
// drops them (unless prepend_scheme is "never").
void metaspace_decode(const Decoder& d, std::vector<std::string>& tokens) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string out;
    const std::string& token = tokens[i];
    for (size_t pos = token.find(d.content), prev = 0;; pos = token.find(d.content, prev)) {
      out.append(token, prev, pos == std::string::npos ? std::string::npos : pos - prev);
      if (pos == std::string::npos) break;
      if (i != 0 || d.prepend_scheme == PrependScheme::kNever) out.push_back(' ');
      prev = pos + d.content.size();
    }
    tokens[i] = std::move(out);
  }
}

void strip_decode(const Decoder& d, std::vector<std::string>& tokens) {
  for (std::string& token : tokens) {
    size_t begin = 0, end = token.size();
    for (int i = 0; i < d.start && token.compare(begin, d.content.size(), d.content) == 0 && begin < end; ++i) {
      begin += d.content.size();
    }
    for (int i = 0; i < d.stop && end >= begin + d.content.size() &&
                    token.compare(end - d.content.size(), d.content.size(), d.content) == 0;
         ++i) {
      end -= d.content.size();
    }
    token = token.substr(begin, end - begin);
  }
}

}  // namespace

Result<Decoder> parse_decoder(const Json& j, const std::string& where) {
  EMBER_ASSIGN_OR_RETURN(std::string type, json_string(j, "type", where));
  Decoder d;
  if (type == "ByteLevel") {
    d.kind = Decoder::Kind::kByteLevel;
  } else if (type == "Metaspace") {
    d.kind = Decoder::Kind::kMetaspace;
    EMBER_ASSIGN_OR_RETURN(d.content, json_string(j, "replacement", where));
    EMBER_ASSIGN_OR_RETURN(d.prepend_scheme, parse_prepend_scheme(j, where));
  } else if (type == "ByteFallback") {
    d.kind = Decoder::Kind::kByteFallback;
  } else if (type == "Fuse") {
    d.kind = Decoder::Kind::kFuse;
  } else if (type == "Strip") {
    d.kind = Decoder::Kind::kStrip;
    EMBER_ASSIGN_OR_RETURN(d.content, json_string(j, "content", where));
    EMBER_ASSIGN_OR_RETURN(int64_t start, json_int(j, "start", 0, where));
    EMBER_ASSIGN_OR_RETURN(int64_t stop, json_int(j, "stop", 0, where));
    if (start < 0 || stop < 0) return invalid_model("tokenizer.json: {}.start/stop must be >= 0", where);
    d.start = static_cast<int>(start);
    d.stop = static_cast<int>(stop);
  } else if (type == "Replace") {
    d.kind = Decoder::Kind::kReplace;
    EMBER_ASSIGN_OR_RETURN(d.content, json_string(j, "content", where));
    if (!j.contains("pattern")) return invalid_model("tokenizer.json: {}.pattern is missing", where);
    EMBER_ASSIGN_OR_RETURN(d.pattern, parse_pattern(j["pattern"], where));
  } else if (type == "Sequence") {
    d.kind = Decoder::Kind::kSequence;
    auto it = j.find("decoders");
    if (it == j.end() || !it->is_array()) return invalid_model("tokenizer.json: {}.decoders must be an array", where);
    for (size_t i = 0; i < it->size(); ++i) {
      EMBER_ASSIGN_OR_RETURN(Decoder child, parse_decoder((*it)[i], fmt::format("{}.decoders[{}]", where, i)));
      d.children.push_back(std::move(child));
    }
  } else {
    return not_implemented("tokenizer.json: {}.type '{}' is not supported (ByteLevel, Metaspace, ByteFallback, Fuse, "
                           "Strip, Replace, Sequence are)", where, type);
  }
  return d;
}

void decode_chain(const Decoder& d, std::vector<std::string>& tokens) {
  switch (d.kind) {
    case Decoder::Kind::kByteLevel: byte_level_decode(tokens); break;
    case Decoder::Kind::kMetaspace: metaspace_decode(d, tokens); break;
    case Decoder::Kind::kByteFallback: byte_fallback_decode(tokens); break;
    case Decoder::Kind::kFuse: {
      std::string joined;
      for (const std::string& t : tokens) joined += t;
      tokens.assign(1, std::move(joined));
      break;
    }
    case Decoder::Kind::kStrip: strip_decode(d, tokens); break;
    case Decoder::Kind::kReplace:
      for (std::string& t : tokens) replace_all(d.pattern, d.content, t);
      break;
    case Decoder::Kind::kSequence:
      for (const Decoder& child : d.children) decode_chain(child, tokens);
      break;
  }
}

void token_bytes_chain(const Decoder& d, std::string& token) {
  switch (d.kind) {
    case Decoder::Kind::kByteLevel: {
      std::string bytes;
      for (size_t pos = 0; pos < token.size();) {
        const int b = byte_level_byte(utf8_decode(token, pos));
        if (b < 0) return;  // an added token's own text
        bytes.push_back(static_cast<char>(b));
        pos += utf8_char_length(token, pos);
      }
      token = std::move(bytes);
      break;
    }
    case Decoder::Kind::kByteFallback:
      if (token.size() == 6 && token.starts_with("<0x") && token[5] == '>' && hex_value(token[3]) >= 0 &&
          hex_value(token[4]) >= 0) {
        token.assign(1, static_cast<char>(hex_value(token[3]) * 16 + hex_value(token[4])));
      }
      break;
    case Decoder::Kind::kMetaspace:
      for (size_t pos = token.find(d.content); pos != std::string::npos; pos = token.find(d.content, pos + 1)) {
        token.replace(pos, d.content.size(), " ");
      }
      break;
    case Decoder::Kind::kReplace: replace_all(d.pattern, d.content, token); break;
    case Decoder::Kind::kFuse:
    case Decoder::Kind::kStrip: break;
    case Decoder::Kind::kSequence:
      for (const Decoder& child : d.children) token_bytes_chain(child, token);
      break;
  }
}

}  // namespace ember::genai::detail
