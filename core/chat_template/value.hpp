#pragma once
// The dynamic value of the template language: Python-like semantics as in jinja2, since chat
// templates are written for (and tested against) Python's jinja2 in transformers.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace graft::chat {

class Value;
using List = std::vector<Value>;

class Dict;
struct CallArgs;
struct Callable;

struct Undefined {
  std::string name;  // what was looked up, for error messages
};
struct None {};

class Value {
 public:
  using ListPtr = std::shared_ptr<List>;
  using DictPtr = std::shared_ptr<Dict>;
  using CallablePtr = std::shared_ptr<Callable>;
  // Lists and dicts are shared like Python objects, so `namespace()` attributes set in a loop are
  // visible outside it.
  using Data = std::variant<Undefined, None, bool, std::int64_t, double, std::string, ListPtr, DictPtr, CallablePtr>;

  Value() = default;
  Value(Undefined u) : data_(std::move(u)) {}
  Value(None) : data_(None{}) {}
  Value(bool b) : data_(b) {}
  Value(int i) : data_(static_cast<std::int64_t>(i)) {}
  Value(std::int64_t i) : data_(i) {}
  Value(double d) : data_(d) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(List l);
  Value(DictPtr d);  // a new dict (counted by the thread's ContainerArena)
  Value(CallablePtr c) : data_(std::move(c)) {}

  static Value undefined(std::string name) { return Value(Undefined{std::move(name)}); }
  static Value new_dict() { return Value(std::make_shared<Dict>()); }
  static Value from_json(const nlohmann::ordered_json& j);

  bool is_undefined() const { return std::holds_alternative<Undefined>(data_); }
  bool is_none() const { return std::holds_alternative<None>(data_); }
  bool is_bool() const { return std::holds_alternative<bool>(data_); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(data_); }
  bool is_float() const { return std::holds_alternative<double>(data_); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return std::holds_alternative<std::string>(data_); }
  bool is_list() const { return std::holds_alternative<ListPtr>(data_); }
  bool is_dict() const { return std::holds_alternative<DictPtr>(data_); }
  bool is_callable() const { return std::holds_alternative<CallablePtr>(data_); }

  bool as_bool() const { return std::get<bool>(data_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(data_); }
  double as_double() const { return is_int() ? static_cast<double>(as_int()) : std::get<double>(data_); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  List& as_list() const { return *std::get<ListPtr>(data_); }
  Dict& as_dict() const { return *std::get<DictPtr>(data_); }
  const Callable& as_callable() const { return *std::get<CallablePtr>(data_); }
  const std::string& undefined_name() const { return std::get<Undefined>(data_).name; }

  bool truthy() const;
  // Python str(): what {{ x }} prints. Undefined prints "".
  std::string to_str() const;
  // Python repr(), used for strings inside printed lists/dicts.
  std::string repr() const;
  // json.dumps(ensure_ascii=False), as transformers' tojson; indent < 0 = one line.
  std::string to_json(int indent = -1) const;
  std::string type_name() const;
  // Items of a for loop: list items, dict keys, string characters. Fails on anything else.
  List iterate() const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  Data data_;
};

// Defined after Value: a std::pair holding a Value needs Value complete (clang rejects it
// otherwise).
//
// Dicts keep insertion order (Python dicts do, and tojson output depends on it). Lookup is linear:
// chat template dicts are small.
class Dict {
 public:
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value value);
  std::size_t size() const { return items_.size(); }
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  void clear() { items_.clear(); }

 private:
  std::vector<std::pair<std::string, Value>> items_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  // Positional argument i or keyword `name`, else nullptr.
  const Value* get(std::size_t i, std::string_view name) const;
};

struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> fn;
};

// The lists and dicts made on this thread while it lives, emptied when it ends: templates can
// make reference cycles (`{% set ns.me = ns %}`, a list appended to itself) that Python's
// collector frees and shared_ptr never would. A render holds one, made before any value of the
// render and ended after the last: what is still alive then is garbage or a cycle.
class ContainerArena {
 public:
  ContainerArena();
  ~ContainerArena();
  ContainerArena(const ContainerArena&) = delete;
  ContainerArena& operator=(const ContainerArena&) = delete;
  static void track(const std::shared_ptr<List>& list);
  static void track(const std::shared_ptr<Dict>& dict);

 private:
  void prune();  // drops what has died, so a long render's bookkeeping stays proportional to what lives
  std::vector<std::weak_ptr<List>> lists_;
  std::vector<std::weak_ptr<Dict>> dicts_;
  std::size_t prune_at_ = 1024;
  ContainerArena* previous_;
};

// Python float repr: shortest round-trip digits, ".0" on integral values, exponent form outside
// 1e-4 <= |x| < 1e16.
std::string python_float(double d);
// Number of Unicode code points / their byte offsets (Python str indexes by code point).
std::vector<std::size_t> utf8_offsets(std::string_view s);

}  // namespace graft::chat
