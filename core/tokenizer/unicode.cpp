#include "tokenizer/unicode.hpp"

namespace graft::unicode {

std::size_t utf8_len(unsigned char lead) noexcept {
  if (lead < 0xC0) return 1;  // ASCII or a stray continuation byte
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

void append_utf8(std::string& out, char32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacement;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string to_utf8(char32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

std::size_t valid_prefix_len(std::string_view s, bool* incomplete) noexcept {
  if (incomplete) *incomplete = false;
  if (s.empty()) return 0;
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629 table)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 == 0xE0) {
    need = 3;
    lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 3;
  } else if (b0 == 0xED) {
    need = 3;
    hi = 0x9F;
  } else if (b0 == 0xF0) {
    need = 4;
    lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 4;
  } else if (b0 == 0xF4) {
    need = 4;
    hi = 0x8F;
  } else {
    return 0;
  }
  for (std::size_t i = 1; i < need; ++i) {
    if (i >= s.size()) {
      if (incomplete) *incomplete = true;
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[i]);
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) return 0;
  }
  return need;
}

char32_t decode_at(std::string_view s, std::size_t& pos) noexcept {
  const std::size_t n = valid_prefix_len(s.substr(pos));
  if (n == 0) {
    ++pos;
    return kReplacement;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + pos);
  char32_t cp = 0;
  switch (n) {
    case 1: cp = p[0]; break;
    case 2: cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu); break;
    case 3: cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu); break;
    default: cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu); break;
  }
  pos += n;
  return cp;
}

bool is_valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = valid_prefix_len(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace graft::unicode
