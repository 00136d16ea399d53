// Normalizers of tokenizer.json: Unicode forms through ICU, Lowercase, Prepend,
// Replace, Strip and Sequence (HF tokenizers' normalizers).
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include "genai/tokenizer_internal.h"

namespace ember::genai::detail {
namespace {

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

const UNormalizer2* icu_normalizer(Normalizer::Kind kind) {
  UErrorCode err = U_ZERO_ERROR;
  switch (kind) {
    case Normalizer::Kind::kNfc: return unorm2_getNFCInstance(&err);
    case Normalizer::Kind::kNfd: return unorm2_getNFDInstance(&err);
    case Normalizer::Kind::kNfkc: return unorm2_getNFKCInstance(&err);
    default: return unorm2_getNFKDInstance(&err);
  }
}

// ASCII text is in every normal form, so the UTF-16 round trip is skipped for it.
void unicode_normalize(Normalizer::Kind kind, std::string& text) {
  if (is_ascii(text)) return;
  thread_local std::u16string in, out;
  UErrorCode err = U_ZERO_ERROR;
  int32_t len16 = 0;
  in.resize(text.size() + 1);
  u_strFromUTF8(in.data(), static_cast<int32_t>(in.size()), &len16, text.data(), static_cast<int32_t>(text.size()), &err);
  const UNormalizer2* norm = icu_normalizer(kind);
  if (unorm2_isNormalized(norm, in.data(), len16, &err) && U_SUCCESS(err)) return;
  err = U_ZERO_ERROR;
  // NFKD of one UTF-16 unit expands to at most 18 units (U+FDFA).
  out.resize(static_cast<size_t>(len16) * 18 + 1);
  const int32_t out_len = unorm2_normalize(norm, in.data(), len16, out.data(), static_cast<int32_t>(out.size()), &err);
  if (U_FAILURE(err)) return;
  std::string result(static_cast<size_t>(out_len) * 3, '\0');
  int32_t len8 = 0;
  err = U_ZERO_ERROR;
  u_strToUTF8(result.data(), static_cast<int32_t>(result.size()), &len8, out.data(), out_len, &err);
  if (U_FAILURE(err)) return;
  result.resize(static_cast<size_t>(len8));
  text = std::move(result);
}

// Rust's char::to_lowercase per character: the full mapping without context (a
// lone character never meets the final-sigma condition).
void lowercase(std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = utf8_char_length(text, pos);
    const char32_t c = utf8_decode(text, pos);
    pos += n;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
      continue;
    }
    UChar src[2], dst[8];
    int32_t src_len = 0;
    U16_APPEND_UNSAFE(src, src_len, c);
    UErrorCode err = U_ZERO_ERROR;
    const int32_t dst_len = u_strToLower(dst, 8, src, src_len, "", &err);
    for (int32_t i = 0; i < dst_len;) {
      UChar32 lc;
      U16_NEXT_UNSAFE(dst, i, lc);
      utf8_append(out, static_cast<char32_t>(lc));
    }
  }
  text = std::move(out);
}

void strip(std::string& text, bool left, bool right) {
  size_t begin = 0, end = text.size();
  while (left && begin < end && u_isUWhiteSpace(static_cast<UChar32>(utf8_decode(text, begin)))) {
    begin += utf8_char_length(text, begin);
  }
  while (right && end > begin) {
    size_t last = end - 1;
    while (last > begin && (static_cast<uint8_t>(text[last]) & 0xC0) == 0x80) --last;
    if (!u_isUWhiteSpace(static_cast<UChar32>(utf8_decode(text, last)))) break;
    end = last;
  }
  text = text.substr(begin, end - begin);
}

}  // namespace

Result<Normalizer> parse_normalizer(const Json& j, const std::string& where) {
  EMBER_ASSIGN_OR_RETURN(std::string type, json_string(j, "type", where));
  Normalizer n;
  if (type == "NFC") {
    n.kind = Normalizer::Kind::kNfc;
  } else if (type == "NFD") {
    n.kind = Normalizer::Kind::kNfd;
  } else if (type == "NFKC") {
    n.kind = Normalizer::Kind::kNfkc;
  } else if (type == "NFKD") {
    n.kind = Normalizer::Kind::kNfkd;
  } else if (type == "Lowercase") {
    n.kind = Normalizer::Kind::kLowercase;
  } else if (type == "Prepend") {
    n.kind = Normalizer::Kind::kPrepend;
    EMBER_ASSIGN_OR_RETURN(n.content, json_string(j, "prepend", where));
  } else if (type == "Replace") {
    n.kind = Normalizer::Kind::kReplace;
    EMBER_ASSIGN_OR_RETURN(n.content, json_string(j, "content", where));
    if (!j.contains("pattern")) return invalid_model("tokenizer.json: {}.pattern is missing", where);
    EMBER_ASSIGN_OR_RETURN(n.pattern, parse_pattern(j["pattern"], where));
  } else if (type == "Strip") {
    n.kind = Normalizer::Kind::kStrip;
    EMBER_ASSIGN_OR_RETURN(n.strip_left, json_bool(j, "strip_left", false, where));
    EMBER_ASSIGN_OR_RETURN(n.strip_right, json_bool(j, "strip_right", false, where));
  } else if (type == "Sequence") {
    n.kind = Normalizer::Kind::kSequence;
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) return invalid_model("tokenizer.json: {}.normalizers must be an array", where);
    for (size_t i = 0; i < it->size(); ++i) {
      EMBER_ASSIGN_OR_RETURN(Normalizer child, parse_normalizer((*it)[i], fmt::format("{}.normalizers[{}]", where, i)));
      n.children.push_back(std::move(child));
    }
  } else {
    return not_implemented("tokenizer.json: {}.type '{}' is not supported (NFC, NFD, NFKC, NFKD, Lowercase, "
                           "Prepend, Replace, Strip, Sequence are)", where, type);
  }
  return n;
}

void normalize(const Normalizer& n, std::string& text) {
  switch (n.kind) {
    case Normalizer::Kind::kNfc:
    case Normalizer::Kind::kNfd:
    case Normalizer::Kind::kNfkc:
    case Normalizer::Kind::kNfkd: unicode_normalize(n.kind, text); break;
    case Normalizer::Kind::kLowercase: lowercase(text); break;
    case Normalizer::Kind::kPrepend:
      if (!text.empty()) text.insert(0, n.content);
      break;
    case Normalizer::Kind::kReplace: replace_all(n.pattern, n.content, text); break;
    case Normalizer::Kind::kStrip: strip(text, n.strip_left, n.strip_right); break;
    case Normalizer::Kind::kSequence:
      for (const Normalizer& child : n.children) normalize(child, text);
      break;
  }
}

}  // namespace ember::genai::detail
