#include "genai/jinja/template.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "base/cpu_time.h"
#include "genai/jinja/builtins.h"
#include "genai/jinja/parser.h"
#include "genai/jinja/strings.h"

namespace ember::genai::jinja {
namespace {

// Template variables by name (a Dict's keys may be of any kind; names are strings).
using Vars = std::vector<std::pair<std::string, Value>>;

struct Scope {
  Vars vars;
  std::shared_ptr<Scope> parent;

  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      for (const auto& [k, v] : s->vars) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [k, old] : vars) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    vars.emplace_back(name, std::move(v));
  }
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

std::string local_strftime(const std::string& format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[256];
  const size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &tm);
  return std::string(buf, n);
}

Value floor_div(const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) {
    if (b.as_float() == 0) throw Error("float floor division by zero");
    return Value(std::floor(a.as_float() / b.as_float()));
  }
  const int64_t x = a.as_int(), y = b.as_int();
  if (y == 0) throw Error("integer division or modulo by zero");
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return Value(q);
}

Value modulo(const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) {
    if (b.as_float() == 0) throw Error("float modulo");
    double r = std::fmod(a.as_float(), b.as_float());
    if (r != 0 && ((r < 0) != (b.as_float() < 0))) r += b.as_float();
    return Value(r);
  }
  if (b.as_int() == 0) throw Error("integer division or modulo by zero");
  int64_t r = a.as_int() % b.as_int();
  if (r != 0 && ((r < 0) != (b.as_int() < 0))) r += b.as_int();
  return Value(r);
}

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  throw Error(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name()));
}

Value repeat(const Value& seq, int64_t n) {
  const size_t size = seq.is_string() ? seq.str().size() : seq.list().size();
  const size_t limit = seq.is_string() ? kMaxStringBytes : kMaxListItems;
  if (n <= 0 || size == 0) return seq.is_string() ? Value(std::string()) : Value(List());
  if (static_cast<uint64_t>(n) > limit / size) {
    throw Error(fmt::format("{} * {} would be longer than a template's limit of {} {}", seq.type_name(), n, limit,
                            seq.is_string() ? "bytes" : "items"));
  }
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value(out);
  }
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return Value(std::move(out));
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  const bool numbers = a.is_number() && b.is_number();
  const bool floats = a.is_float() || b.is_float();
  if (op == "+") {
    if (numbers) return floats ? Value(a.as_float() + b.as_float()) : Value(a.as_int() + b.as_int());
    if (a.is_string() && b.is_string()) {
      if (!a.is_markup() && !b.is_markup()) return Value(a.str() + b.str());
      auto markup_text = [](const Value& v) { return v.is_markup() ? v.str() : str::escape_html(v.str()); };
      return Value::markup(markup_text(a) + markup_text(b));
    }
    if (a.is_list() && b.is_list() && !a.is_generator() && !b.is_generator()) {
      List out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return Value(std::move(out));
    }
  } else if (op == "-") {
    if (numbers) return floats ? Value(a.as_float() - b.as_float()) : Value(a.as_int() - b.as_int());
  } else if (op == "*") {
    if (numbers) return floats ? Value(a.as_float() * b.as_float()) : Value(a.as_int() * b.as_int());
    if ((a.is_string() || a.is_list()) && b.is_int()) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_int()) return repeat(b, a.as_int());
  } else if (op == "/") {
    if (numbers) {
      if (b.as_float() == 0) throw Error("division by zero");
      return Value(a.as_float() / b.as_float());
    }
  } else if (op == "//") {
    if (numbers) return floor_div(a, b);
  } else if (op == "%") {
    if (numbers) return modulo(a, b);
  } else if (op == "**") {
    if (numbers) {
      if (!floats && b.as_int() >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < b.as_int(); ++i) r *= a.as_int();
        return Value(r);
      }
      return Value(std::pow(a.as_float(), b.as_float()));
    }
  }
  bad_operands(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) throw Error(fmt::format("'in <string>' requires string as left operand, not {}", item.type_name()));
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_dict()) return container.find(item) != nullptr;
  if (container.is_list()) {
    for (const Value& v : container.list()) {
      if (v.equals(item)) return true;
    }
    return false;
  }
  // jinja2's Undefined iterates as empty: `'x' in undefined` is False.
  if (container.is_undefined()) return false;
  throw Error(fmt::format("argument of type '{}' is not iterable", container.type_name()));
}

