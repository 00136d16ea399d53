#include "genai/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "genai/jinja/strings.h"

namespace ember::genai::jinja {
namespace {

int64_t int_arg(const Args& a, size_t i, const char* name, int64_t fallback) {
  const Value* v = a.get(i, name);
  return v && v->is_number() ? v->as_int() : fallback;
}
bool bool_arg(const Args& a, size_t i, const char* name, bool fallback) {
  const Value* v = a.get(i, name);
  return v && !v->is_undefined() ? v->truthy() : fallback;
}
const Value& require(const Args& a, size_t i, const char* name, const char* what) {
  const Value* v = a.get(i, name);
  if (!v) throw Error(fmt::format("{}: missing argument '{}'", what, name));
  return *v;
}
const std::string& string_of(const Value& v, const char* what) {
  if (!v.is_string()) throw Error(fmt::format("{} expects a string, got {}", what, v.type_name()));
  return v.str();
}
Args shifted(const Args& a, size_t n) {
  Args out;
  if (a.positional.size() > n) out.positional.assign(a.positional.begin() + static_cast<long>(n), a.positional.end());
  out.keyword = a.keyword;
  return out;
}

// "a.b.0" attribute paths of map/selectattr/sort/join.
Value attribute_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t dot = std::min(path.find('.', pos), path.size());
    const std::string part = path.substr(pos, dot - pos);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = numeric ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(cur, Value(part));
    pos = dot + 1;
  }
  return cur;
}

Value key_of(const Value& v, const Value* attribute, bool case_sensitive) {
  Value k = attribute && attribute->is_string() ? attribute_path(v, attribute->str()) : v;
  return !case_sensitive && k.is_string() ? Value(str::lower(k.str())) : k;
}

// jinja2's select/reject/map yield nothing for a false operand (None, an empty list).
List select_items(const Value& seq, const Args& a, bool by_attribute, bool keep) {
  if (!seq.truthy()) return {};
  const std::string attr = by_attribute ? string_of(require(a, 0, "attribute", "selectattr"), "selectattr") : "";
  const size_t skip = by_attribute ? 1 : 0;
  const Value* test = a.positional.size() > skip ? &a.positional[skip] : nullptr;
  Args test_args = shifted(a, skip + 1);
  List out;
  for (const Value& item : seq.iterate()) {
    const Value subject = by_attribute ? attribute_path(item, attr) : item;
    const bool pass = test ? apply_test(string_of(*test, "select"), subject, test_args) : subject.truthy();
    if (pass == keep) out.push_back(item);
  }
  return out;
}

std::string indent(const std::string& s, const Args& a) {
  const Value* width = a.get(0, "width");
  std::string pad;
  if (width && width->is_string()) {
    pad = width->str();
  } else {
    const int64_t spaces = std::max<int64_t>(0, int_arg(a, 0, "width", 4));
    check_string_size(static_cast<size_t>(spaces));
    pad.assign(static_cast<size_t>(spaces), ' ');
  }
  const bool first = bool_arg(a, 1, "first", false);
  const bool blank = bool_arg(a, 2, "blank", false);
  std::vector<std::string> lines;
  size_t pos = 0;
  const std::string text = s + "\n";
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::string out = lines[0];
  for (size_t i = 1; i < lines.size(); ++i) {
    out += "\n" + ((blank || !lines[i].empty()) ? pad : "") + lines[i];
    check_string_size(out.size());
  }
  return first ? pad + out : out;
}

Value escape(const Value& v, const Args&) { return v.is_markup() ? v : Value::markup(str::escape_html(v.to_string())); }

Value to_int(const Value& v, const Args& a) {
  const Value fallback = a.get(0, "default") ? *a.get(0, "default") : Value(int64_t{0});
  if (v.is_number()) return Value(v.as_int());
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string t = str::strip(v.str(), nullptr, true, true);
      const int64_t i = std::stoll(t, &used);
      if (used == t.size()) return Value(i);
      const double d = std::stod(t, &used);
      if (used == t.size()) return Value(static_cast<int64_t>(d));
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

Value to_float(const Value& v, const Args& a) {
  const Value fallback = a.get(0, "default") ? *a.get(0, "default") : Value(0.0);
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string t = str::strip(v.str(), nullptr, true, true);
      const double d = std::stod(t, &used);
      if (used == t.size()) return Value(d);
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

Value sorted(const Value& v, const Args& a, size_t first_arg) {
  List items = v.iterate();
  const bool reverse = bool_arg(a, first_arg, "reverse", false);
  const bool case_sensitive = bool_arg(a, first_arg + 1, "case_sensitive", false);
  const Value* attribute = a.get(first_arg + 2, "attribute");
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = key_of(x, attribute, case_sensitive), ky = key_of(y, attribute, case_sensitive);
    return reverse ? ky.less(kx) : kx.less(ky);
  });
  return Value(std::move(items));
}

