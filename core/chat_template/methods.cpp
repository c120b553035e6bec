// Methods callable on values (`s.split(',')`, `d.items()`): the Python str and dict methods chat
// templates use, bound to their object.
#include <cctype>
#include <memory>

#include "builtins.hpp"
#include "error.hpp"

namespace graft::chat {
namespace {

const std::string& str_arg(const CallArgs& a, std::size_t i, const char* method) {
  const Value* v = a.get(i, "");
  if (!v || !v->is_string()) fail(std::string(method) + "() expects a string argument");
  return v->as_string();
}

Value split(const std::string& s, const CallArgs& a) {
  const Value* sep = a.get(0, "sep");
  const Value* maxv = a.get(1, "maxsplit");
  std::int64_t max = maxv && maxv->is_int() ? maxv->as_int() : -1;
  List out;
  if (!sep || sep->is_none()) {
    // Whitespace split: runs of whitespace separate, no empty strings.
    std::size_t k = 0;
    while (true) {
      while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
      if (k >= s.size()) break;
      if (max >= 0 && static_cast<std::int64_t>(out.size()) == max) {
        std::string rest = s.substr(k);
        while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.pop_back();
        out.emplace_back(rest);
        break;
      }
      std::size_t e = k;
      while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
      out.emplace_back(s.substr(k, e - k));
      k = e;
    }
    return Value(std::move(out));
  }
  if (!sep->is_string() || sep->as_string().empty()) fail("split(): empty or non-string separator");
  const std::string& d = sep->as_string();
  std::size_t pos = 0;
  while (max < 0 || static_cast<std::int64_t>(out.size()) < max) {
    std::size_t f = s.find(d, pos);
    if (f == std::string::npos) break;
    out.emplace_back(s.substr(pos, f - pos));
    pos = f + d.size();
  }
  out.emplace_back(s.substr(pos));
  return Value(std::move(out));
}

// startswith/endswith accept a string or a tuple of strings.
bool affix(const std::string& s, const Value& x, bool prefix) {
  auto one = [&](const Value& p) {
    if (!p.is_string()) fail(std::string(prefix ? "startswith" : "endswith") + "() expects a string");
    const std::string& t = p.as_string();
    return prefix ? s.starts_with(t) : s.ends_with(t);
  };
  if (x.is_list()) {
    for (const Value& p : x.as_list())
      if (one(p)) return true;
    return false;
  }
  return one(x);
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  if (name == "strip") return Value(str_strip(s, a.get(0, "chars"), true, true));
  if (name == "lstrip") return Value(str_strip(s, a.get(0, "chars"), true, false));
  if (name == "rstrip") return Value(str_strip(s, a.get(0, "chars"), false, true));
  if (name == "split") return split(s, a);
  if (name == "upper") return Value(str_upper(s));
  if (name == "lower") return Value(str_lower(s));
  if (name == "title") return Value(str_title(s));
  if (name == "capitalize") return Value(str_capitalize(s));
  if (name == "startswith" || name == "endswith") {
    const Value* x = a.get(0, "");
    if (!x) fail(name + "() takes one argument");
    return Value(affix(s, *x, name == "startswith"));
  }
  if (name == "replace") {
    const Value* c = a.get(2, "count");
    return Value(str_replace(s, str_arg(a, 0, "replace"), str_arg(a, 1, "replace"), c && c->is_int() ? c->as_int() : -1));
  }
  if (name == "find") {
    std::size_t f = s.find(str_arg(a, 0, "find"));
    return Value(f == std::string::npos ? std::int64_t{-1} : static_cast<std::int64_t>(utf8_offsets(s.substr(0, f)).size()));
  }
  if (name == "count") {
    const std::string& t = str_arg(a, 0, "count");
    std::int64_t n = 0;
    if (t.empty()) return Value(static_cast<std::int64_t>(utf8_offsets(s).size() + 1));
    for (std::size_t p = s.find(t); p != std::string::npos; p = s.find(t, p + t.size())) ++n;
    return Value(n);
  }
  if (name == "join") {
    std::string out;
    const Value* items = a.get(0, "iterable");
    if (!items) fail("join() takes one argument");
    bool first = true;
    for (const Value& x : items->iterate()) {
      out += (first ? "" : s) + x.to_str();
      first = false;
    }
    return Value(std::move(out));
  }
  fail("no string method '" + name + "'");
}

Value dict_method(const Value& d, const std::string& name, const CallArgs& a) {
  const Dict& dict = d.as_dict();
  List out;
  if (name == "items") {
    for (const auto& [k, v] : dict.items()) out.emplace_back(List{Value(k), v});
  } else if (name == "keys") {
    for (const auto& [k, v] : dict.items()) out.emplace_back(k);
  } else if (name == "values") {
    for (const auto& [k, v] : dict.items()) out.push_back(v);
  } else {  // get
    const Value* key = a.get(0, "key");
    if (!key) fail("get() takes a key");
    if (key->is_string())
      if (const Value* v = dict.find(key->as_string())) return *v;
    const Value* dflt = a.get(1, "default");
    return dflt ? *dflt : Value(None{});
  }
  return Value(std::move(out));
}

bool is_string_method(const std::string& n) {
  static const char* names[] = {"strip", "lstrip", "rstrip", "split", "upper", "lower", "title", "capitalize",
                                "startswith", "endswith", "replace", "find", "count", "join"};
  for (const char* m : names)
    if (n == m) return true;
  return false;
}

}  // namespace

Value get_method(const Value& obj, const std::string& name) {
  if (obj.is_string() && is_string_method(name)) {
    std::string s = obj.as_string();
    return Value(std::make_shared<Callable>(
        Callable{name, [s, name](const CallArgs& a) { return string_method(s, name, a); }}));
  }
  if (obj.is_dict() && (name == "items" || name == "keys" || name == "values" || name == "get")) {
    return Value(std::make_shared<Callable>(
        Callable{name, [obj, name](const CallArgs& a) { return dict_method(obj, name, a); }}));
  }
  return Value::undefined(name);
}

}  // namespace graft::chat