class Interpreter {
 public:
  // A macro holds the scope it was defined in, and that scope holds the macro;
  // a namespace's attribute can hold the namespace: reference cycles. Every scope
  // and namespace made during a render is emptied when the render ends, which
  // frees them all.
  ~Interpreter() {
    for (const auto& weak : scopes_) {
      if (ScopePtr scope = weak.lock()) scope->vars.clear();
    }
    for (const auto& weak : namespaces_) {
      if (auto attributes = weak.lock()) attributes->clear();
    }
  }

  ScopePtr make_scope(Vars vars, ScopePtr parent) {
    auto scope = std::make_shared<Scope>(Scope{std::move(vars), std::move(parent)});
    track(scopes_, scope);
    return scope;
  }

  // namespace(...) and a loop's `loop`.
  Value make_namespace(Dict attributes) {
    Value ns = Value::make_namespace(std::move(attributes));
    track(namespaces_, ns.shared_attributes());
    return ns;
  }

  Flow exec(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const StmtPtr& s : body) {
      Flow flow;
      try {
        step();
        flow = exec_one(*s, scope, out);
        check_string_size(out.size());
      } catch (const Error& e) {
        if (e.line) throw;
        throw Error(e.what(), s->line, s->column);
      }
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  // One statement, expression or loop pass more; past kMaxRenderSteps, or
  // (read every 64 steps) kMaxRenderCpu of this thread's CPU time, an Error.
  void step() {
    if (++steps_ > kMaxRenderSteps) {
      throw Error(fmt::format("the template ran past {} statements, expressions and loop passes", kMaxRenderSteps));
    }
    if (steps_ % 64 == 0 && clock_time() - cpu_start_ > kMaxRenderCpu) {
      throw Error(fmt::format("the template ran past {} ms of CPU time", kMaxRenderCpu.count()));
    }
  }

  Value eval(const Expr& e, const ScopePtr& scope) {
    // Nested expressions and macro calls (each goes through here) stop at a
    // depth, as Python's recursion limit stops jinja2: a macro calling itself
    // without end is an error, not a stack overflow.
    struct Deeper {
      int& depth;
      explicit Deeper(int& d) : depth(d) {
        if (++depth > kMaxNesting) {
          --depth;
          throw Error(fmt::format("the template nests expressions or macro calls more than {} deep", kMaxNesting));
        }
      }
      ~Deeper() { --depth; }
    } deeper(depth_);
    try {
      step();
      return eval_inner(e, scope);
    } catch (const Error& err) {
      if (err.line) throw;
      throw Error(err.what(), e.line, e.column);
    }
  }

 private:
  Flow exec_one(const Stmt& s, const ScopePtr& scope, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::kText: out += s.text; return Flow::kNormal;
      case Stmt::Kind::kOutput: out += eval(*s.expr, scope).to_string(); return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& [condition, body] : s.branches) {
          if (!condition || eval(*condition, scope).truthy()) return exec(body, scope, out);
        }
        return Flow::kNormal;
      case Stmt::Kind::kFor: exec_for(s, scope, out); return Flow::kNormal;
      case Stmt::Kind::kSet: assign(*s.target, eval(*s.expr, scope), scope); return Flow::kNormal;
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        exec(s.body, scope, captured);
        Value v(std::move(captured));
        if (s.expr) v = apply_chain(*s.expr, std::move(v), scope);
        assign(*s.target, std::move(v), scope);
        return Flow::kNormal;
      }
      case Stmt::Kind::kFilterBlock: {
        std::string captured;
        exec(s.body, scope, captured);
        out += apply_chain(*s.expr, Value(std::move(captured)), scope).to_string();
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro: scope->set(s.name, make_macro(s, scope)); return Flow::kNormal;
      case Stmt::Kind::kCallBlock: {
        const Expr& call = *s.expr;
        Value callee = eval(*call.children[0], scope);
        Args args = eval_args(call, scope);
        args.keyword.emplace_back("caller", make_macro(s, scope));
        if (!callee.is_function()) throw Error(fmt::format("'{}' object is not callable", callee.type_name()));
        out += callee.function()(args).to_string();
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kScope: return exec(s.body, scope, out);
    }
    return Flow::kNormal;
  }

