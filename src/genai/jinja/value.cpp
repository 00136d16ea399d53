#include "genai/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ember::genai::jinja {

const Value* Args::get(size_t index, const char* name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return index < positional.size() ? &positional[index] : nullptr;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), f_(f) {}
void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes) throw Error(fmt::format("the template made a string longer than {} bytes", kMaxStringBytes));
}

Value::Value(std::string s) : kind_(Kind::kString) {
  check_string_size(s.size());
  s_ = std::make_shared<const std::string>(std::move(s));
}
Value::Value(List list) : kind_(Kind::kList) {
  if (list.size() > kMaxListItems) {
    throw Error(fmt::format("the template made a list of more than {} items", kMaxListItems));
  }
  list_ = std::make_shared<List>(std::move(list));
  for (const Value& item : *list_) depth_ = std::max(depth_, item.depth_);
  check_depth();
}
Value::Value(Dict dict) : kind_(Kind::kDict) {
  if (dict.size() > kMaxListItems) {
    throw Error(fmt::format("the template made a dict of more than {} items", kMaxListItems));
  }
  dict_ = std::make_shared<Dict>(std::move(dict));
  for (const auto& [key, value] : *dict_) depth_ = std::max({depth_, key.depth_, value.depth_});
  check_depth();
}
Value::Value(Function fn) : kind_(Kind::kFunction), fn_(std::make_shared<const Function>(std::move(fn))) {}

void Value::check_depth() {
  if (++depth_ > kMaxNesting) {
    throw Error(fmt::format("lists and dicts nest more than {} deep", kMaxNesting));
  }
}

Value Value::make_namespace(Dict attrs) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.dict_ = std::make_shared<Dict>(std::move(attrs));
  return v;
}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.markup_ = true;
  return v;
}

Value Value::generator(List items) {
  Value v(std::move(items));
  v.generator_ = true;
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List list;
      for (const auto& e : j) list.push_back(from_json(e));
      return Value(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      for (const auto& [k, e] : j.items()) dict.emplace_back(Value(k), from_json(e));
      return Value(std::move(dict));
    }
    default: return Value();
  }
}

const Value* Value::find(const std::string& key) const {
  if (kind_ != Kind::kDict && kind_ != Kind::kNamespace) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

const Value* Value::find(const Value& key) const {
  if (kind_ != Kind::kDict && kind_ != Kind::kNamespace) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k.equals(key)) return &v;
  }
  return nullptr;
}

void Value::set(const std::string& key, Value v) const { set(Value(key), std::move(v)); }

void Value::set(const Value& key, Value v) const {
  for (auto& [k, old] : *dict_) {
    if (k.equals(key)) {
      old = std::move(v);
      return;
    }
  }
  dict_->emplace_back(key, std::move(v));
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !s_->empty();
    case Kind::kList: return generator_ || !list_->empty();
    case Kind::kDict: return !dict_->empty();
    default: return true;
  }
}

std::string format_float(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  std::string digits;
  for (char c : mantissa) {
    if (c >= '0' && c <= '9') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(-exponent - 1, '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exponent + 1) {
      out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int mag = std::abs(exponent);
  out += exponent < 0 ? "e-" : "e+";
  out += (mag < 10 ? "0" : "") + std::to_string(mag);
  return out;
}

namespace {

// The bytes of the character s[i] starts, as utf8_chars splits them.
size_t char_bytes(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  return std::min<size_t>(c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4, s.size() - i);
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += char_bytes(s, i)) ++n;
  return n;
}

}  // namespace

std::string utf8_char_at(const std::string& s, int64_t i) {
  for (size_t at = 0; at < s.size(); at += char_bytes(s, at)) {
    if (i-- == 0) return s.substr(at, char_bytes(s, at));
  }
  return {};
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = char_bytes(s, i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const char quote = has_single && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c == quote) out += std::string("\\") + static_cast<char>(c);
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out + quote;
}

// One UTF-8 sequence starting at s[i] (advancing i); invalid bytes read as U+FFFD.
uint32_t next_code_point(const std::string& s, size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) {
    ++i;
    return 0xFFFD;
  }
  uint32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80 && ensure_ascii) {
      const uint32_t cp = next_code_point(s, i);
      if (cp < 0x10000) {
        out += fmt::format("\\u{:04x}", cp);
      } else {
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (c == 0x7F && ensure_ascii)) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  out += '"';
}

// json.dumps turns int, float, bool and None keys into strings.
std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::kString: return k.str();
    case Value::Kind::kNone: return "null";
    case Value::Kind::kBool: return k.as_bool() ? "true" : "false";
    case Value::Kind::kInt:
    case Value::Kind::kFloat: return k.to_string();
    default: throw Error(fmt::format("keys must be str, int, float, bool or None, not {}", k.type_name()));
  }
}

