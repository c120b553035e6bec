#include "evaluator.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>

#include "builtins.hpp"

namespace graft::chat {
namespace {

// Best-effort dotted name of an expression, for "'x.y' is undefined" messages.
std::string path_of(const Expr& e) {
  if (e.kind == Expr::Kind::Name) return e.name;
  if (e.kind == Expr::Kind::Attr) return path_of(*e.args[0]) + "." + e.name;
  if (e.kind == Expr::Kind::Index && e.args[1]->kind == Expr::Kind::Literal)
    return path_of(*e.args[0]) + "[" + e.args[1]->literal.repr() + "]";
  return "expression";
}

[[noreturn]] void fail_undefined(const Value& v, const std::string& what) {
  fail("'" + v.undefined_name() + "' is undefined" + what);
}

std::int64_t py_floordiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name, const std::string& path) {
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
  } else if (obj.is_list() && !name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) {
    return get_item(obj, Value(static_cast<std::int64_t>(std::stoll(name))), path);
  }
  if (!obj.is_undefined()) {
    Value m = get_method(obj, name);
    if (!m.is_undefined()) return m;
  }
  return Value::undefined(path);
}

Value get_item(const Value& obj, const Value& key, const std::string& path) {
  if (obj.is_dict() && key.is_string()) {
    if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
    return Value::undefined(path);
  }
  if ((obj.is_list() || obj.is_string()) && key.is_int()) {
    std::int64_t i = key.as_int();
    if (obj.is_list()) {
      auto n = static_cast<std::int64_t>(obj.as_list().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined(path);
      return obj.as_list()[static_cast<std::size_t>(i)];
    }
    List chars = obj.iterate();
    auto n = static_cast<std::int64_t>(chars.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined(path);
    return chars[static_cast<std::size_t>(i)];
  }
  if (key.is_string() && !obj.is_undefined()) return get_attr(obj, key.as_string(), path);
  return Value::undefined(path);
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.to_str() + b.to_str());
  if (op == "==") return Value(a == b);
  if (op == "!=") return Value(!(a == b));
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string()) fail("'in <string>' requires a string on the left, not a " + a.type_name());
      found = b.as_string().find(a.as_string()) != std::string::npos;
    } else if (b.is_list()) {
      for (const Value& x : b.as_list()) found = found || x == a;
    } else if (b.is_dict()) {
      found = a.is_string() && b.as_dict().find(a.as_string()) != nullptr;
    } else if (b.is_undefined()) {
      fail_undefined(b, "");
    } else {
      fail("argument of type " + b.type_name() + " is not iterable");
    }
    return Value(op == "in" ? found : !found);
  }
  if (a.is_undefined()) fail_undefined(a, "");
  if (b.is_undefined()) fail_undefined(b, "");
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    int c;
    if (a.is_number() && b.is_number()) c = a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
    else if (a.is_string() && b.is_string()) c = a.as_string().compare(b.as_string());
    else fail("'" + op + "' not supported between " + a.type_name() + " and " + b.type_name());
    if (op == "<") return Value(c < 0);
    if (op == ">") return Value(c > 0);
    if (op == "<=") return Value(c <= 0);
    return Value(c >= 0);
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list()) {
      List l = a.as_list();
      l.insert(l.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(l));
    }
  }
  if (op == "*") {
    if ((a.is_string() && b.is_int()) || (a.is_int() && b.is_string())) {
      const std::string& s = a.is_string() ? a.as_string() : b.as_string();
      std::string out;
      std::int64_t n = a.is_int() ? a.as_int() : b.as_int();
      if (n > 0 && s.size() * static_cast<std::uint64_t>(n) > (64u << 20)) fail("string repetition too large");
      for (std::int64_t k = 0; k < n; ++k) out += s;
      return Value(std::move(out));
    }
  }
  bool nums = (a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool());
  if (!nums) fail("unsupported operand types for " + op + ": " + a.type_name() + " and " + b.type_name());
  auto as_num = [](const Value& v) { return v.is_bool() ? Value(static_cast<std::int64_t>(v.as_bool())) : v; };
  Value x = as_num(a), y = as_num(b);
  bool ints = x.is_int() && y.is_int();
  // Python ints are unbounded; ours are 64-bit and overflow is an error rather than wrapping.
  std::int64_t r = 0;
  if (op == "+" && ints) return __builtin_add_overflow(x.as_int(), y.as_int(), &r) ? fail("integer overflow"), Value() : Value(r);
  if (op == "-" && ints) return __builtin_sub_overflow(x.as_int(), y.as_int(), &r) ? fail("integer overflow"), Value() : Value(r);
  if (op == "*" && ints) return __builtin_mul_overflow(x.as_int(), y.as_int(), &r) ? fail("integer overflow"), Value() : Value(r);
  if (op == "+") return Value(x.as_double() + y.as_double());
  if (op == "-") return Value(x.as_double() - y.as_double());
  if (op == "*") return Value(x.as_double() * y.as_double());
  if (op == "**") {
    if (ints && y.as_int() >= 0) {
      std::int64_t base = x.as_int(), acc = 1;
      if (base == 0 || base == 1) return Value(y.as_int() == 0 ? std::int64_t{1} : base);
      if (base == -1) return Value(y.as_int() % 2 ? std::int64_t{-1} : std::int64_t{1});
      for (std::int64_t k = 0; k < y.as_int(); ++k)  // |base| >= 2 overflows within 63 steps
        if (__builtin_mul_overflow(acc, base, &acc)) fail("integer overflow");
      return Value(acc);
    }
    return Value(std::pow(x.as_double(), y.as_double()));
  }
  if (y.as_double() == 0) fail("division by zero");
  if (op == "/") return Value(x.as_double() / y.as_double());
  if (ints && x.as_int() == INT64_MIN && y.as_int() == -1) fail("integer overflow");
  if (op == "//") return ints ? Value(py_floordiv(x.as_int(), y.as_int())) : Value(std::floor(x.as_double() / y.as_double()));
  if (op == "%") {
    if (ints) return Value(x.as_int() - py_floordiv(x.as_int(), y.as_int()) * y.as_int());
    double r = std::fmod(x.as_double(), y.as_double());
    if (r != 0 && ((r < 0) != (y.as_double() < 0))) r += y.as_double();
    return Value(r);
  }
  fail("unknown operator " + op);
}

