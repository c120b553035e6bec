// Python str methods, byte-wise on UTF-8 (case mapping is ASCII-only, see docs/chat_templates.md).
#include <cctype>

#include "builtins.hpp"

namespace graft::chat {

std::string str_strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::string set = " \t\n\r\f\v";
  if (chars && chars->is_string()) set = chars->as_string();
  std::size_t b = 0, e = s.size();
  if (left)
    while (b < e && set.find(s[b]) != std::string::npos) ++b;
  if (right)
    while (e > b && set.find(s[e - 1]) != std::string::npos) --e;
  return s.substr(b, e - b);
}

std::string str_replace(const std::string& s, const std::string& from, const std::string& to, std::int64_t count) {
  if (from.empty()) {
    // Python inserts `to` around every character.
    std::string out = to;
    auto offs = utf8_offsets(s);
    for (std::size_t k = 0; k < offs.size(); ++k)
      out += s.substr(offs[k], (k + 1 < offs.size() ? offs[k + 1] : s.size()) - offs[k]) + to;
    return out;
  }
  std::string out;
  std::size_t pos = 0;
  std::int64_t done = 0;
  while (count < 0 || done < count) {
    std::size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out += s.substr(pos, f - pos) + to;
    pos = f + from.size();
    ++done;
  }
  return out + s.substr(pos);
}

std::string str_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string str_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string str_title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) {
      c = static_cast<char>(prev_cased ? std::tolower(u) : std::toupper(u));
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return out;
}

std::string str_capitalize(const std::string& s) {
  std::string out = str_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

}  // namespace graft::chat
