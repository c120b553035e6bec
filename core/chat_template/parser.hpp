#pragma once
// Recursive-descent parser from tokens to the AST, with jinja2's operator precedence.
#include <string_view>

#include "ast.hpp"

namespace graft::chat {

// Throws TemplateError with the position of the offending token.
Body parse_template(std::string_view source);

}  // namespace graft::chat