Evaluator::Evaluator(std::unordered_map<std::string, Value> globals, std::uint64_t max_steps, std::size_t max_bytes)
    : max_steps_(max_steps), max_bytes_(max_bytes) {
  scopes_.push_back(std::move(globals));
}

void Evaluator::step() {
  if (++steps_ > max_steps_)
    fail("the template ran past its budget of " + std::to_string(max_steps_) + " evaluation steps");
}

void Evaluator::check_size(const std::string& out) const {
  if (out.size() > max_bytes_) fail("the template's output passed its budget of " + std::to_string(max_bytes_) + " bytes");
}

void Evaluator::check_size(const Value& v) const {
  if (v.is_string() && v.as_string().size() > max_bytes_)
    fail("the template built a string past its budget of " + std::to_string(max_bytes_) + " bytes");
  if (v.is_list() && v.as_list().size() > max_bytes_ / 16)
    fail("the template built a list past its budget of " + std::to_string(max_bytes_ / 16) + " items");
}

std::string Evaluator::render(const Body& body) {
  std::string out;
  scopes_.emplace_back();  // template-level variables shadow the context
  exec_body(body, out);
  scopes_.pop_back();
  return out;
}

Value Evaluator::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  return Value::undefined(name);
}

void Evaluator::assign(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }

void Evaluator::bind_targets(const std::vector<std::string>& targets, const Value& v) {
  if (targets.size() == 1) {
    assign(targets[0], v);
    return;
  }
  List items = v.iterate();
  if (items.size() != targets.size())
    fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) + " names");
  for (std::size_t k = 0; k < targets.size(); ++k) assign(targets[k], items[k]);
}