  void exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
    const Value iterable = eval(*s.expr, scope);
    List items = iterable.iterate();
    if (s.condition) {
      List kept;
      for (Value& item : items) {
        auto probe = make_scope({}, scope);
        assign(*s.target, item, probe);
        if (eval(*s.condition, probe).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step();
      auto iteration = make_scope({}, scope);
      Dict loop = {{"index", Value(i + 1)},
                   {"index0", Value(i)},
                   {"revindex", Value(n - i)},
                   {"revindex0", Value(n - i - 1)},
                   {"first", Value(i == 0)},
                   {"last", Value(i == n - 1)},
                   {"length", Value(n)},
                   {"depth", Value(1)},
                   {"depth0", Value(0)},
                   {"previtem", i > 0 ? items[i - 1] : Value()},
                   {"nextitem", i + 1 < n ? items[i + 1] : Value()}};
      loop.emplace_back("cycle", Value(Function([i](const Args& a) {
                          if (a.positional.empty()) throw Error("no items for cycling given");
                          return a.positional[static_cast<size_t>(i) % a.positional.size()];
                        })));
      iteration->set("loop", make_namespace(std::move(loop)));
      assign(*s.target, items[i], iteration);
      if (exec(s.body, iteration, out) == Flow::kBreak) break;
    }
    if (n == 0) exec(s.else_body, scope, out);
  }

  void assign(const Expr& target, Value v, const ScopePtr& scope) {
    if (target.kind == Expr::Kind::kName) {
      scope->set(target.name, std::move(v));
    } else if (target.kind == Expr::Kind::kAttr) {
      const Value ns = eval(*target.children[0], scope);
      if (!ns.is_namespace()) throw Error("cannot assign attribute on non-namespace object");
      ns.set(target.name, std::move(v));
    } else {
      const List values = v.iterate();
      if (values.size() != target.children.size()) {
        throw Error(fmt::format("cannot unpack {} values into {} names", values.size(), target.children.size()));
      }
      for (size_t i = 0; i < values.size(); ++i) assign(*target.children[i], values[i], scope);
    }
  }

  Value make_macro(const Stmt& s, const ScopePtr& scope) {
    return Value(Function([this, &s, scope](const Args& a) {
      if (a.positional.size() > s.params.size()) {
        throw Error(fmt::format("macro '{}' takes not more than {} argument(s)", s.name, s.params.size()));
      }
      auto local = make_scope({}, scope);
      for (size_t i = 0; i < s.params.size(); ++i) {
        const Value* given = a.get(i, s.params[i].c_str());
        local->set(s.params[i], given ? *given : s.defaults[i] ? eval(*s.defaults[i], local) : Value());
      }
      for (const auto& [k, v] : a.keyword) {
        if (k == "caller") local->set(k, v);
      }
      std::string out;
      exec(s.body, local, out);
      return Value(std::move(out));
    }));
  }

  Args eval_args(const Expr& call, const ScopePtr& scope) {
    Args args;
    const size_t n_positional = call.children.size() - 1 - call.keywords.size();
    for (size_t i = 1; i <= n_positional; ++i) args.positional.push_back(eval(*call.children[i], scope));
    for (size_t k = 0; k < call.keywords.size(); ++k) {
      args.keyword.emplace_back(call.keywords[k], eval(*call.children[1 + n_positional + k], scope));
    }
    return args;
  }

  // A filter chain of a filter block or block set, whose innermost operand is null.
  Value apply_chain(const Expr& chain, Value body, const ScopePtr& scope) {
    Value operand = chain.children[0] ? apply_chain(*chain.children[0], std::move(body), scope) : std::move(body);
    return apply_filter(chain.name, operand, eval_args(chain, scope));
  }

  Value eval_inner(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: {
        const Value* v = scope->lookup(e.name);
        return v ? *v : Value();
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List items;
        for (const ExprPtr& c : e.children) items.push_back(eval(*c, scope));
        return Value(std::move(items));
      }
      case Expr::Kind::kDict: {
        Value d{Dict{}};
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          d.set(eval(*e.children[i], scope), eval(*e.children[i + 1], scope));
        }
        return Value(std::move(d.dict()));  // counts its depth
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.children[0], scope);
        if (e.name == "not") return Value(!v.truthy());
        if (!v.is_number()) throw Error(fmt::format("bad operand type for unary {}: '{}'", e.name, v.type_name()));
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        return v.is_float() ? Value(-v.as_float()) : Value(-v.as_int());
      }
      case Expr::Kind::kBinary: return eval_binary(e, scope);
      case Expr::Kind::kTernary: {
        if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
        return e.children[2] ? eval(*e.children[2], scope) : Value();
      }
      case Expr::Kind::kAttr: return get_attribute(eval(*e.children[0], scope), e.name);
      case Expr::Kind::kItem: return get_item(eval(*e.children[0], scope), eval(*e.children[1], scope));
      case Expr::Kind::kSlice: {
        auto part = [&](size_t i) { return e.children[i] ? eval(*e.children[i], scope) : Value::none(); };
        return get_slice(eval(*e.children[0], scope), part(1), part(2), part(3));
      }
      case Expr::Kind::kCall: {
        const Value callee = eval(*e.children[0], scope);
        if (!callee.is_function()) {
          throw Error(callee.is_undefined() ? "call of an undefined value"
                                            : fmt::format("'{}' object is not callable", callee.type_name()));
        }
        return callee.function()(eval_args(e, scope));
      }
      case Expr::Kind::kFilter: return apply_filter(e.name, eval(*e.children[0], scope), eval_args(e, scope));
      case Expr::Kind::kTest: return Value(apply_test(e.name, eval(*e.children[0], scope), eval_args(e, scope)));
    }
    return Value();
  }

  Value eval_binary(const Expr& e, const ScopePtr& scope) {
    const std::string& op = e.name;
    const Value a = eval(*e.children[0], scope);
    if (op == "and") return a.truthy() ? eval(*e.children[1], scope) : a;
    if (op == "or") return a.truthy() ? a : eval(*e.children[1], scope);
    const Value b = eval(*e.children[1], scope);
    if (op == "~") return Value(a.to_string() + b.to_string());
    if (op == "==") return Value(a.equals(b));
    if (op == "!=") return Value(!a.equals(b));
    if (op == "<") return Value(a.less(b));
    if (op == ">") return Value(b.less(a));
    if (op == "<=") return Value(!b.less(a));
    if (op == ">=") return Value(!a.less(b));
    if (op == "in") return Value(contains(b, a));
    if (op == "not in") return Value(!contains(b, a));
    return arithmetic(op, a, b);
  }

  template <typename T>
  static void track(std::vector<std::weak_ptr<T>>& made, const std::shared_ptr<T>& p) {
    if (made.size() == made.capacity()) {  // drop the freed ones before growing
      std::erase_if(made, [](const auto& weak) { return weak.expired(); });
    }
    made.push_back(p);
  }

  std::vector<std::weak_ptr<Scope>> scopes_;
  std::vector<std::weak_ptr<Dict>> namespaces_;
  int depth_ = 0;  // eval() calls on the stack
  int64_t steps_ = 0;  // statements, expressions and loop passes run (step())
  const std::chrono::nanoseconds cpu_start_ = clock_time();
};