Value dict_items(const Value& v) {
  List out;
  if (v.is_undefined()) return Value(std::move(out));
  if (!v.is_dict()) throw Error(fmt::format("items filter expects a mapping, got {}", v.type_name()));
  for (const auto& [k, e] : v.dict()) out.emplace_back(List{k, e});
  return Value(std::move(out));
}

using FilterFn = Value (*)(const Value&, const Args&);

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> kFilters = {
      {"tojson", [](const Value& v, const Args& a) {
         // Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
         JsonFormat f;
         f.ensure_ascii = bool_arg(a, 0, "ensure_ascii", false);
         const Value* ind = a.get(1, "indent");
         if (ind && ind->is_number()) f.indent = static_cast<int>(ind->as_int());
         if (ind && ind->is_string()) throw Error("tojson: a string indent is not supported");
         if (f.indent >= 0) f.item_separator = ",";
         if (const Value* sep = a.get(2, "separators"); sep && !sep->is_none()) {
           if (!sep->is_list() || sep->list().size() != 2 || !sep->list()[0].is_string() || !sep->list()[1].is_string()) {
             throw Error(fmt::format("tojson: separators must be a pair of strings, got {}", sep->repr()));
           }
           f.item_separator = sep->list()[0].str();
           f.key_separator = sep->list()[1].str();
         }
         f.sort_keys = bool_arg(a, 3, "sort_keys", false);
         return Value(v.to_json(f));
       }},
      {"trim", [](const Value& v, const Args& a) { return Value(str::strip(v.to_string(), a.get(0, "chars"), true, true)); }},
      {"length", [](const Value& v, const Args&) { return Value(v.is_undefined() ? 0 : v.length()); }},
      {"count", [](const Value& v, const Args&) { return Value(v.is_undefined() ? 0 : v.length()); }},
      {"upper", [](const Value& v, const Args&) { return Value(str::upper(v.to_string())); }},
      {"lower", [](const Value& v, const Args&) { return Value(str::lower(v.to_string())); }},
      {"title", [](const Value& v, const Args&) { return Value(str::title(v.to_string(), true)); }},
      {"capitalize", [](const Value& v, const Args&) { return Value(str::capitalize(v.to_string())); }},
      {"replace", [](const Value& v, const Args& a) {
         return Value(str::replace(v.to_string(), require(a, 0, "old", "replace").to_string(),
                                   require(a, 1, "new", "replace").to_string(), int_arg(a, 2, "count", -1)));
       }},
      {"join", [](const Value& v, const Args& a) {
         const Value* sep = a.get(0, "d");
         const Value* attribute = a.get(1, "attribute");
         std::string out;
         bool first = true;
         for (const Value& item : v.iterate()) {
           if (!first && sep) out += sep->to_string();
           first = false;
           out += (attribute ? attribute_path(item, attribute->to_string()) : item).to_string();
           check_string_size(out.size());
         }
         return Value(out);
       }},
      {"default", [](const Value& v, const Args& a) {
         const Value* d = a.get(0, "default_value");
         const bool boolean = bool_arg(a, 1, "boolean", false);
         if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value(std::string());
         return v;
       }},
      {"first", [](const Value& v, const Args&) {
         List items = v.iterate();
         return items.empty() ? Value() : items.front();
       }},
      {"last", [](const Value& v, const Args&) {
         if (v.is_generator()) throw Error("'generator' object is not reversible");
         List items = v.iterate();
         return items.empty() ? Value() : items.back();
       }},
      {"list", [](const Value& v, const Args&) { return Value(v.iterate()); }},
      {"items", [](const Value& v, const Args&) { return dict_items(v); }},
      {"dictsort", [](const Value& v, const Args& a) {
         List items = dict_items(v).list();
         const bool case_sensitive = bool_arg(a, 0, "case_sensitive", false);
         const Value* by = a.get(1, "by");
         const size_t pos = by && by->is_string() && by->str() == "value" ? 1 : 0;
         const bool reverse = bool_arg(a, 2, "reverse", false);
         std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
           const Value kx = key_of(x.list()[pos], nullptr, case_sensitive), ky = key_of(y.list()[pos], nullptr, case_sensitive);
           return reverse ? ky.less(kx) : kx.less(ky);
         });
         return Value(std::move(items));
       }},
      {"map", [](const Value& v, const Args& a) {
         List out;
         if (!v.truthy()) return Value::generator(std::move(out));
         const Value* attribute = a.get(99, "attribute");
         for (const Value& item : v.iterate()) {
           if (attribute) {
             Value r = attribute_path(item, attribute->to_string());
             const Value* d = a.get(99, "default");
             out.push_back(r.is_undefined() && d ? *d : r);
           } else {
             out.push_back(apply_filter(string_of(require(a, 0, "filter", "map"), "map"), item, shifted(a, 1)));
           }
         }
         return Value::generator(std::move(out));
       }},
      {"select", [](const Value& v, const Args& a) { return Value::generator(select_items(v, a, false, true)); }},
      {"reject", [](const Value& v, const Args& a) { return Value::generator(select_items(v, a, false, false)); }},
      {"selectattr", [](const Value& v, const Args& a) { return Value::generator(select_items(v, a, true, true)); }},
      {"rejectattr", [](const Value& v, const Args& a) { return Value::generator(select_items(v, a, true, false)); }},
      {"string", [](const Value& v, const Args&) { return v.is_markup() ? v : Value(v.to_string()); }},
      {"int", to_int},
      {"float", to_float},
      {"safe", [](const Value& v, const Args&) { return Value::markup(v.to_string()); }},
      {"escape", escape},
      {"e", escape},
      {"indent", [](const Value& v, const Args& a) { return Value(indent(v.to_string(), a)); }},
      {"unique", [](const Value& v, const Args& a) {
         const bool case_sensitive = bool_arg(a, 0, "case_sensitive", false);
         const Value* attribute = a.get(1, "attribute");
         List out, seen;
         for (const Value& item : v.iterate()) {
           const Value k = key_of(item, attribute, case_sensitive);
           if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(k); })) {
             seen.push_back(k);
             out.push_back(item);
           }
         }
         return Value::generator(std::move(out));
       }},
      {"sort", [](const Value& v, const Args& a) { return sorted(v, a, 0); }},
      {"reverse", [](const Value& v, const Args&) {
         if (v.is_string()) {
           std::vector<std::string> cps = utf8_chars(v.str());
           std::string out;
           for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
           return Value(out);
         }
         List items = v.iterate();
         std::reverse(items.begin(), items.end());
         return Value(std::move(items));
       }},
      {"abs", [](const Value& v, const Args&) {
         if (!v.is_number()) throw Error(fmt::format("bad operand type for abs(): '{}'", v.type_name()));
         return v.is_float() ? Value(std::fabs(v.as_float())) : Value(static_cast<int64_t>(std::llabs(v.as_int())));
       }},
      {"round", [](const Value& v, const Args& a) {
         const double scale = std::pow(10.0, static_cast<double>(int_arg(a, 0, "precision", 0)));
         const Value* method = a.get(1, "method");
         const std::string m = method ? method->to_string() : "common";
         const double x = v.as_float() * scale;
         const double r = m == "floor" ? std::floor(x) : m == "ceil" ? std::ceil(x) : std::round(x);
         return Value(r / scale);
       }},
      {"sum", [](const Value& v, const Args& a) {
         const Value* attribute = a.get(0, "attribute");
         Value total = a.get(1, "start") ? *a.get(1, "start") : Value(int64_t{0});
         for (const Value& item : v.iterate()) {
           const Value x = attribute ? attribute_path(item, attribute->to_string()) : item;
           total = total.is_float() || x.is_float() ? Value(total.as_float() + x.as_float()) : Value(total.as_int() + x.as_int());
         }
         return total;
       }},
      {"min", [](const Value& v, const Args& a) {
         List s = sorted(v, Args{{}, a.keyword}, 0).list();
         return s.empty() ? Value() : s.front();
       }},
      {"max", [](const Value& v, const Args& a) {
         List s = sorted(v, Args{{}, a.keyword}, 0).list();
         return s.empty() ? Value() : s.back();
       }},
      {"attr", [](const Value& v, const Args& a) { return get_attribute(v, require(a, 0, "name", "attr").to_string()); }},
  };
  return kFilters;
}

