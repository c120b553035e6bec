#include "tokenizer/byte_map.hpp"

#include <array>

#include "tokenizer/unicode.hpp"

namespace graft::byte_map {
namespace {

struct Tables {
  std::array<char32_t, 256> cp{};
  std::array<std::string, 256> utf8;
  std::array<std::int16_t, 512> back{};  // every mapped code point is below U+0200

  Tables() {
    back.fill(-1);
    // Printable Latin-1 bytes keep their code point; the other 68 are numbered from U+0100 on,
    // in byte order.
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      cp[b] = printable ? static_cast<char32_t>(b) : next++;
      utf8[b] = unicode::to_utf8(cp[b]);
      back[cp[b]] = static_cast<std::int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_cp(std::uint8_t b) noexcept { return tables().cp[b]; }

std::string_view byte_to_utf8(std::uint8_t b) noexcept { return tables().utf8[b]; }

int cp_to_byte(char32_t cp) noexcept {
  const auto& back = tables().back;
  return cp < back.size() ? back[cp] : -1;
}

std::string encode(std::string_view bytes) {
  const auto& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += t.utf8[static_cast<std::uint8_t>(c)];
  return out;
}

std::string decode(std::string_view text, std::size_t* unmapped) {
  std::string out;
  out.reserve(text.size());
  std::size_t misses = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t start = pos;
    const char32_t cp = unicode::decode_at(text, pos);
    const int b = cp_to_byte(cp);
    if (b >= 0) {  // U+FFFD from a malformed byte is never in the map, so it is copied through
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(start, pos - start));
      ++misses;
    }
  }
  if (unmapped) *unmapped = misses;
  return out;
}

}  // namespace graft::byte_map
