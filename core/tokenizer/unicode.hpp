// UTF-8 helpers shared by the tokenizers: sequence lengths, code point decoding/encoding and
// validity checks. Malformed input never throws; callers decide how to treat it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace graft::unicode {

inline constexpr char32_t kReplacement = 0xFFFD;

// Length of the sequence a lead byte announces (1 for ASCII and for stray bytes, so a scan
// always advances).
std::size_t utf8_len(unsigned char lead) noexcept;

// Appends the UTF-8 encoding of cp (U+FFFD for surrogates and values past U+10FFFF).
void append_utf8(std::string& out, char32_t cp);
std::string to_utf8(char32_t cp);

// Length of the well-formed sequence starting at s[0] (1..4), 0 if s[0] starts no valid sequence
// or the sequence is cut short. `*incomplete` is set when the bytes so far are a valid prefix that
// more bytes could complete.
std::size_t valid_prefix_len(std::string_view s, bool* incomplete = nullptr) noexcept;

// Decodes the code point at s[pos], advancing pos; malformed bytes decode as U+FFFD, one byte each.
char32_t decode_at(std::string_view s, std::size_t& pos) noexcept;

bool is_valid_utf8(std::string_view s) noexcept;

}  // namespace graft::unicode
