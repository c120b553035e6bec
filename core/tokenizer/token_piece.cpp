#include "tokenizer/token_piece.hpp"

namespace graft {
namespace {
int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
}  // namespace

int parse_byte_token(std::string_view text) noexcept {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = hex_digit(text[3]), lo = hex_digit(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace graft
