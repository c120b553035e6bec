#pragma once
// Walks the AST and renders it: scopes, loops, macros, operators with Python semantics.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ast.hpp"

namespace graft::chat {

class Evaluator {
 public:
  // `globals` is the bottom scope: context variables plus built-in functions.
  // The render fails (a TemplateError naming the bound) past `max_steps` statements and expressions,
  // or when its output, or a string or list it builds, passes `max_bytes` (a list: 16 bytes an item).
  explicit Evaluator(std::unordered_map<std::string, Value> globals, std::uint64_t max_steps = UINT64_MAX,
                     std::size_t max_bytes = SIZE_MAX);
  // Throws TemplateError.
  std::string render(const Body& body);

 private:
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body, std::string& out);
  Flow exec(const Stmt& s, std::string& out);  // counts the step, checks the output's size
  Flow exec_kind(const Stmt& s, std::string& out);
  Flow exec_for(const Stmt& s, std::string& out);
  void exec_set(const Stmt& s);
  Value make_macro(const Stmt& s);
  Value eval(const Expr& e);
  Value eval_inner(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_call(const Expr& e);
  CallArgs eval_args(const Expr& e, std::size_t first);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  void bind_targets(const std::vector<std::string>& targets, const Value& v);

  std::vector<std::unordered_map<std::string, Value>> scopes_;
  Value filter_block_input_;  // operand of the innermost filter in {% filter %}
  int depth_ = 0;             // macro recursion guard
  void step();                // counts one step against the budget
  void check_size(const std::string& out) const;
  void check_size(const Value& v) const;
  std::uint64_t steps_ = 0, max_steps_;
  std::size_t max_bytes_;
};

// Python semantics of binary operators (+, -, ~, ==, in, ...), outside `and`/`or`.
Value binary_op(const std::string& op, const Value& a, const Value& b);
// obj.name / obj[key] lookups; missing members give undefined.
Value get_attr(const Value& obj, const std::string& name, const std::string& path);
Value get_item(const Value& obj, const Value& key, const std::string& path);

}  // namespace graft::chat
