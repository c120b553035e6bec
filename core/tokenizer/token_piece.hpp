// Small helpers about token texts shared by the tokenizer models.
#pragma once

#include <string_view>

namespace graft {

// The byte of a "<0xXX>" byte-fallback token, or -1 when `text` is not one.
int parse_byte_token(std::string_view text) noexcept;

}  // namespace graft
