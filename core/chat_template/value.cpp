#include "value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "error.hpp"

namespace graft::chat {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

Value* Dict::find(std::string_view key) {
  for (auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

namespace {
thread_local ContainerArena* t_arena = nullptr;
}  // namespace

Value::Value(List l) : data_(std::make_shared<List>(std::move(l))) { ContainerArena::track(std::get<ListPtr>(data_)); }

Value::Value(DictPtr d) : data_(std::move(d)) { ContainerArena::track(std::get<DictPtr>(data_)); }

ContainerArena::ContainerArena() : previous_(t_arena) { t_arena = this; }

ContainerArena::~ContainerArena() {
  t_arena = previous_;
  // Emptying every container still alive breaks its cycles; what nothing else holds is then freed.
  for (const auto& w : lists_)
    if (auto l = w.lock()) List().swap(*l);
  for (const auto& w : dicts_)
    if (auto d = w.lock()) d->clear();
}

void ContainerArena::track(const std::shared_ptr<List>& list) {
  if (!t_arena) return;
  t_arena->lists_.push_back(list);
  if (t_arena->lists_.size() >= t_arena->prune_at_) t_arena->prune();
}

void ContainerArena::track(const std::shared_ptr<Dict>& dict) {
  if (!t_arena) return;
  t_arena->dicts_.push_back(dict);
  if (t_arena->dicts_.size() >= t_arena->prune_at_) t_arena->prune();
}

void ContainerArena::prune() {
  std::erase_if(lists_, [](const auto& w) { return w.expired(); });
  std::erase_if(dicts_, [](const auto& w) { return w.expired(); });
  prune_at_ = 2 * std::max(lists_.size(), dicts_.size()) + 1024;
}

void Dict::set(std::string key, Value value) {
  if (Value* v = find(key)) {
    *v = std::move(value);
    return;
  }
  items_.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(std::size_t i, std::string_view name) const {
  for (const auto& [k, v] : named)
    if (k == name) return &v;
  return i < positional.size() ? &positional[i] : nullptr;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value(None{});
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<std::int64_t>(j.get<std::uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (const auto& e : j) l.push_back(from_json(e));
      return Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, v] : j.items()) d->set(k, from_json(v));
      return Value(std::move(d));
    }
    default: return Value(None{});
  }
}

bool Value::truthy() const {
  return std::visit(
      [](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Undefined> || std::is_same_v<T, None>) return false;
        else if constexpr (std::is_same_v<T, bool>) return v;
        else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) return v != 0;
        else if constexpr (std::is_same_v<T, std::string>) return !v.empty();
        else if constexpr (std::is_same_v<T, ListPtr> || std::is_same_v<T, DictPtr>) return v->size() != 0;
        else return true;
      },
      data_);
}

std::string python_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  // Shortest round-trip digits in scientific form, then laid out the way Python's repr does.
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  std::size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits += c;
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  } else {
    auto int_len = static_cast<std::size_t>(exp + 1);
    if (digits.size() <= int_len) out = digits + std::string(int_len - digits.size(), '0') + ".0";
    else out = digits.substr(0, int_len) + "." + digits.substr(int_len);
  }
  return neg ? "-" + out : out;
}

std::vector<std::size_t> utf8_offsets(std::string_view s) {
  std::vector<std::size_t> offs;
  for (std::size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offs.push_back(i);
  return offs;
}

static std::string py_repr_string(const std::string& s) {
  // Python picks single quotes unless the string contains ' and no ".
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == q) out += std::string("\\") + c;
        else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else out += c;
    }
  }
  return out + q;
}

std::string Value::repr() const {
  if (is_string()) return py_repr_string(as_string());
  return to_str();
}

