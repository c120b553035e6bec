// Filters, tests and methods. Each is a small lambda in a name -> function table, so the parser
// can reject unknown names up front.
#include "builtins.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>

#include "error.hpp"
#include "evaluator.hpp"

namespace graft::chat {
namespace {

using FilterFn = Value (*)(const Value&, const CallArgs&);
using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& arg(const CallArgs& a, std::size_t i, std::string_view name, const char* filter) {
  const Value* v = a.get(i, name);
  if (!v) fail(std::string(filter) + ": missing argument '" + std::string(name) + "'");
  return *v;
}

const std::string& need_string(const Value& v, const char* what) {
  if (v.is_undefined()) fail(std::string(what) + ": '" + v.undefined_name() + "' is undefined");
  if (!v.is_string()) fail(std::string(what) + ": expected a string, got a " + v.type_name());
  return v.as_string();
}

std::int64_t int_arg(const CallArgs& a, std::size_t i, std::string_view name, std::int64_t dflt) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return dflt;
  if (!v->is_int()) fail("expected an integer for '" + std::string(name) + "'");
  return v->as_int();
}

bool bool_arg(const CallArgs& a, std::size_t i, std::string_view name, bool dflt) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : dflt;
}

// Dotted attribute lookup as in map(attribute="a.b") / selectattr("a.b").
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    cur = get_item(cur, Value(part), part);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// select/reject/selectattr/rejectattr share this: args are (test name, test args...).
Value select_impl(const Value& seq, const CallArgs& a, bool by_attr, bool keep_if) {
  std::size_t first = 0;
  std::string attr;
  if (by_attr) attr = need_string(arg(a, first++, "attribute", "selectattr"), "selectattr");
  CallArgs test_args;
  std::string test;
  if (a.positional.size() > first) {
    test = need_string(a.positional[first], "select");
    test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(first) + 1, a.positional.end());
    if (!has_test(test)) fail("unknown test '" + test + "'");
  }
  List out;
  for (const Value& item : seq.iterate()) {
    Value subject = by_attr ? attr_path(item, attr) : item;
    bool r = test.empty() ? subject.truthy() : apply_test(test, subject, test_args);
    if (r == keep_if) out.push_back(item);
  }
  return Value(std::move(out));
}

