#include "genai/jinja/strings.h"

#include <algorithm>

#include <fmt/format.h>

namespace ember::genai::jinja::str {
namespace {

uint32_t decode(const std::string& c) {
  const auto* p = reinterpret_cast<const unsigned char*>(c.data());
  if (c.size() == 1) return p[0];
  if (c.size() == 2) return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
  if (c.size() == 3) return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
  return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
}

// Python's str.isspace() code points.
bool is_space(uint32_t cp) {
  return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool is_alpha_ascii(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<std::string> cps = utf8_chars(s);
  std::vector<std::string> set;
  const bool use_set = chars && !chars->is_none() && !chars->is_undefined();
  if (use_set) {
    if (!chars->is_string()) throw Error("strip arg must be None or str");
    set = utf8_chars(chars->str());
  }
  auto strippable = [&](const std::string& c) {
    return use_set ? std::find(set.begin(), set.end(), c) != set.end() : is_space(decode(c));
  };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strippable(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(cps[end - 1])) --end;
  }
  std::string out;
  for (size_t i = begin; i < end; ++i) out += cps[i];
  return out;
}

List split(const std::string& s, const Value* sep, int64_t maxsplit) {
  List out;
  if (sep && sep->is_string()) {
    const std::string& d = sep->str();
    if (d.empty()) throw Error("empty separator");
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t at = s.find(d, pos);
      if (at == std::string::npos) break;
      out.emplace_back(s.substr(pos, at - pos));
      pos = at + d.size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::vector<std::string> cps = utf8_chars(s);
  size_t i = 0;
  while (true) {
    while (i < cps.size() && is_space(decode(cps[i]))) ++i;
    if (i == cps.size()) break;
    std::string word;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      for (; i < cps.size(); ++i) word += cps[i];
      while (!word.empty() && (word.back() == ' ' || (word.back() >= 9 && word.back() <= 13))) word.pop_back();
      out.emplace_back(word);
      break;
    }
    for (; i < cps.size() && !is_space(decode(cps[i])); ++i) word += cps[i];
    out.emplace_back(word);
  }
  return out;
}

std::string replace(const std::string& s, const std::string& old, const std::string& with, int64_t count) {
  std::string out;
  if (old.empty()) {
    std::vector<std::string> cps = utf8_chars(s);
    int64_t n = 0;
    for (const auto& c : cps) {
      if (count < 0 || n++ < count) out += with;
      out += c;
      check_string_size(out.size());
    }
    if (count < 0 || n < count) out += with;
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t at = s.find(old, pos);
    if (at == std::string::npos) break;
    out += s.substr(pos, at - pos) + with;
    check_string_size(out.size());
    pos = at + old.size();
    ++n;
  }
  return out + s.substr(pos);
}

std::string upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return s;
}

std::string capitalize(const std::string& s) {
  std::string out = lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

std::string title(const std::string& s, bool title_filter) {
  std::string out = s;
  bool word_start = true;
  for (char& c : out) {
    if (title_filter) {
      const bool boundary = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || c == ' ' || (c >= 9 && c <= 13);
      if (boundary) {
        word_start = true;
        continue;
      }
      c = word_start ? upper(std::string(1, c))[0] : lower(std::string(1, c))[0];
      word_start = false;
    } else {
      const bool cased = is_alpha_ascii(c);
      if (cased) c = word_start ? upper(std::string(1, c))[0] : lower(std::string(1, c))[0];
      word_start = !cased;
    }
  }
  return out;
}

std::string format(const std::string& f, const Args& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (f[i] == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) throw Error("Single '{' encountered in format string");
      const std::string field = f.substr(i + 1, close - i - 1);
      const Value* v = nullptr;
      if (field.empty()) {
        v = args.get(auto_index++, "");
      } else if (std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        v = args.get(std::stoul(field), "");
      } else {
        for (const auto& [k, kv] : args.keyword) {
          if (k == field) v = &kv;
        }
      }
      if (!v) throw Error(fmt::format("format field '{}' has no argument", field));
      out += v->to_string();
      check_string_size(out.size());
      i = close;
    } else {
      out += f[i];
    }
  }
  return out;
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace ember::genai::jinja::str
