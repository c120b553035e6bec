#include "parser.hpp"

#include <charconv>
#include <cstdlib>
#include <system_error>
#include <initializer_list>

#include "builtins.hpp"
#include "lexer.hpp"

namespace graft::chat {
namespace {

std::unique_ptr<Stmt> make_stmt(Stmt::Kind kind, SourcePos pos) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->pos = pos;
  return s;
}

ExprPtr make_expr(Expr::Kind kind, SourcePos pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::End: return "end of template";
    case Tok::Text: return "text";
    case Tok::VarBegin: return "'{{'";
    case Tok::VarEnd: return "'}}'";
    case Tok::BlockBegin: return "'{%'";
    case Tok::BlockEnd: return "'%}'";
    case Tok::String: return "string literal";
    default: return "'" + t.value + "'";
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_all() {
    Body body = parse_body({});
    return body;
  }

 private:
  const Token& cur() const { return toks_[i_]; }
  const Token& peek(std::size_t n = 1) const { return toks_[std::min(i_ + n, toks_.size() - 1)]; }
  bool is_op(std::string_view op) const { return cur().type == Tok::Op && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == Tok::Name && cur().value == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    ++i_;
    return true;
  }
  [[noreturn]] void unexpected(std::string_view wanted) const {
    fail_at(cur().pos, "expected " + std::string(wanted) + ", got " + describe(cur()));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) unexpected("a name");
    return toks_[i_++].value;
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd) unexpected("'%}'");
    ++i_;
  }

  // Parses statements until a block tag whose keyword is in `stops` (left unconsumed, after its
  // "{%"). At top level (`stops` empty) runs to the end of input.
  Body parse_body(std::initializer_list<std::string_view> stops, const Token* opener = nullptr) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::End) {
        if (stops.size() == 0) return body;
        fail_at(opener->pos, "unclosed '" + opener->value + "' block: missing {% end" + opener->value + " %}");
      }
      if (t.type == Tok::Text) {
        auto s = make_stmt(Stmt::Kind::Text, t.pos);
        s->text = t.value;
        body.push_back(std::move(s));
        ++i_;
      } else if (t.type == Tok::VarBegin) {
        ++i_;
        auto s = make_stmt(Stmt::Kind::Output, t.pos);
        s->expr = parse_expr();
        if (cur().type != Tok::VarEnd) unexpected("'}}'");
        ++i_;
        body.push_back(std::move(s));
      } else if (t.type == Tok::BlockBegin) {
        const Token& kw = peek();
        if (kw.type != Tok::Name) fail_at(kw.pos, "expected a statement keyword, got " + describe(kw));
        for (auto stop : stops)
          if (kw.value == stop) {
            ++i_;  // leave the keyword for the caller
            return body;
          }
        i_ += 2;
        body.push_back(parse_statement(kw));
      } else {
        unexpected("text or a tag");
      }
    }
  }

  // Nesting depth bound, so a hostile template cannot overflow the C++ stack (in the parser or,
  // later, in the evaluator, whose recursion follows the tree).
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > 250) fail_at(p_.cur().pos, "template nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  std::unique_ptr<Stmt> parse_statement(const Token& kw) {
    DepthGuard guard(*this);
    const std::string& k = kw.value;
    auto s = make_stmt(Stmt::Kind::Text, kw.pos);
    if (k == "if") {
      s->kind = Stmt::Kind::If;
      ExprPtr cond = parse_expr();
      expect_block_end();
      while (true) {
        Body b = parse_body({"elif", "else", "endif"}, &kw);
        s->branches.emplace_back(std::move(cond), std::move(b));
        std::string which = toks_[i_++].value;
        if (which == "elif") {
          cond = parse_expr();
          expect_block_end();
        } else if (which == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"}, &kw);
          ++i_;
          expect_block_end();
          break;
        } else {
          expect_block_end();
          break;
        }
      }
    } else if (k == "for") {
      s->kind = Stmt::Kind::For;
      s->targets.push_back(expect_name());
      while (skip_op(",")) s->targets.push_back(expect_name());
      if (!skip_name("in")) unexpected("'in'");
      s->expr = parse_or_expr();  // no ternary: `if` here starts the loop filter
      if (skip_name("if")) s->cond = parse_expr();
      skip_name("recursive");
      expect_block_end();
      s->body = parse_body({"else", "endfor"}, &kw);
      if (toks_[i_++].value == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, &kw);
        ++i_;
      }
      expect_block_end();
    } else if (k == "set") {
      s->targets.push_back(expect_name());
      if (skip_op(".")) s->attr = expect_name();
      while (skip_op(",")) s->targets.push_back(expect_name());
      if (skip_op("=")) {
        s->kind = Stmt::Kind::Set;
        s->expr = parse_tuple_or_expr();
        expect_block_end();
      } else {
        s->kind = Stmt::Kind::SetBlock;
        expect_block_end();
        s->body = parse_body({"endset"}, &kw);
        ++i_;
        expect_block_end();
      }
    } else if (k == "macro") {
      s->kind = Stmt::Kind::Macro;
      s->name = expect_name();
      parse_params(*s);
      expect_block_end();
      s->body = parse_body({"endmacro"}, &kw);
      ++i_;
      if (cur().type == Tok::Name) ++i_;  // {% endmacro name %}
      expect_block_end();
    } else if (k == "call") {
      s->kind = Stmt::Kind::CallBlock;
      if (is_op("(")) parse_params(*s);
      s->expr = parse_expr();
      if (s->expr->kind != Expr::Kind::Call) fail_at(s->expr->pos, "expected a call after 'call'");
      expect_block_end();
      s->body = parse_body({"endcall"}, &kw);
      ++i_;
      expect_block_end();
    } else if (k == "filter") {
      s->kind = Stmt::Kind::FilterBlock;
      ExprPtr chain;
      do {
        chain = parse_filter(std::move(chain), cur().pos);
      } while (skip_op("|"));
      s->expr = std::move(chain);
      expect_block_end();
      s->body = parse_body({"endfilter"}, &kw);
      ++i_;
      expect_block_end();
    } else if (k == "break" || k == "continue") {
      s->kind = k == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
      expect_block_end();
    } else if (k == "generation") {
      s->kind = Stmt::Kind::Scope;
      expect_block_end();
      s->body = parse_body({"endgeneration"}, &kw);
      ++i_;
      expect_block_end();
    } else {
      fail_at(kw.pos, "unknown statement '" + k + "'");
    }
    return s;
  }

  void parse_params(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      MacroParam p{expect_name(), nullptr};
      if (skip_op("=")) p.default_value = parse_expr();
      s.params.push_back(std::move(p));
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  static ExprPtr node(Expr::Kind kind, SourcePos pos) { return make_expr(kind, pos); }
  static ExprPtr binary(std::string op, ExprPtr a, ExprPtr b, SourcePos pos) {
    auto n = node(Expr::Kind::Binary, pos);
    n->name = std::move(op);
    n->args.push_back(std::move(a));
    n->args.push_back(std::move(b));
    return n;
  }

  // `a, b` without parentheses (in set) is a tuple.
  ExprPtr parse_tuple_or_expr() {
    SourcePos pos = cur().pos;
    ExprPtr first = parse_expr();
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::Tuple, pos);
    t->args.push_back(std::move(first));
    while (skip_op(",")) t->args.push_back(parse_expr());
    return t;
  }

  ExprPtr parse_expr() {
    DepthGuard guard(*this);
    ExprPtr e = parse_or_expr();
    while (is_name("if")) {
      SourcePos pos = cur().pos;
      ++i_;
      auto c = node(Expr::Kind::Cond, pos);
      c->args.push_back(parse_or_expr());
      c->args.push_back(std::move(e));
      c->args.push_back(skip_name("else") ? parse_expr() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or_expr() {
    ExprPtr e = parse_and_expr();
    while (is_name("or")) {
      SourcePos pos = toks_[i_++].pos;
      e = binary("or", std::move(e), parse_and_expr(), pos);
    }
    return e;
  }

  ExprPtr parse_and_expr() {
    ExprPtr e = parse_not_expr();
    while (is_name("and")) {
      SourcePos pos = toks_[i_++].pos;
      e = binary("and", std::move(e), parse_not_expr(), pos);
    }
    return e;
  }

  ExprPtr parse_not_expr() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      auto n = node(Expr::Kind::Unary, toks_[i_++].pos);
      n->name = "not";
      n->args.push_back(parse_not_expr());
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      SourcePos pos = cur().pos;
      std::string op;
      if (cur().type == Tok::Op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                    cur().value == ">" || cur().value == "<=" || cur().value == ">=")) {
        op = toks_[i_++].value;
      } else if (is_name("in")) {
        ++i_;
        op = "in";
      } else if (is_name("not") && peek().type == Tok::Name && peek().value == "in") {
        i_ += 2;
        op = "not in";
      } else {
        return e;
      }
      e = binary(op, std::move(e), parse_math1(), pos);
    }
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = toks_[i_++];
      e = binary(t.value, std::move(e), parse_concat(), t.pos);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      SourcePos pos = toks_[i_++].pos;
      e = binary("~", std::move(e), parse_math2(), pos);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = toks_[i_++];
      e = binary(t.value, std::move(e), parse_pow(), t.pos);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      SourcePos pos = toks_[i_++].pos;
      e = binary("**", std::move(e), parse_unary(true), pos);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::Unary, cur().pos);
      e->name = toks_[i_++].value;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filters_and_tests(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    if (t.type == Tok::Name) {
      ++i_;
      auto lit = [&](Value v) {
        auto n = node(Expr::Kind::Literal, t.pos);
        n->literal = std::move(v);
        return n;
      };
      if (t.value == "true" || t.value == "True") return lit(true);
      if (t.value == "false" || t.value == "False") return lit(false);
      if (t.value == "none" || t.value == "None") return lit(None{});
      auto n = node(Expr::Kind::Name, t.pos);
      n->name = t.value;
      return n;
    }
    if (t.type == Tok::String) {
      std::string s;
      while (cur().type == Tok::String) s += toks_[i_++].value;  // adjacent literals join
      auto n = node(Expr::Kind::Literal, t.pos);
      n->literal = Value(std::move(s));
      return n;
    }
    if (t.type == Tok::Int || t.type == Tok::Float) {
      ++i_;
      auto n = node(Expr::Kind::Literal, t.pos);
      if (t.type == Tok::Int) {
        std::int64_t v = 0;
        if (std::from_chars(t.value.data(), t.value.data() + t.value.size(), v).ec != std::errc())
          fail_at(t.pos, "integer literal out of range");
        n->literal = Value(v);
      } else {
        n->literal = Value(std::strtod(t.value.c_str(), nullptr));  // overflow gives inf, as Python
      }
      return n;
    }
    if (skip_op("(")) {
      if (skip_op(")")) return node(Expr::Kind::Tuple, t.pos);
      ExprPtr e = parse_expr();
      if (is_op(",")) {
        auto tup = node(Expr::Kind::Tuple, t.pos);
        tup->args.push_back(std::move(e));
        while (skip_op(",") && !is_op(")")) tup->args.push_back(parse_expr());
        e = std::move(tup);
      }
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto l = node(Expr::Kind::List, t.pos);
      while (!is_op("]")) {
        l->args.push_back(parse_expr());
        if (!skip_op(",")) break;
      }
      expect_op("]");
      return l;
    }
    if (skip_op("{")) {
      auto d = node(Expr::Kind::Dict, t.pos);
      while (!is_op("}")) {
        d->args.push_back(parse_expr());
        expect_op(":");
        d->args.push_back(parse_expr());
        if (!skip_op(",")) break;
      }
      expect_op("}");
      return d;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      SourcePos pos = cur().pos;
      if (skip_op(".")) {
        auto a = node(Expr::Kind::Attr, e->pos);  // reported where the dotted name starts
        if (cur().type == Tok::Name || cur().type == Tok::Int) a->name = toks_[i_++].value;
        else unexpected("an attribute name");
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (skip_op("[")) {
        SourcePos start = e->pos;
        e = parse_subscript(std::move(e), start);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), pos);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, SourcePos pos) {
    ExprPtr parts[3];
    int n = 0;
    bool slice = false;
    while (true) {
      if (!is_op(":") && !is_op("]")) parts[n] = parse_expr();
      if (n < 2 && skip_op(":")) {
        slice = true;
        ++n;
        continue;
      }
      break;
    }
    if (!slice && !parts[0]) unexpected("an expression");  // x[] (jinja2: a syntax error too)
    expect_op("]");
    auto s = node(slice ? Expr::Kind::Slice : Expr::Kind::Index, pos);
    s->args.push_back(std::move(obj));
    s->args.push_back(std::move(parts[0]));
    if (slice) {
      s->args.push_back(std::move(parts[1]));
      s->args.push_back(std::move(parts[2]));
    }
    return s;
  }

  // Fills args (after any already there) and kwargs from "(...)".
  void parse_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().value == "=") {
        std::string name = toks_[i_].value;
        i_ += 2;
        call.kwargs.emplace_back(std::move(name), parse_expr());
      } else {
        call.args.push_back(parse_expr());
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  // A call is reported at its callee ("'f' is undefined"), not at the parenthesis.
  ExprPtr parse_call(ExprPtr callee, SourcePos) {
    auto c = node(Expr::Kind::Call, callee->pos);
    c->args.push_back(std::move(callee));
    parse_args(*c);
    return c;
  }

  ExprPtr parse_filter(ExprPtr operand, SourcePos pos) {
    auto f = node(Expr::Kind::Filter, pos);
    SourcePos name_pos = cur().pos;
    f->name = expect_name();
    // jinja2 reports unknown filters and tests when compiling, so do we.
    if (!has_filter(f->name)) fail_at(name_pos, "unknown filter '" + f->name + "'");
    f->args.push_back(std::move(operand));
    if (is_op("(")) parse_args(*f);
    return f;
  }

  ExprPtr parse_filters_and_tests(ExprPtr e) {
    while (true) {
      SourcePos pos = cur().pos;
      if (skip_op("|")) {
        e = parse_filter(std::move(e), pos);
      } else if (skip_name("is")) {
        auto t = node(Expr::Kind::Test, pos);
        t->negated = skip_name("not");
        SourcePos name_pos = cur().pos;
        t->name = expect_name();
        if (!has_test(t->name)) fail_at(name_pos, "unknown test '" + t->name + "'");
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          parse_args(*t);
        } else if (starts_test_argument()) {
          t->args.push_back(parse_unary(false));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), pos);
      } else {
        return e;
      }
    }
  }

  // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
  bool starts_test_argument() const {
    const Token& t = cur();
    if (t.type == Tok::String || t.type == Tok::Int || t.type == Tok::Float) return true;
    if (t.type == Tok::Op) return t.value == "[" || t.value == "{" || t.value == "-";
    if (t.type == Tok::Name)
      return t.value != "else" && t.value != "or" && t.value != "and" && t.value != "if" && t.value != "in" &&
             t.value != "not" && t.value != "is";
    return false;
  }

  std::vector<Token> toks_;
  std::size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse_all(); }

}  // namespace graft::chat