int compare_values(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double();
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  fail("cannot compare " + a.type_name() + " with " + b.type_name());
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"trim", [](const Value& v, const CallArgs& a) { return Value(str_strip(need_string(v, "trim"), a.get(0, "chars"), true, true)); }},
      {"length", [](const Value& v, const CallArgs&) {
         if (v.is_dict()) return Value(static_cast<std::int64_t>(v.as_dict().size()));
         return Value(static_cast<std::int64_t>(v.iterate().size()));
       }},
      {"upper", [](const Value& v, const CallArgs&) { return Value(str_upper(need_string(v, "upper"))); }},
      {"lower", [](const Value& v, const CallArgs&) { return Value(str_lower(need_string(v, "lower"))); }},
      {"capitalize", [](const Value& v, const CallArgs&) { return Value(str_capitalize(need_string(v, "capitalize"))); }},
      {"title", [](const Value& v, const CallArgs&) { return Value(str_title(need_string(v, "title"))); }},
      {"tojson", [](const Value& v, const CallArgs& a) { return Value(v.to_json(static_cast<int>(int_arg(a, 0, "indent", -1)))); }},
      {"string", [](const Value& v, const CallArgs&) { return Value(v.to_str()); }},
      {"safe", [](const Value& v, const CallArgs&) { return v; }},
      {"list", [](const Value& v, const CallArgs&) { return Value(v.iterate()); }},
      {"join", [](const Value& v, const CallArgs& a) {
         const Value* sep = a.get(0, "d");
         const Value* attr = a.get(1, "attribute");
         std::string out;
         bool first = true;
         for (const Value& item : v.iterate()) {
           out += (first ? "" : (sep ? sep->to_str() : "")) + (attr ? attr_path(item, attr->to_str()) : item).to_str();
           first = false;
         }
         return Value(std::move(out));
       }},
      {"replace", [](const Value& v, const CallArgs& a) {
         return Value(str_replace(need_string(v, "replace"), need_string(arg(a, 0, "old", "replace"), "replace"),
                                  need_string(arg(a, 1, "new", "replace"), "replace"), int_arg(a, 2, "count", -1)));
       }},
      {"default", [](const Value& v, const CallArgs& a) {
         const Value* d = a.get(0, "default_value");
         bool boolean = bool_arg(a, 1, "boolean", false);
         if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value(std::string());
         return v;
       }},
      {"first", [](const Value& v, const CallArgs&) {
         List l = v.iterate();
         return l.empty() ? Value::undefined("first") : l.front();
       }},
      {"last", [](const Value& v, const CallArgs&) {
         List l = v.iterate();
         return l.empty() ? Value::undefined("last") : l.back();
       }},
      {"items", [](const Value& v, const CallArgs&) {
         if (v.is_undefined()) return Value(List{});
         if (!v.is_dict()) fail("items: expected a mapping, got a " + v.type_name());
         List out;
         for (const auto& [k, x] : v.as_dict().items()) out.emplace_back(List{Value(k), x});
         return Value(std::move(out));
       }},
      {"map", [](const Value& v, const CallArgs& a) {
         List out;
         if (const Value* attr = a.get(99, "attribute")) {
           const Value* dflt = a.get(99, "default");
           for (const Value& item : v.iterate()) {
             Value x = attr_path(item, attr->to_str());
             out.push_back(x.is_undefined() && dflt ? *dflt : x);
           }
         } else {
           std::string f = need_string(arg(a, 0, "filter", "map"), "map");
           if (!has_filter(f)) fail("unknown filter '" + f + "'");
           CallArgs rest;
           rest.positional.assign(a.positional.begin() + 1, a.positional.end());
           for (const Value& item : v.iterate()) out.push_back(apply_filter(f, item, rest));
         }
         return Value(std::move(out));
       }},
      {"select", [](const Value& v, const CallArgs& a) { return select_impl(v, a, false, true); }},
      {"reject", [](const Value& v, const CallArgs& a) { return select_impl(v, a, false, false); }},
      {"selectattr", [](const Value& v, const CallArgs& a) { return select_impl(v, a, true, true); }},
      {"rejectattr", [](const Value& v, const CallArgs& a) { return select_impl(v, a, true, false); }},
      {"unique", [](const Value& v, const CallArgs&) {
         List out;
         for (const Value& item : v.iterate())
           if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
         return Value(std::move(out));
       }},
      {"reverse", [](const Value& v, const CallArgs&) {
         if (v.is_string()) {
           List chars = v.iterate();
           std::string s;
           for (auto it = chars.rbegin(); it != chars.rend(); ++it) s += it->as_string();
           return Value(std::move(s));
         }
         List l = v.iterate();
         std::reverse(l.begin(), l.end());
         return Value(std::move(l));
       }},
      {"sort", [](const Value& v, const CallArgs& a) {
         List l = v.iterate();
         bool reverse = bool_arg(a, 0, "reverse", false);
         const Value* attr = a.get(2, "attribute");
         auto key = [&](const Value& x) { return attr ? attr_path(x, attr->to_str()) : x; };
         std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
           int c = compare_values(key(x), key(y));
           return reverse ? c > 0 : c < 0;
         });
         return Value(std::move(l));
       }},
      {"dictsort", [](const Value& v, const CallArgs&) {
         List out = apply_filter("items", v, {}).as_list();
         std::stable_sort(out.begin(), out.end(), [](const Value& x, const Value& y) {
           return x.as_list()[0].as_string() < y.as_list()[0].as_string();
         });
         return Value(std::move(out));
       }},
      {"indent", [](const Value& v, const CallArgs& a) {
         const Value* w = a.get(0, "width");
         std::string pad = w && w->is_string() ? w->as_string() : std::string(static_cast<std::size_t>(int_arg(a, 0, "width", 4)), ' ');
         bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
         const std::string& s = need_string(v, "indent");
         std::string out;
         std::size_t start = 0;
         for (bool is_first = true;; is_first = false) {
           std::size_t nl = s.find('\n', start);
           std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
           if ((!is_first || first) && (blank || !line.empty())) out += pad;
           out += line;
           if (nl == std::string::npos) break;
           out += '\n';
           start = nl + 1;
         }
         return Value(std::move(out));
       }},
      {"int", [](const Value& v, const CallArgs& a) {
         if (v.is_int()) return v;
         if (v.is_float()) return Value(static_cast<std::int64_t>(v.as_double()));
         if (v.is_bool()) return Value(static_cast<std::int64_t>(v.as_bool()));
         if (v.is_string()) {
           try {
             std::size_t used = 0;
             std::string s = str_strip(v.as_string(), nullptr, true, true);
             auto r = static_cast<std::int64_t>(std::stod(s, &used));
             if (used == s.size()) return Value(r);
           } catch (...) {
           }
         }
         const Value* d = a.get(0, "default");
         return d ? *d : Value(static_cast<std::int64_t>(0));
       }},
      {"float", [](const Value& v, const CallArgs& a) {
         if (v.is_number()) return Value(v.as_double());
         if (v.is_string()) {
           try {
             std::size_t used = 0;
             std::string s = str_strip(v.as_string(), nullptr, true, true);
             double r = std::stod(s, &used);
             if (used == s.size()) return Value(r);
           } catch (...) {
           }
         }
         const Value* d = a.get(0, "default");
         return d ? *d : Value(0.0);
       }},
      {"abs", [](const Value& v, const CallArgs&) {
         if (v.is_int() && v.as_int() == INT64_MIN) fail("integer overflow");
         if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         if (v.is_float()) return Value(std::fabs(v.as_double()));
         fail("abs: expected a number, got a " + v.type_name());
       }},
      {"round", [](const Value& v, const CallArgs& a) {
         if (!v.is_number()) fail("round: expected a number, got a " + v.type_name());
         double scale = std::pow(10.0, static_cast<double>(int_arg(a, 0, "precision", 0)));
         std::string method = a.get(1, "method") ? a.get(1, "method")->to_str() : "common";
         double x = v.as_double() * scale;
         double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::round(x);
         return Value(r / scale);
       }},
      {"wordcount", [](const Value& v, const CallArgs&) {
         std::int64_t n = 0;
         bool in_word = false;
         for (char c : need_string(v, "wordcount")) {
           bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
           if (!space && !in_word) ++n;
           in_word = !space;
         }
         return Value(n);
       }},
  };
  return table;
}