// Unknown filters and tests are errors when the template is compiled, as in jinja2 —
// except inside an if statement's tests and branches or a conditional expression
// (jinja2's "soft" frames), where they fail only if evaluated. A loop, macro, call or
// block nested in such a branch opens a new frame and is checked again.
void check_names(const Expr* e) {
  if (!e || e->kind == Expr::Kind::kTernary) return;
  if (e->kind == Expr::Kind::kFilter && !has_filter(e->name)) {
    throw Error(fmt::format("No filter named '{}'.", e->name), e->line, e->column);
  }
  if (e->kind == Expr::Kind::kTest && !has_test(e->name)) {
    throw Error(fmt::format("No test named '{}'.", e->name), e->line, e->column);
  }
  for (const ExprPtr& c : e->children) check_names(c.get());
}

void check_names(const Body& body, bool soft) {
  for (const StmtPtr& s : body) {
    // A for loop's iterable and a call block's call are evaluated in the enclosing frame.
    const bool expr_soft = soft && s->kind != Stmt::Kind::kMacro && s->kind != Stmt::Kind::kSetBlock &&
                           s->kind != Stmt::Kind::kFilterBlock;
    if (!expr_soft) check_names(s->expr.get());
    check_names(s->target.get());
    check_names(s->condition.get());
    for (const auto& branch : s->branches) check_names(branch.second, true);
    for (const ExprPtr& d : s->defaults) check_names(d.get());
    check_names(s->body, false);
    check_names(s->else_body, false);
  }
}