std::string Value::to_str() const {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Undefined>) return "";
        else if constexpr (std::is_same_v<T, None>) return "None";
        else if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
        else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return python_float(v);
        else if constexpr (std::is_same_v<T, std::string>) return v;
        else if constexpr (std::is_same_v<T, ListPtr>) {
          std::string out = "[";
          for (std::size_t i = 0; i < v->size(); ++i) out += (i ? ", " : "") + (*v)[i].repr();
          return out + "]";
        } else if constexpr (std::is_same_v<T, DictPtr>) {
          std::string out = "{";
          bool first = true;
          for (const auto& [k, e] : v->items()) {
            out += (first ? "" : ", ") + py_repr_string(k) + ": " + e.repr();
            first = false;
          }
          return out + "}";
        } else return "<function " + v->name + ">";
      },
      data_);
}

// Python's json.dumps(ensure_ascii=False) escapes a string as nlohmann's dump does: the short
// escapes, \u00xx for other control characters, UTF-8 passed through.
static void json_string(std::string& out, const std::string& s) {
  out += nlohmann::ordered_json(s).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

static void json_dump(std::string& out, const Value& v, int indent, int depth) {
  // Python's json.dumps: ", " and ": " on one line; "," + newline + indent when indenting.
  auto newline = [&](int d) {
    out += '\n';
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  if (v.is_undefined()) fail("tojson: cannot serialize undefined value '" + v.undefined_name() + "'");
  if (v.is_none()) out += "null";
  else if (v.is_bool()) out += v.as_bool() ? "true" : "false";
  else if (v.is_int()) out += std::to_string(v.as_int());
  else if (v.is_float()) {
    double d = v.as_double();
    out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : python_float(d);
  } else if (v.is_string()) json_string(out, v.as_string());
  else if (v.is_list()) {
    const List& l = v.as_list();
    if (l.empty()) { out += "[]"; return; }
    out += '[';
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (i) out += indent >= 0 ? "," : ", ";
      if (indent >= 0) newline(depth + 1);
      json_dump(out, l[i], indent, depth + 1);
    }
    if (indent >= 0) newline(depth);
    out += ']';
  } else if (v.is_dict()) {
    const Dict& d = v.as_dict();
    if (d.size() == 0) { out += "{}"; return; }
    out += '{';
    bool first = true;
    for (const auto& [k, e] : d.items()) {
      if (!first) out += indent >= 0 ? "," : ", ";
      first = false;
      if (indent >= 0) newline(depth + 1);
      json_string(out, k);
      out += ": ";
      json_dump(out, e, indent, depth + 1);
    }
    if (indent >= 0) newline(depth);
    out += '}';
  } else fail("tojson: cannot serialize a " + v.type_name());
}

std::string Value::to_json(int indent) const {
  std::string out;
  json_dump(out, *this, indent, 0);
  return out;
}

std::string Value::type_name() const {
  static const char* names[] = {"undefined", "none", "bool", "int", "float", "string", "list", "dict", "function"};
  return names[data_.index()];
}

List Value::iterate() const {
  if (is_list()) return as_list();
  if (is_dict()) {
    List keys;
    for (const auto& [k, v] : as_dict().items()) keys.emplace_back(k);
    return keys;
  }
  if (is_string()) {
    const std::string& s = as_string();
    auto offs = utf8_offsets(s);
    List chars;
    for (std::size_t i = 0; i < offs.size(); ++i)
      chars.emplace_back(s.substr(offs[i], (i + 1 < offs.size() ? offs[i + 1] : s.size()) - offs[i]));
    return chars;
  }
  if (is_undefined()) fail("'" + undefined_name() + "' is undefined and cannot be iterated");
  fail("cannot iterate over a " + type_name());
}

bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.data_.index() != b.data_.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_bool()) return a.as_bool() == b.as_bool();
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_list()) return a.as_list() == b.as_list();
  if (a.is_dict()) {
    const Dict& x = a.as_dict();
    const Dict& y = b.as_dict();
    if (x.size() != y.size()) return false;
    for (const auto& [k, v] : x.items()) {
      const Value* o = y.find(k);
      if (!o || !(*o == v)) return false;
    }
    return true;
  }
  return std::get<Value::CallablePtr>(a.data_) == std::get<Value::CallablePtr>(b.data_);
}

}  // namespace graft::chat