void json_dump(const Value& v, const JsonFormat& f, int depth, std::string& out) {
  auto newline = [&](int d) {
    if (f.indent < 0) return;
    const size_t spaces = static_cast<size_t>(f.indent) * static_cast<size_t>(d);
    check_string_size(out.size() + spaces);
    out += '\n';
    out.append(spaces, ' ');
  };
  check_string_size(out.size());
  if (v.is_generator()) throw Error("Object of type generator is not JSON serializable");
  switch (v.kind()) {
    case Value::Kind::kNone: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      const double x = v.as_float();
      out += std::isnan(x) ? "NaN" : std::isinf(x) ? (x > 0 ? "Infinity" : "-Infinity") : format_float(x);
      return;
    }
    case Value::Kind::kString: json_string(v.str(), f.ensure_ascii, out); return;
    case Value::Kind::kList: {
      if (v.list().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i) out += f.item_separator;
        newline(depth + 1);
        json_dump(v.list()[i], f, depth + 1, out);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.dict().empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& item : v.dict()) items.push_back(&item);
      if (f.sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first.less(b->first); });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += f.item_separator;
        newline(depth + 1);
        json_string(json_key(items[i]->first), f.ensure_ascii, out);
        out += f.key_separator;
        json_dump(items[i]->second, f, depth + 1, out);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: throw Error(fmt::format("Object of type {} is not JSON serializable", v.type_name()));
  }
}

}  // namespace

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kString: return repr_string(*s_);
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        out += (i ? ", " : "") + (*list_)[i].repr();
        check_string_size(out.size());
      }
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        out += (i ? ", " : "") + (*dict_)[i].first.repr() + ": " + (*dict_)[i].second.repr();
        check_string_size(out.size());
      }
      return out + "}";
    }
    default: return to_string();
  }
}

std::string Value::to_string() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return format_float(f_);
    case Kind::kString: return *s_;
    case Kind::kFunction: return "<function>";
    case Kind::kNamespace: return "<Namespace>";
    default: return repr();
  }
}

std::string Value::to_json(const JsonFormat& format) const {
  std::string out;
  json_dump(*this, format, 0, out);
  return out;
}

const char* Value::type_name() const {
  if (generator_) return "generator";
  static const char* kNames[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict", "function",
                                 "Namespace"};
  return kNames[static_cast<int>(kind_)];
}

bool Value::equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_float() || o.is_float()) return as_float() == o.as_float();
    return as_int() == o.as_int();
  }
  if (kind_ != o.kind_ || generator_ != o.generator_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return *s_ == *o.s_;
    case Kind::kList:
      return list_->size() == o.list_->size() &&
             std::equal(list_->begin(), list_->end(), o.list_->begin(),
                        [](const Value& a, const Value& b) { return a.equals(b); });
    case Kind::kDict: {
      if (dict_->size() != o.dict_->size()) return false;
      for (const auto& [k, v] : *dict_) {
        const Value* other = o.find(k);
        if (!other || !v.equals(*other)) return false;
      }
      return true;
    }
    default: return fn_ == o.fn_ && dict_ == o.dict_;
  }
}

bool Value::less(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_float() || o.is_float()) return as_float() < o.as_float();
    return as_int() < o.as_int();
  }
  if (is_string() && o.is_string()) return *s_ < *o.s_;
  if (is_list() && o.is_list()) {
    return std::lexicographical_compare(list_->begin(), list_->end(), o.list_->begin(), o.list_->end(),
                                        [](const Value& a, const Value& b) { return a.less(b); });
  }
  throw Error(fmt::format("'<' not supported between instances of '{}' and '{}'", type_name(), o.type_name()));
}

List Value::iterate() const {
  switch (kind_) {
    case Kind::kUndefined: return {};
    case Kind::kList: return *list_;
    case Kind::kDict: {
      List keys;
      for (const auto& item : *dict_) keys.emplace_back(item.first);
      return keys;
    }
    case Kind::kString: {
      if (utf8_length(*s_) > kMaxListItems) {
        throw Error(fmt::format("iterating a string of more than {} characters", kMaxListItems));
      }
      List chars;
      for (auto& c : utf8_chars(*s_)) chars.emplace_back(std::move(c));
      return chars;
    }
    default: throw Error(fmt::format("'{}' object is not iterable", type_name()));
  }
}

int64_t Value::length() const {
  switch (kind_) {
    case Kind::kString: return static_cast<int64_t>(utf8_length(*s_));
    case Kind::kList:
      if (generator_) throw Error("object of type 'generator' has no len()");
      return static_cast<int64_t>(list_->size());
    case Kind::kDict: return static_cast<int64_t>(dict_->size());
    default: throw Error(fmt::format("object of type '{}' has no len()", type_name()));
  }
}

}  // namespace ember::genai::jinja
