// GPT-2's reversible byte <-> code point map: byte-level BPE vocabularies spell every byte as a
// printable code point (space -> U+0120 'Ġ', newline -> U+010A 'Ċ'), so tokens are valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace graft::byte_map {

// The code point byte b is spelled as.
char32_t byte_to_cp(std::uint8_t b) noexcept;
// UTF-8 of byte_to_cp(b) (1 or 2 bytes).
std::string_view byte_to_utf8(std::uint8_t b) noexcept;
// The byte a code point spells, or -1 when cp is not in the map.
int cp_to_byte(char32_t cp) noexcept;

// Raw bytes -> byte-level text (always valid UTF-8).
std::string encode(std::string_view bytes);
// Byte-level text -> raw bytes. Code points outside the map are copied through as UTF-8 and
// counted in *unmapped (when given), so callers can tell a clean decode from a lossy one.
std::string decode(std::string_view text, std::size_t* unmapped = nullptr);

}  // namespace graft::byte_map