Evaluator::Flow Evaluator::exec_body(const Body& body, std::string& out) {
  for (const auto& s : body) {
    Flow f = exec(*s, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec(const Stmt& s, std::string& out) {
  try {
    step();
    const Flow flow = exec_kind(s, out);
    check_size(out);  // the output so far, once the statement ran
    return flow;
  } catch (TemplateError& e) {
    if (e.pos.line == 0) e.pos = s.pos;
    throw;
  }
}

Evaluator::Flow Evaluator::exec_kind(const Stmt& s, std::string& out) {
  switch (s.kind) {
    case Stmt::Kind::Text: out += s.text; break;
    case Stmt::Kind::Output: out += eval(*s.expr).to_str(); break;
    case Stmt::Kind::If:
      for (const auto& [cond, body] : s.branches)
        if (eval(*cond).truthy()) return exec_body(body, out);
      return exec_body(s.else_body, out);
    case Stmt::Kind::For: return exec_for(s, out);
    case Stmt::Kind::Set: exec_set(s); break;
    case Stmt::Kind::SetBlock: {
      std::string captured;
      exec_body(s.body, captured);
      assign(s.targets[0], Value(std::move(captured)));
      break;
    }
    case Stmt::Kind::Macro: assign(s.name, make_macro(s)); break;
    case Stmt::Kind::CallBlock: {
      // `caller()` renders the block body, with the call's own parameters bound.
      auto caller = make_macro(s);
      scopes_.emplace_back();
      assign("caller", caller);
      Value r = eval(*s.expr);
      scopes_.pop_back();
      out += r.to_str();
      break;
    }
    case Stmt::Kind::FilterBlock: {
      std::string captured;
      exec_body(s.body, captured);
      filter_block_input_ = Value(std::move(captured));
      out += eval(*s.expr).to_str();
      break;
    }
    case Stmt::Kind::Break: return Flow::Break;
    case Stmt::Kind::Continue: return Flow::Continue;
    case Stmt::Kind::Scope: return exec_body(s.body, out);
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec_for(const Stmt& s, std::string& out) {
  Value seq = eval(*s.expr);
  if (seq.is_undefined()) fail_at(s.expr->pos, "'" + seq.undefined_name() + "' is undefined and cannot be iterated");
  List items = seq.iterate();
  if (s.cond) {
    // jinja2 filters before looping, so loop.length/last count only the kept items.
    List kept;
    for (const Value& item : items) {
      scopes_.emplace_back();
      bind_targets(s.targets, item);
      bool keep = eval(*s.cond).truthy();
      scopes_.pop_back();
      if (keep) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.else_body, out);
  auto n = static_cast<std::int64_t>(items.size());
  for (std::int64_t k = 0; k < n; ++k) {
    step();  // an iteration is a step even when its body is empty
    scopes_.emplace_back();
    bind_targets(s.targets, items[static_cast<std::size_t>(k)]);
    auto loop = std::make_shared<Dict>();
    loop->set("index", Value(k + 1));
    loop->set("index0", Value(k));
    loop->set("revindex", Value(n - k));
    loop->set("revindex0", Value(n - k - 1));
    loop->set("first", Value(k == 0));
    loop->set("last", Value(k == n - 1));
    loop->set("length", Value(n));
    if (k > 0) loop->set("previtem", items[static_cast<std::size_t>(k - 1)]);
    if (k + 1 < n) loop->set("nextitem", items[static_cast<std::size_t>(k + 1)]);
    assign("loop", Value(std::move(loop)));
    Flow f = exec_body(s.body, out);
    scopes_.pop_back();
    if (f == Flow::Break) break;
  }
  return Flow::Normal;
}

void Evaluator::exec_set(const Stmt& s) {
  Value v = eval(*s.expr);
  if (!s.attr.empty()) {
    Value ns = lookup(s.targets[0]);
    if (!ns.is_dict()) fail("cannot set attribute '" + s.attr + "' on '" + s.targets[0] + "', which is not a namespace");
    ns.as_dict().set(s.attr, std::move(v));
    return;
  }
  bind_targets(s.targets, v);
}

Value Evaluator::make_macro(const Stmt& s) {
  const Stmt* def = &s;
  auto fn = [this, def](const CallArgs& args) -> Value {
    if (++depth_ > 100) fail("macro recursion too deep");
    // Evaluate defaults before the macro's scope exists, like arguments.
    std::unordered_map<std::string, Value> frame;
    for (std::size_t k = 0; k < def->params.size(); ++k) {
      const MacroParam& p = def->params[k];
      if (const Value* v = args.get(k, p.name)) frame[p.name] = *v;
      else if (p.default_value) frame[p.name] = eval(*p.default_value);
      else frame[p.name] = Value::undefined(p.name);
    }
    scopes_.push_back(std::move(frame));
    std::string out;
    try {
      exec_body(def->body, out);
    } catch (...) {
      scopes_.pop_back();
      --depth_;
      throw;
    }
    scopes_.pop_back();
    --depth_;
    return Value(std::move(out));
  };
  return Value(std::make_shared<Callable>(Callable{s.name.empty() ? "caller" : s.name, fn}));
}

CallArgs Evaluator::eval_args(const Expr& e, std::size_t first) {
  CallArgs args;
  for (std::size_t k = first; k < e.args.size(); ++k) args.positional.push_back(eval(*e.args[k]));
  for (const auto& [name, x] : e.kwargs) args.named.emplace_back(name, eval(*x));
  return args;
}

Value Evaluator::eval_call(const Expr& e) {
  Value callee = eval(*e.args[0]);
  if (callee.is_undefined()) fail("'" + callee.undefined_name() + "' is undefined and cannot be called");
  if (!callee.is_callable()) fail("'" + path_of(*e.args[0]) + "' is a " + callee.type_name() + ", not callable");
  return callee.as_callable().fn(eval_args(e, 1));
}

Value Evaluator::eval(const Expr& e) {
  try {
    step();
    Value v = eval_inner(e);
    check_size(v);
    return v;
  } catch (TemplateError& err) {
    if (err.pos.line == 0) err.pos = e.pos;
    throw;
  }
}

Value Evaluator::eval_inner(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Literal: return e.literal;
    case Expr::Kind::Name: return lookup(e.name);
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      List l;
      for (const auto& x : e.args) l.push_back(eval(*x));
      return Value(std::move(l));
    }
    case Expr::Kind::Dict: {
      auto d = std::make_shared<Dict>();
      for (std::size_t k = 0; k + 1 < e.args.size(); k += 2) {
        Value key = eval(*e.args[k]);
        d->set(key.to_str(), eval(*e.args[k + 1]));
      }
      return Value(std::move(d));
    }
    case Expr::Kind::Attr: return get_attr(eval(*e.args[0]), e.name, path_of(e));
    case Expr::Kind::Index: return get_item(eval(*e.args[0]), eval(*e.args[1]), path_of(e));
    case Expr::Kind::Slice: {
      Value obj = eval(*e.args[0]);
      if (obj.is_undefined()) fail("'" + obj.undefined_name() + "' is undefined and cannot be sliced");
      if (!obj.is_list() && !obj.is_string()) fail("cannot slice a " + obj.type_name());
      List items = obj.iterate();
      auto n = static_cast<std::int64_t>(items.size());
      auto part = [&](int k) -> std::optional<std::int64_t> {
        if (!e.args[static_cast<std::size_t>(k)]) return std::nullopt;
        Value v = eval(*e.args[static_cast<std::size_t>(k)]);
        if (v.is_none()) return std::nullopt;
        if (!v.is_int()) fail("slice indices must be integers");
        return v.as_int();
      };
      auto start = part(1), stop = part(2), step_v = part(3);
      std::int64_t step = step_v.value_or(1);
      if (step == 0) fail("slice step cannot be zero");
      // Python's slice.indices().
      auto clamp = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
        if (!v) return dflt;
        std::int64_t x = *v < 0 ? *v + n : *v;
        if (step > 0) return std::clamp<std::int64_t>(x, 0, n);
        return std::clamp<std::int64_t>(x, -1, n - 1);
      };
      std::int64_t lo = clamp(start, step > 0 ? 0 : n - 1), hi = clamp(stop, step > 0 ? n : -1);
      List out;
      for (std::int64_t k = lo; step > 0 ? k < hi : k > hi; k += step) out.push_back(items[static_cast<std::size_t>(k)]);
      if (obj.is_list()) return Value(std::move(out));
      std::string s;
      for (const Value& c : out) s += c.as_string();
      return Value(std::move(s));
    }
    case Expr::Kind::Call: return eval_call(e);
    case Expr::Kind::Filter: {
      Value operand = e.args[0] ? eval(*e.args[0]) : filter_block_input_;
      return apply_filter(e.name, operand, eval_args(e, 1));
    }
    case Expr::Kind::Test: {
      bool r = apply_test(e.name, eval(*e.args[0]), eval_args(e, 1));
      return Value(e.negated ? !r : r);
    }
    case Expr::Kind::Unary: {
      Value v = eval(*e.args[0]);
      if (e.name == "not") return Value(!v.truthy());
      if (v.is_undefined()) fail_undefined(v, "");
      if (!v.is_number()) fail("bad operand type for unary " + e.name + ": " + v.type_name());
      if (e.name == "+") return v;
      if (v.is_int() && v.as_int() == INT64_MIN) fail("integer overflow");
      return v.is_int() ? Value(-v.as_int()) : Value(-v.as_double());
    }
    case Expr::Kind::Binary: {
      if (e.name == "and") {
        Value a = eval(*e.args[0]);
        return a.truthy() ? eval(*e.args[1]) : a;
      }
      if (e.name == "or") {
        Value a = eval(*e.args[0]);
        return a.truthy() ? a : eval(*e.args[1]);
      }
      Value a = eval(*e.args[0]);
      return binary_op(e.name, a, eval(*e.args[1]));
    }
    case Expr::Kind::Cond:
      if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
      return e.args[2] ? eval(*e.args[2]) : Value::undefined("else");
  }
  return Value();
}

}  // namespace graft::chat
