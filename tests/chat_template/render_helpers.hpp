#pragma once
// Small helpers shared by the chat template tests.
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "chat_template/chat_template.hpp"

namespace graft::chat::testing {

// Renders `source` with `context`; returns the text, or "ERROR: <message>".
inline std::string render(std::string_view source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                          const RenderOptions& options = {}) {
  auto parsed = ChatTemplate::parse(source);
  if (auto* err = std::get_if<std::string>(&parsed)) return "ERROR: " + *err;
  RenderResult r = std::get<ChatTemplate>(parsed).render(context, options);
  return r.ok() ? r.text() : "ERROR: " + r.error();
}

}  // namespace graft::chat::testing
