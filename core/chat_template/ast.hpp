#pragma once
// Syntax tree of a parsed template. One generic node type per layer (expressions, statements)
// keeps the parser and evaluator short; `kind` says which fields are used.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"
#include "value.hpp"

namespace graft::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // literal
    Name,     // name
    List,     // args
    Tuple,    // args
    Dict,     // args: key, value, key, value...
    Attr,     // args[0].name
    Index,    // args[0][args[1]]
    Slice,    // args[0][args[1]:args[2]:args[3]], missing parts are null
    Call,     // args[0](args[1:], kwargs)
    Filter,   // args[0] | name(args[1:], kwargs); args[0] null inside {% filter %}
    Test,     // args[0] is [not] name(args[1:])
    Unary,    // name ("-", "+", "not") args[0]
    Binary,   // args[0] name args[1]; name is an operator, "and", "or", "in", "not in"
    Cond,     // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  SourcePos pos;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // `is not`
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  enum class Kind {
    Text,         // text
    Output,       // {{ expr }}
    If,           // branches (cond, body); else_body
    For,          // targets in expr [if cond]: body; else_body
    Set,          // targets (or targets[0].attr) = expr
    SetBlock,     // {% set targets[0] %}body{% endset %}
    Macro,        // {% macro name(params) %}body
    CallBlock,    // {% call(params) expr %}body: `caller()` renders body
    FilterBlock,  // {% filter expr %}body: expr is a Filter chain whose innermost operand is null
    Break,
    Continue,
    Scope,        // a transparent block ({% generation %})
  };
  Kind kind;
  SourcePos pos;
  std::string text;
  std::string name;  // macro name
  std::string attr;  // set ns.attr
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::string> targets;
  std::vector<MacroParam> params;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
};

}  // namespace graft::chat
