#pragma once
// Splits a template into text and tag tokens, applying whitespace control the way transformers
// configures jinja2: trim_blocks=True, lstrip_blocks=True, `-` strips, `+` keeps.
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"

namespace graft::chat {

enum class Tok {
  Text,        // literal output
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // value is the unescaped string
  Int,
  Float,
  Op,          // operators and punctuation, value holds the spelling
  End,         // end of input
};

struct Token {
  Tok type;
  std::string value;
  SourcePos pos;
};

// Throws TemplateError on malformed input (unclosed tag, unterminated string, stray character).
std::vector<Token> tokenize(std::string_view source);

}  // namespace graft::chat
