#pragma once
// Filters (`x | f`), tests (`x is t`) and methods (`s.strip()`) of the jinja2 subset chat
// templates use. Errors are thrown as TemplateError without a position; the evaluator adds it.
#include <string>

#include "value.hpp"

namespace graft::chat {

bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& v, const CallArgs& args);
bool apply_test(const std::string& name, const Value& v, const CallArgs& args);
// A callable bound to `obj` for a method such as str.split or dict.items, or undefined.
Value get_method(const Value& obj, const std::string& name);

// Python str methods shared by filters and methods.
std::string str_strip(const std::string& s, const Value* chars, bool left, bool right);
std::string str_replace(const std::string& s, const std::string& from, const std::string& to, std::int64_t count);
std::string str_title(const std::string& s);
std::string str_capitalize(const std::string& s);
std::string str_upper(std::string s);
std::string str_lower(std::string s);

}  // namespace graft::chat