Status to_status(const Error& e) {
  if (e.line == 0) return invalid_argument("template: {}", e.what());
  return invalid_argument("template line {}, column {}: {}", e.line, e.column, e.what());
}

Vars builtin_globals(const RenderOptions& options, Interpreter& interpreter) {
  Vars g;
  g.emplace_back("range", Value(Function([](const Args& a) {
                   int64_t start = 0, stop = 0, step = 1;
                   if (a.positional.size() == 1) {
                     stop = a.positional[0].as_int();
                   } else if (a.positional.size() >= 2) {
                     start = a.positional[0].as_int();
                     stop = a.positional[1].as_int();
                     if (a.positional.size() > 2) step = a.positional[2].as_int();
                   }
                   if (step == 0) throw Error("range() arg 3 must not be zero");
                   // jinja2's sandbox bound (jinja2.sandbox.MAX_RANGE): a template cannot ask for 10^12 items.
                   constexpr int64_t kMaxRange = 100000;
                   const double count = (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
                   if (count > kMaxRange) throw Error(fmt::format("range() of more than {} items", kMaxRange));
                   List out;
                   for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
                   return Value(std::move(out));
                 })));
  // Python's dict(mapping, **keywords): at most one mapping, whose keys the keywords replace.
  auto make_dict = [](const Args& a) {
    if (a.positional.size() > 1) {
      throw Error(fmt::format("dict expected at most 1 argument, got {}", a.positional.size()));
    }
    Dict d;
    if (!a.positional.empty() && (a.positional[0].is_dict() || a.positional[0].is_namespace())) {
      d = a.positional[0].dict();
    }
    for (const auto& [k, v] : a.keyword) {
      const Value key(k);
      auto same = std::find_if(d.begin(), d.end(), [&](const auto& item) { return item.first.equals(key); });
      if (same != d.end()) {
        same->second = v;
      } else {
        d.emplace_back(key, v);
      }
    }
    return d;
  };
  g.emplace_back("namespace", Value(Function([make_dict, &interpreter](const Args& a) {
                   return interpreter.make_namespace(make_dict(a));
                 })));
  g.emplace_back("dict", Value(Function([make_dict](const Args& a) { return Value(make_dict(a)); })));
  g.emplace_back("raise_exception", Value(Function([](const Args& a) -> Value {
                   throw Error(a.positional.empty() ? "raise_exception" : a.positional[0].to_string());
                 })));
  auto now = options.strftime_now ? options.strftime_now : local_strftime;
  g.emplace_back("strftime_now", Value(Function([now](const Args& a) {
                   return Value(now(a.positional.empty() ? std::string() : a.positional[0].to_string()));
                 })));
  return g;
}

}  // namespace

Result<Template> Template::parse(const std::string& source) {
  try {
    auto body = std::make_shared<Body>(jinja::parse(source, LexOptions{}));
    check_names(*body, false);
    Template t;
    t.body_ = std::move(body);
    return t;
  } catch (const Error& e) {
    return to_status(e);
  } catch (const std::exception& e) {  // a number out of range, a string past memory: never past this boundary
    return invalid_argument("template: {}", e.what());
  }
}

Result<std::string> Template::render(const Dict& globals, const RenderOptions& options) const {
  try {
    Interpreter interpreter;
    auto builtins = interpreter.make_scope(builtin_globals(options, interpreter), nullptr);
    Vars vars;
    for (const auto& [name, value] : globals) vars.emplace_back(name.to_string(), value);
    auto root = interpreter.make_scope(std::move(vars), builtins);
    std::string out;
    interpreter.exec(*body_, root, out);
    return out;
  } catch (const Error& e) {
    return to_status(e);
  } catch (const std::exception& e) {
    return invalid_argument("template: {}", e.what());
  }
}

}  // namespace ember::genai::jinja