using TestFn = bool (*)(const Value&, const Args&);

const std::map<std::string, TestFn>& tests() {
  static const auto eq = [](const Value& v, const Args& a) { return v.equals(require(a, 0, "other", "eq")); };
  static const auto ne = [](const Value& v, const Args& a) { return !v.equals(require(a, 0, "other", "ne")); };
  static const auto lt = [](const Value& v, const Args& a) { return v.less(require(a, 0, "other", "lt")); };
  static const auto le = [](const Value& v, const Args& a) { return !require(a, 0, "other", "le").less(v); };
  static const auto gt = [](const Value& v, const Args& a) { return require(a, 0, "other", "gt").less(v); };
  static const auto ge = [](const Value& v, const Args& a) { return !v.less(require(a, 0, "other", "ge")); };
  static const std::map<std::string, TestFn> kTests = {
      {"defined", [](const Value& v, const Args&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const Args&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const Args&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const Args&) { return v.is_bool(); }},
      {"true", [](const Value& v, const Args&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const Args&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const Args&) { return v.is_int(); }},
      {"float", [](const Value& v, const Args&) { return v.is_float(); }},
      {"number", [](const Value& v, const Args&) { return v.is_number(); }},
      {"string", [](const Value& v, const Args&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const Args&) { return v.is_dict(); }},
      {"iterable", [](const Value& v, const Args&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
      {"sequence", [](const Value& v, const Args&) {
         return v.is_string() || (v.is_list() && !v.is_generator()) || v.is_dict() || v.is_undefined();
       }},
      {"callable", [](const Value& v, const Args&) { return v.is_function(); }},
      {"sameas", [](const Value& v, const Args& a) {
         const Value& o = require(a, 0, "other", "sameas");
         return v.kind() == o.kind() && (v.is_none() || v.is_undefined() || (v.is_bool() && v.as_bool() == o.as_bool()));
       }},
      {"eq", eq}, {"equalto", eq}, {"==", eq}, {"ne", ne}, {"!=", ne},
      {"lt", lt}, {"lessthan", lt}, {"<", lt}, {"le", le}, {"<=", le},
      {"gt", gt}, {"greaterthan", gt}, {">", gt}, {"ge", ge}, {">=", ge},
      {"in", [](const Value& v, const Args& a) {
         const Value& seq = require(a, 0, "seq", "in");
         if (seq.is_string()) return v.is_string() && seq.str().find(v.str()) != std::string::npos;
         if (seq.is_dict()) return seq.find(v) != nullptr;
         const List items = seq.iterate();
         return std::any_of(items.begin(), items.end(), [&](const Value& x) { return x.equals(v); });
       }},
      {"lower", [](const Value& v, const Args&) { return v.is_string() && str::lower(v.str()) == v.str(); }},
      {"upper", [](const Value& v, const Args&) { return v.is_string() && str::upper(v.str()) == v.str(); }},
      {"odd", [](const Value& v, const Args&) { return v.as_int() % 2 != 0; }},
      {"even", [](const Value& v, const Args&) { return v.as_int() % 2 == 0; }},
      {"divisibleby", [](const Value& v, const Args& a) {
         const int64_t d = require(a, 0, "num", "divisibleby").as_int();
         return d != 0 && v.as_int() % d == 0;
       }},
  };
  return kTests;
}

Value string_method(const std::string& s, const std::string& name) {
  auto bind = [s](Value (*fn)(const std::string&, const Args&)) {
    return Value(Function([s, fn](const Args& a) { return fn(s, a); }));
  };
  using M = Value (*)(const std::string&, const Args&);
  static const std::map<std::string, M> kMethods = {
      {"strip", [](const std::string& x, const Args& a) { return Value(str::strip(x, a.get(0, "chars"), true, true)); }},
      {"lstrip", [](const std::string& x, const Args& a) { return Value(str::strip(x, a.get(0, "chars"), true, false)); }},
      {"rstrip", [](const std::string& x, const Args& a) { return Value(str::strip(x, a.get(0, "chars"), false, true)); }},
      {"split", [](const std::string& x, const Args& a) { return Value(str::split(x, a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1))); }},
      {"upper", [](const std::string& x, const Args&) { return Value(str::upper(x)); }},
      {"lower", [](const std::string& x, const Args&) { return Value(str::lower(x)); }},
      {"title", [](const std::string& x, const Args&) { return Value(str::title(x, false)); }},
      {"capitalize", [](const std::string& x, const Args&) { return Value(str::capitalize(x)); }},
      {"format", [](const std::string& x, const Args& a) { return Value(str::format(x, a)); }},
      {"replace", [](const std::string& x, const Args& a) {
         return Value(str::replace(x, string_of(require(a, 0, "old", "replace"), "replace"),
                                   string_of(require(a, 1, "new", "replace"), "replace"), int_arg(a, 2, "count", -1)));
       }},
      {"startswith", [](const std::string& x, const Args& a) {
         const Value& p = require(a, 0, "prefix", "startswith");
         const List options = p.is_list() ? p.list() : List{p};
         return Value(std::any_of(options.begin(), options.end(), [&](const Value& o) { return x.starts_with(string_of(o, "startswith")); }));
       }},
      {"endswith", [](const std::string& x, const Args& a) {
         const Value& p = require(a, 0, "suffix", "endswith");
         const List options = p.is_list() ? p.list() : List{p};
         return Value(std::any_of(options.begin(), options.end(), [&](const Value& o) { return x.ends_with(string_of(o, "endswith")); }));
       }},
      {"find", [](const std::string& x, const Args& a) {
         const size_t at = x.find(string_of(require(a, 0, "sub", "find"), "find"));
         return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(utf8_chars(x.substr(0, at)).size()));
       }},
      {"count", [](const std::string& x, const Args& a) {
         const std::string& sub = string_of(require(a, 0, "sub", "count"), "count");
         if (sub.empty()) return Value(static_cast<int64_t>(utf8_chars(x).size()) + 1);
         int64_t n = 0;
         for (size_t at = x.find(sub); at != std::string::npos; at = x.find(sub, at + sub.size())) ++n;
         return Value(n);
       }},
      {"join", [](const std::string& x, const Args& a) {
         std::string out;
         bool first = true;
         for (const Value& item : require(a, 0, "iterable", "join").iterate()) {
           out += (first ? "" : x) + string_of(item, "join");
           check_string_size(out.size());
           first = false;
         }
         return Value(out);
       }},
      {"isdigit", [](const std::string& x, const Args&) { return Value(!x.empty() && std::all_of(x.begin(), x.end(), ::isdigit)); }},
      {"isspace", [](const std::string& x, const Args&) { return Value(!x.empty() && str::strip(x, nullptr, true, true).empty()); }},
  };
  const auto it = kMethods.find(name);
  return it == kMethods.end() ? Value() : bind(it->second);
}

