#include "genai/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

namespace ember::genai::jinja {
namespace {

using T = Token::Type;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_template() {
    Body body = parse_body({});
    if (cur().type != T::kEof) fail(fmt::format("unexpected '{}'", cur().text));
    return body;
  }

 private:
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  Token next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  [[noreturn]] void fail(const std::string& message) const { throw Error(message, cur().line, cur().column); }

  bool is_op(const char* op) const { return cur().type == T::kOp && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == T::kName && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(fmt::format("expected '{}', got '{}'", op, describe(cur())));
  }
  std::string expect_name() {
    if (cur().type != T::kName) fail(fmt::format("expected a name, got '{}'", describe(cur())));
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != T::kBlockEnd) fail(fmt::format("expected end of statement block, got '{}'", describe(cur())));
    ++pos_;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::kEof: return "end of template";
      case T::kBlockEnd: return "%}";
      case T::kVarEnd: return "}}";
      default: return t.text;
    }
  }

  // Entered by each recursive parse_* function; past kMaxNesting, an error.
  class Nested {
   public:
    explicit Nested(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting) {
        --parser_.nesting_;
        parser_.too_deep();
      }
    }
    ~Nested() { --parser_.nesting_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& parser_;
  };
  [[noreturn]] void too_deep() const {
    fail(fmt::format("the template nests blocks or expressions more than {} deep", kMaxNesting));
  }

  // Appends a child (null: an absent part), keeping the tree within kMaxNesting levels.
  void add(Expr& parent, ExprPtr child) {
    if (child) {
      parent.depth = std::max(parent.depth, child->depth + 1);
      if (parent.depth > kMaxNesting) too_deep();
    }
    parent.children.push_back(std::move(child));
  }

  ExprPtr make(Expr::Kind kind, const Token& at, std::string name = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    e->name = std::move(name);
    return e;
  }

  // ---- statements ----

  Body parse_body(std::initializer_list<const char*> end_tags) {
    const Nested nested(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == T::kEof) {
        if (end_tags.size() != 0) {
          fail(fmt::format("unexpected end of template: expected '{}' to close the block", *(end_tags.end() - 1)));
        }
        return body;
      }
      if (t.type == T::kText) {
        auto s = stmt(Stmt::Kind::kText, t);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.type == T::kVarBegin) {
        auto s = stmt(Stmt::Kind::kOutput, next());
        s->expr = parse_tuple(true, false);
        if (cur().type != T::kVarEnd) fail(fmt::format("expected '}}}}', got '{}'", describe(cur())));
        ++pos_;
        body.push_back(std::move(s));
      } else if (t.type == T::kBlockBegin) {
        const Token& name = peek();
        if (name.type != T::kName) {
          ++pos_;
          fail("expected a statement name after '{%'");
        }
        for (const char* end : end_tags) {
          if (name.text == end) return body;
        }
        ++pos_;
        body.push_back(parse_statement());
      } else {
        fail(fmt::format("unexpected '{}'", describe(t)));
      }
    }
  }

  StmtPtr stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // At `{% end...`: consumes the tag and its name.
  void close_block(const char* end) {
    ++pos_;
    if (!skip_name(end)) fail(fmt::format("expected '{}'", end));
    expect_block_end();
  }

  StmtPtr parse_statement() {
    const Token at = next();
    const std::string& kw = at.text;
    if (kw == "if") return parse_if(at);
    if (kw == "for") return parse_for(at);
    if (kw == "set") return parse_set(at);
    if (kw == "macro") return parse_macro(at);
    if (kw == "call") return parse_call_block(at);
    if (kw == "filter") {
      auto s = stmt(Stmt::Kind::kFilterBlock, at);
      const Token name_at = cur();
      s->expr = parse_filter_chain(parse_call(nullptr, Expr::Kind::kFilter, expect_name()));
      s->expr->line = name_at.line;
      s->expr->column = name_at.column;
      expect_block_end();
      s->body = parse_body({"endfilter"});
      close_block("endfilter");
      return s;
    }
    if (kw == "generation") {
      auto s = stmt(Stmt::Kind::kScope, at);
      expect_block_end();
      s->body = parse_body({"endgeneration"});
      close_block("endgeneration");
      return s;
    }
    if (kw == "break" || kw == "continue") {
      if (loop_depth_ == 0) throw Error(fmt::format("'{}' outside of a loop", kw), at.line, at.column);
      auto s = stmt(kw == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, at);
      expect_block_end();
      return s;
    }
    throw Error(fmt::format("unknown tag '{}'", kw), at.line, at.column);
  }

  StmtPtr parse_if(const Token& at) {
    auto s = stmt(Stmt::Kind::kIf, at);
    ExprPtr condition = parse_tuple(false, false);
    while (true) {
      expect_block_end();
      Body body = parse_body({"elif", "else", "endif"});
      s->branches.emplace_back(std::move(condition), std::move(body));
      ++pos_;
      const std::string tag = next().text;
      if (tag == "elif") {
        condition = parse_tuple(false, false);
      } else if (tag == "else") {
        expect_block_end();
        s->branches.emplace_back(nullptr, parse_body({"endif"}));
        close_block("endif");
        return s;
      } else {
        expect_block_end();
        return s;
      }
    }
  }

  StmtPtr parse_for(const Token& at) {
    auto s = stmt(Stmt::Kind::kFor, at);
    s->target = parse_assign_target(false);
    if (!skip_name("in")) fail(fmt::format("expected 'in', got '{}'", describe(cur())));
    s->expr = parse_tuple(false, false);
    if (skip_name("if")) s->condition = parse_expression(true);
    if (is_name("recursive")) fail("recursive loops are not supported");
    expect_block_end();
    ++loop_depth_;
    s->body = parse_body({"else", "endfor"});
    --loop_depth_;
    if (peek().text == "else") {
      ++pos_;
      ++pos_;
      expect_block_end();
      s->else_body = parse_body({"endfor"});
    }
    close_block("endfor");
    return s;
  }

  StmtPtr parse_set(const Token& at) {
    ExprPtr target = parse_assign_target(true);
    if (skip_op("=")) {
      auto s = stmt(Stmt::Kind::kSet, at);
      s->target = std::move(target);
      s->expr = parse_tuple(true, false);
      expect_block_end();
      return s;
    }
    auto s = stmt(Stmt::Kind::kSetBlock, at);
    s->target = std::move(target);
    if (is_op("|")) s->expr = parse_filter_chain(nullptr);
    expect_block_end();
    s->body = parse_body({"endset"});
    close_block("endset");
    return s;
  }

  void parse_params(Stmt& s) {
    expect_op("(");
    while (!skip_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (skip_op(")")) break;
      s.params.push_back(expect_name());
      s.defaults.push_back(skip_op("=") ? parse_expression(true) : nullptr);
    }
  }

  StmtPtr parse_macro(const Token& at) {
    auto s = stmt(Stmt::Kind::kMacro, at);
    s->name = expect_name();
    parse_params(*s);
    expect_block_end();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endmacro"});
    loop_depth_ = saved;
    close_block("endmacro");
    return s;
  }

  StmtPtr parse_call_block(const Token& at) {
    auto s = stmt(Stmt::Kind::kCallBlock, at);
    if (is_op("(")) parse_params(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != Expr::Kind::kCall) fail("expected a call after 'call'");
    expect_block_end();
    s->body = parse_body({"endcall"});
    close_block("endcall");
    return s;
  }

  // A name, `ns.attr` (with_namespace) or a tuple of names.
  ExprPtr parse_assign_target(bool with_namespace) {
    std::vector<ExprPtr> names;
    do {
      const Token at = cur();
      ExprPtr target = make(Expr::Kind::kName, at, expect_name());
      if (with_namespace && skip_op(".")) {
        auto attr = make(Expr::Kind::kAttr, at, expect_name());
        add(*attr, std::move(target));
        target = std::move(attr);
      }
      names.push_back(std::move(target));
    } while (skip_op(","));
    if (names.size() == 1) return std::move(names[0]);
    auto tuple = make(Expr::Kind::kTuple, tokens_[pos_ - 1]);
    for (ExprPtr& name : names) add(*tuple, std::move(name));
    return tuple;
  }

  // ---- expressions ----

  bool is_tuple_end() const {
    return cur().type == T::kVarEnd || cur().type == T::kBlockEnd || cur().type == T::kEof || is_op(")") ||
           is_name("in") || is_name("if") || is_name("recursive");
  }

  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens) {
    const Token at = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end()) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple && items.size() == 1) return std::move(items[0]);
    if (items.empty() && !explicit_parens) fail(fmt::format("expected an expression, got '{}'", describe(cur())));
    auto tuple = make(Expr::Kind::kTuple, at);
    for (ExprPtr& item : items) add(*tuple, std::move(item));
    return tuple;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    const Nested nested(*this);
    ExprPtr expr = parse_or();
    if (!with_condexpr) return expr;
    while (is_name("if")) {
      const Token at = next();
      auto ternary = make(Expr::Kind::kTernary, at);
      ExprPtr condition = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_expression(true) : nullptr;
      add(*ternary, std::move(condition));
      add(*ternary, std::move(expr));
      add(*ternary, std::move(otherwise));
      expr = std::move(ternary);
    }
    return expr;
  }

  ExprPtr binary(const Token& at, std::string op, ExprPtr lhs, ExprPtr rhs) {
    auto e = make(Expr::Kind::kBinary, at, std::move(op));
    add(*e, std::move(lhs));
    add(*e, std::move(rhs));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr lhs = parse_and();
    while (is_name("or")) {
      const Token at = next();
      lhs = binary(at, "or", std::move(lhs), parse_and());
    }
    return lhs;
  }

  ExprPtr parse_and() {
    ExprPtr lhs = parse_not();
    while (is_name("and")) {
      const Token at = next();
      lhs = binary(at, "and", std::move(lhs), parse_not());
    }
    return lhs;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const Nested nested(*this);
      auto e = make(Expr::Kind::kUnary, next(), "not");
      add(*e, parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr lhs = parse_math1();
    while (true) {
      const Token at = cur();
      std::string op;
      if (at.type == T::kOp && (at.text == "==" || at.text == "!=" || at.text == "<" || at.text == "<=" ||
                                at.text == ">" || at.text == ">=")) {
        op = at.text;
        ++pos_;
      } else if (is_name("in")) {
        op = "in";
        ++pos_;
      } else if (is_name("not") && peek().type == T::kName && peek().text == "in") {
        op = "not in";
        pos_ += 2;
      } else {
        return lhs;
      }
      lhs = binary(at, op, std::move(lhs), parse_math1());
    }
  }

  ExprPtr parse_binary_level(std::initializer_list<const char*> ops, ExprPtr (Parser::*operand)()) {
    ExprPtr lhs = (this->*operand)();
    while (cur().type == T::kOp &&
           std::any_of(ops.begin(), ops.end(), [&](const char* op) { return cur().text == op; })) {
      const Token at = next();
      lhs = binary(at, at.text, std::move(lhs), (this->*operand)());
    }
    return lhs;
  }
  ExprPtr parse_math1() { return parse_binary_level({"+", "-"}, &Parser::parse_concat); }
  ExprPtr parse_concat() { return parse_binary_level({"~"}, &Parser::parse_math2); }
  ExprPtr parse_math2() { return parse_binary_level({"*", "/", "//", "%"}, &Parser::parse_pow); }
  ExprPtr parse_pow() { return parse_binary_level({"**"}, &Parser::parse_unary_filtered); }
  ExprPtr parse_unary_filtered() { return parse_unary(true); }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Nested nested(*this);
      const Token at = next();
      e = make(Expr::Kind::kUnary, at, at.text);
      add(*e, parse_unary(false));
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token at = cur();
    switch (at.type) {
      case T::kName: {
        ++pos_;
        if (at.text == "true" || at.text == "True") return literal(at, Value(true));
        if (at.text == "false" || at.text == "False") return literal(at, Value(false));
        if (at.text == "none" || at.text == "None") return literal(at, Value::none());
        return make(Expr::Kind::kName, at, at.text);
      }
      case T::kString: {
        std::string s;
        while (cur().type == T::kString) s += next().text;
        return literal(at, Value(std::move(s)));
      }
      case T::kInt: ++pos_; return literal(at, Value(static_cast<int64_t>(std::stoll(at.text))));
      case T::kFloat: ++pos_; return literal(at, Value(std::stod(at.text)));
      default: break;
    }
    if (skip_op("(")) {
      ExprPtr e = parse_tuple(true, true);
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto list = make(Expr::Kind::kList, at);
      while (!skip_op("]")) {
        if (!list->children.empty()) expect_op(",");
        if (skip_op("]")) break;
        add(*list, parse_expression(true));
      }
      return list;
    }
    if (skip_op("{")) {
      auto dict = make(Expr::Kind::kDict, at);
      while (!skip_op("}")) {
        if (!dict->children.empty()) expect_op(",");
        if (skip_op("}")) break;
        add(*dict, parse_expression(true));
        expect_op(":");
        add(*dict, parse_expression(true));
      }
      return dict;
    }
    fail(fmt::format("unexpected '{}'", describe(at)));
  }

  ExprPtr literal(const Token& at, Value v) {
    auto e = make(Expr::Kind::kLiteral, at);
    e->value = std::move(v);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token at = cur();
      if (skip_op(".")) {
        if (cur().type == T::kInt) {
          auto item = make(Expr::Kind::kItem, at);
          add(*item, std::move(e));
          add(*item, literal(cur(), Value(static_cast<int64_t>(std::stoll(next().text)))));
          e = std::move(item);
        } else {
          auto attr = make(Expr::Kind::kAttr, at, expect_name());
          add(*attr, std::move(e));
          e = std::move(attr);
        }
      } else if (skip_op("[")) {
        e = parse_subscript(at, std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e), Expr::Kind::kCall, "");
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(const Token& at, ExprPtr object) {
    ExprPtr start = is_op(":") ? nullptr : parse_expression(true);
    if (!skip_op(":")) {
      expect_op("]");
      auto item = make(Expr::Kind::kItem, at);
      add(*item, std::move(object));
      add(*item, std::move(start));
      return item;
    }
    auto slice = make(Expr::Kind::kSlice, at);
    add(*slice, std::move(object));
    add(*slice, std::move(start));
    add(*slice, is_op(":") || is_op("]") ? nullptr : parse_expression(true));
    ExprPtr step;
    if (skip_op(":") && !is_op("]")) step = parse_expression(true);
    add(*slice, std::move(step));
    expect_op("]");
    return slice;
  }

  // Arguments in parentheses (if present) after `operand`.
  ExprPtr parse_call(ExprPtr operand, Expr::Kind kind, std::string name) {
    auto call = make(kind, cur(), std::move(name));
    add(*call, std::move(operand));
    if (!skip_op("(")) return call;
    std::vector<ExprPtr> keyword_values;
    bool first = true;
    while (!skip_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (skip_op(")")) break;
      if (cur().type == T::kName && peek().type == T::kOp && peek().text == "=") {
        call->keywords.push_back(next().text);
        ++pos_;
        keyword_values.push_back(parse_expression(true));
      } else {
        if (!call->keywords.empty()) fail("positional argument follows keyword argument");
        add(*call, parse_expression(true));
      }
    }
    for (auto& v : keyword_values) add(*call, std::move(v));
    return call;
  }

  ExprPtr parse_filter_chain(ExprPtr operand) {
    while (skip_op("|")) {
      const Token at = cur();
      std::string name = expect_name();
      while (skip_op(".")) name += "." + expect_name();
      operand = parse_call(std::move(operand), Expr::Kind::kFilter, std::move(name));
      operand->line = at.line;
      operand->column = at.column;
    }
    return operand;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        e = parse_filter_chain(std::move(e));
      } else if (is_name("is")) {
        ++pos_;
        const bool negated = skip_name("not");
        const Token at = cur();
        std::string name = expect_name();
        ExprPtr test;
        if (is_op("(")) {
          test = parse_call(std::move(e), Expr::Kind::kTest, std::move(name));
        } else {
          test = make(Expr::Kind::kTest, at, std::move(name));
          add(*test, std::move(e));
          const bool has_arg = cur().type == T::kString || cur().type == T::kInt || cur().type == T::kFloat ||
                               is_op("[") || is_op("{") ||
                               (cur().type == T::kName && !is_name("else") && !is_name("or") && !is_name("and") &&
                                !is_name("if") && !is_name("in") && !is_name("is") && !is_name("not"));
          if (has_arg) add(*test, parse_postfix(parse_primary()));
        }
        if (negated) {
          auto n = make(Expr::Kind::kUnary, at, "not");
          add(*n, std::move(test));
          test = std::move(n);
        }
        e = std::move(test);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), Expr::Kind::kCall, "");
      } else {
        return e;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::string& source, const LexOptions& options) {
  return Parser(tokenize(source, options)).parse_template();
}

}  // namespace ember::genai::jinja
