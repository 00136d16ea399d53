#pragma once
// The syntax tree of a parsed template.
#include <memory>
#include <string>
#include <vector>

#include "genai/jinja/value.h"

namespace ember::genai::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // children: items
    kTuple,    // children: items
    kDict,     // children: key, value, key, value, ...
    kUnary,    // name: "-", "+" or "not"; children: operand
    kBinary,   // name: operator (+ - * / // % ** ~ == != < <= > >= in "not in" and or); children: lhs, rhs
    kTernary,  // children: condition, then, else (else may be null)
    kAttr,     // name: attribute; children: object
    kItem,     // children: object, key
    kSlice,    // children: object, start, stop, step (each may be null)
    kCall,     // children: callee, positional..., keyword...; keywords: the keyword names
    kFilter,   // name: filter; children: operand (null inside a filter block), positional..., keyword...
    kTest,     // name: test; children: operand, positional..., keyword...
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string name;
  Value value;
  std::vector<ExprPtr> children;
  std::vector<std::string> keywords;
  int depth = 1;  // this node's levels and its deepest child's (the parser bounds it)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // expr
    kIf,           // branches (a null condition is the else branch)
    kFor,          // target, expr (iterable), condition (may be null), body, else_body
    kSet,          // target, expr
    kSetBlock,     // target, expr (filter chain or null), body
    kMacro,        // name, params, defaults (null where none), body
    kCallBlock,    // expr (the call), params (caller's), body
    kFilterBlock,  // expr (filter chain), body
    kBreak,
    kContinue,
    kScope,        // body rendered in place ({% generation %}: Hugging Face's assistant-mask marker)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr target;
  ExprPtr condition;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;
};

}  // namespace ember::genai::jinja
