#include "model/architecture.hpp"

#include <array>

namespace graft {

// One per file in core/model/arch/.
const Architecture& llama_architecture();
const Architecture& qwen3_architecture();

std::span<const Architecture* const> architectures() {
  static const std::array<const Architecture*, 2> all = {&llama_architecture(), &qwen3_architecture()};
  return all;
}

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture* a : architectures())
    if (a->name == name) return a;
  return nullptr;
}

std::string architecture_names() {
  std::string s;
  for (const Architecture* a : architectures()) s += (s.empty() ? "" : ", ") + std::string(a->name);
  return s;
}

std::string_view to_string(LayerKind kind) {
  switch (kind) {
    case LayerKind::attention: return "attention";
  }
  return "?";
}

}  // namespace graft
