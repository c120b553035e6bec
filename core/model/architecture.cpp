#include "model/architecture.hpp"

#include <array>

namespace graft {

// One per file in core/model/arch/.
const Architecture& llama_architecture();
const Architecture& qwen3_architecture();
const Architecture& qwen35_architecture();

std::span<const Architecture* const> architectures() {
  static const std::array<const Architecture*, 3> all = {&llama_architecture(), &qwen3_architecture(),
                                                         &qwen35_architecture()};
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
    case LayerKind::gated_attention: return "gated_attention";
    case LayerKind::delta_net: return "delta_net";
  }
  return "?";
}

}  // namespace graft