bool is_sequence(const Value& v) { return v.is_list() || v.is_string() || v.is_dict(); }

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> table = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      {"iterable", [](const Value& v, const CallArgs&) { return is_sequence(v); }},
      {"sequence", [](const Value& v, const CallArgs&) { return is_sequence(v); }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is_callable(); }},
      {"lower", [](const Value& v, const CallArgs&) { return v.is_string() && str_lower(v.as_string()) == v.as_string(); }},
      {"upper", [](const Value& v, const CallArgs&) { return v.is_string() && str_upper(v.as_string()) == v.as_string(); }},
      {"odd", [](const Value& v, const CallArgs&) { return v.is_int() && v.as_int() % 2 != 0; }},
      {"even", [](const Value& v, const CallArgs&) { return v.is_int() && v.as_int() % 2 == 0; }},
      {"divisibleby", [](const Value& v, const CallArgs& a) {
         const Value& d = arg(a, 0, "num", "divisibleby");
         return v.is_int() && d.is_int() && d.as_int() != 0 && v.as_int() % d.as_int() == 0;
       }},
      {"equalto", [](const Value& v, const CallArgs& a) { return v == arg(a, 0, "other", "equalto"); }},
      {"eq", [](const Value& v, const CallArgs& a) { return v == arg(a, 0, "other", "eq"); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !(v == arg(a, 0, "other", "ne")); }},
      {"sameas", [](const Value& v, const CallArgs& a) { return v == arg(a, 0, "other", "sameas"); }},
      {"lt", [](const Value& v, const CallArgs& a) { return compare_values(v, arg(a, 0, "other", "lt")) < 0; }},
      {"le", [](const Value& v, const CallArgs& a) { return compare_values(v, arg(a, 0, "other", "le")) <= 0; }},
      {"gt", [](const Value& v, const CallArgs& a) { return compare_values(v, arg(a, 0, "other", "gt")) > 0; }},
      {"ge", [](const Value& v, const CallArgs& a) { return compare_values(v, arg(a, 0, "other", "ge")) >= 0; }},
      {"in", [](const Value& v, const CallArgs& a) { return binary_op("in", v, arg(a, 0, "seq", "in")).as_bool(); }},
  };
  return table;
}

}  // namespace

bool has_filter(const std::string& name) {
  return filters().count(name) || name == "count" || name == "d" || name == "e" || name == "escape";
}

bool has_test(const std::string& name) { return tests().count(name) || name == "==" || name == "!="; }

Value apply_filter(const std::string& name, const Value& v, const CallArgs& args) {
  std::string n = name == "count" ? "length" : name == "d" ? "default" : name;
  if (n == "e" || n == "escape") {
    std::string out;
    for (char c : v.to_str()) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value(std::move(out));
  }
  auto it = filters().find(n);
  if (it == filters().end()) fail("unknown filter '" + name + "'");
  // Filters other than the undefined-aware ones fail on undefined input, naming it.
  if (v.is_undefined() && n == "length") return Value(static_cast<std::int64_t>(0));  // as jinja2
  if (v.is_undefined() && n != "default" && n != "items" && n != "string" && n != "safe" && n != "tojson")
    fail("'" + v.undefined_name() + "' is undefined (in filter '" + name + "')");
  return it->second(v, args);
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  auto it = tests().find(name == "==" ? "eq" : name == "!=" ? "ne" : name);
  if (it == tests().end()) fail("unknown test '" + name + "'");
  return it->second(v, args);
}

}  // namespace graft::chat