Value dict_method(const Value& d, const std::string& name) {
  if (name == "items") return Value(Function([d](const Args&) { return dict_items(d); }));
  if (name == "keys") return Value(Function([d](const Args&) { return Value(d.iterate()); }));
  if (name == "values") {
    return Value(Function([d](const Args&) {
      List out;
      for (const auto& item : d.dict()) out.push_back(item.second);
      return Value(std::move(out));
    }));
  }
  if (name == "get") {
    return Value(Function([d](const Args& a) {
      const Value* v = d.find(require(a, 0, "key", "get"));
      const Value* fallback = a.get(1, "default");
      return v ? *v : (fallback ? *fallback : Value::none());
    }));
  }
  return Value();
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }
bool has_test(const std::string& name) { return tests().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& operand, const Args& args) {
  const auto it = filters().find(name);
  if (it == filters().end()) throw Error(fmt::format("No filter named '{}'.", name));
  return it->second(operand, args);
}

bool apply_test(const std::string& name, const Value& operand, const Args& args) {
  const auto it = tests().find(name);
  if (it == tests().end()) throw Error(fmt::format("No test named '{}'.", name));
  return it->second(operand, args);
}

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) throw Error(fmt::format("cannot read attribute '{}' of an undefined value", name));
  if (obj.is_string()) return string_method(obj.str(), name);
  if (obj.is_dict()) {
    Value method = dict_method(obj, name);
    if (!method.is_undefined()) return method;
  }
  const Value* v = obj.find(name);
  return v ? *v : Value();
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) throw Error(fmt::format("cannot read item {} of an undefined value", key.repr()));
  if (obj.is_generator()) return Value();
  if ((obj.is_list() || obj.is_string()) && key.is_number() && !key.is_float()) {
    const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.list().size()) : obj.length();
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    return obj.is_list() ? obj.list()[i] : Value(utf8_char_at(obj.str(), i));
  }
  if (obj.is_dict()) {
    const Value* v = obj.find(key);
    if (v) return *v;
  }
  return key.is_string() ? get_attribute(obj, key.str()) : Value();
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  std::vector<Value> items;
  if (obj.is_list()) {
    items = obj.list();
  } else if (obj.is_string()) {
    for (auto& c : utf8_chars(obj.str())) items.emplace_back(std::move(c));
  } else {
    throw Error(fmt::format("'{}' object is not subscriptable", obj.type_name()));
  }
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t st = step.is_none() || step.is_undefined() ? 1 : step.as_int();
  if (st == 0) throw Error("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t fallback) {
    if (v.is_none() || v.is_undefined()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) i += n;
    return st > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = clamp(start, st > 0 ? 0 : n - 1);
  const int64_t e = clamp(stop, st > 0 ? n : -1);
  List out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(items[i]);
  if (obj.is_list()) return Value(std::move(out));
  std::string s;
  for (const Value& c : out) s += c.str();
  return Value(s);
}

}  // namespace ember::genai::jinja
