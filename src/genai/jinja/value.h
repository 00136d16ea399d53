#pragma once
// The values a Jinja template computes with, following Python's semantics as
// jinja2 exposes them: none/undefined, bool, int, float, str, list, dict
// (insertion-ordered, keys of any hashable kind: {0: 'a'} keeps its int key), callables (filters' targets, macros, methods) and
// namespace() objects. Lists, dicts and namespaces are shared by reference, as
// Python objects are.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ember::genai::jinja {

// Raised while parsing or rendering; Template turns it into a Status naming the
// template line and column.
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, int line = 0, int column = 0)
      : std::runtime_error(message), line(line), column(column) {}
  int line;
  int column;
};

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<Value, Value>>;

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The keyword argument `name`, else positional argument `index`, else null.
  const Value* get(size_t index, const char* name) const;
};
using Function = std::function<Value(const Args&)>;

struct JsonFormat {
  int indent = -1;  // -1: one line
  std::string item_separator = ", ";  // Python's default: "," when indented
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
};

// The interpreter's one nesting bound, as Python's recursion limit bounds jinja2,
// so that every recursive walk stays within the stack:
//   - a template's blocks within blocks and expressions within expressions (a
//     chain such as a + b + c is a level per operator): the parser;
//   - expressions and macro calls being evaluated: the interpreter;
//   - lists and dicts (immutable once made) within each other, which printing,
//     comparing and freeing recurse; a namespace (mutable, and opaque to those)
//     counts as a leaf.
inline constexpr int kMaxNesting = 256;

// A template's strings (its output and captured blocks included) are at most
// kMaxStringBytes and its lists at most kMaxListItems long, and a render runs
// at most kMaxRenderSteps statements and expressions: past any of them an
// Error. jinja2 would run on until memory or patience ran out: a loop of
// `{% set ns.s = ns.s ~ ns.s %}` doubles a string each pass, two nested
// range(100000) loops take 10^10 passes. A step is a statement, an
// expression or a loop's pass. Qwen3's template renders 2,334 messages and 20
// tools in 158,000 steps (30 ms); a bare loop's pass, the costliest step,
// takes about 1.4 us, so the bound stops a runaway render within 3 s.
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;
inline constexpr size_t kMaxListItems = size_t{1} << 20;
inline constexpr int64_t kMaxRenderSteps = 2'000'000;
// A step can touch a whole 64 MiB string (`s[i]`, `s.find(x)`), so the render
// also stops at this much of its thread's CPU time.
inline constexpr std::chrono::milliseconds kMaxRenderCpu{3000};
// Throws Error when a string being built has `bytes`, past kMaxStringBytes.
void check_string_size(size_t bytes);

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction, kNamespace };

  Value() = default;
  static Value none();
  Value(bool b);
  Value(int64_t i);
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double f);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  Value(List list);
  Value(Dict dict);
  Value(Function fn);
  static Value make_namespace(Dict attrs);
  // markupsafe.Markup, what `|safe` and `|escape` return: `Markup + str` escapes the str.
  static Value markup(std::string s);
  // A Python generator over `items` (what map/select/reject/unique return): always true,
  // no len(), not subscriptable, not JSON serializable.
  static Value generator(List items);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_markup() const { return kind_ == Kind::kString && markup_; }
  bool is_generator() const { return kind_ == Kind::kList && generator_; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kFloat ? static_cast<int64_t>(f_) : (kind_ == Kind::kBool ? b_ : i_); }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& str() const { return *s_; }
  List& list() const { return *list_; }
  Dict& dict() const { return *dict_; }
  const Function& function() const { return *fn_; }
  // A dict's or namespace's entries, shared (a render empties the namespaces it made).
  const std::shared_ptr<Dict>& shared_attributes() const { return dict_; }

  // Dict and namespace lookup by Python key equality (1 == 1.0 == True); nullptr when absent.
  const Value* find(const std::string& key) const;
  const Value* find(const Value& key) const;
  void set(const std::string& key, Value v) const;
  void set(const Value& key, Value v) const;

  bool truthy() const;
  // Python's str() and repr() of the value.
  std::string to_string() const;
  std::string repr() const;
  // json.dumps(value, ensure_ascii=..., indent=..., separators=..., sort_keys=...).
  std::string to_json(const JsonFormat& format) const;
  const char* type_name() const;
  // Python ==: 1 == 1.0 == True, lists and dicts deep.
  bool equals(const Value& other) const;
  // Python <, for numbers, strings and lists; throws Error otherwise.
  bool less(const Value& other) const;
  // Items as a Python `for` sees them: list elements, dict keys, string characters.
  List iterate() const;
  int64_t length() const;

 private:
  // Counts this list or dict in depth_ (its items' deepest, set before), past kMaxNesting an Error.
  void check_depth();

  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool markup_ = false;
  bool generator_ = false;
  int depth_ = 0;  // lists and dicts, this one included (check_depth)
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Function> fn_;
};

// Python's repr(float): shortest round-trip digits, exponent form outside [1e-4, 1e16).
std::string format_float(double f);
// Splits UTF-8 text into code points (each as its own string).
std::vector<std::string> utf8_chars(const std::string& s);
// utf8_chars(s)[i], without the vector; "" past the end.
std::string utf8_char_at(const std::string& s, int64_t i);

}  // namespace ember::genai::jinja
