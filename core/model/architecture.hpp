// Architectures as data: what an architecture is to the engine (its GGUF keys and defaults, which
// kind each layer is, the tensors of each kind) lives in one file per architecture under
// core/model/arch/, listed once in architecture.cpp. The forward pass runs layer kinds, not
// architectures, so a new architecture built from kinds the engine has is one new file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "graft/status.hpp"
#include "gguf/gguf_file.hpp"

namespace graft {

struct ModelParams;
struct LayerWeights;
class TensorBinder;

// What a layer does with the residual stream before its feed-forward part.
enum class LayerKind : std::uint8_t {
  attention,        // softmax attention over a KV cache (llama, qwen3)
  gated_attention,  // the same with an output gate in the query projection (qwen35's full layers)
  delta_net,        // gated delta-net: linear attention with a recurrent state (qwen35)
};
std::string_view to_string(LayerKind kind);

struct Architecture {
  std::string_view name;  // general.architecture
  // Its defaults, set before the common keys are read (which override them): RoPE style, norms,
  // frequency base, epsilon.
  void (*defaults)(ModelParams& p);
  // Its own keys and layer kinds, read after the common ones; null when it has none. Errors are
  // one line naming the file and the key.
  Status (*read_params)(const gguf::File& f, ModelParams& p);
  // Binds the tensors of layer `index` (of kind p.layer_kinds[index], or nextn_kind for an MTP
  // block after the main layers) by their GGUF names.
  Status (*bind_layer)(TensorBinder& b, const ModelParams& p, std::uint32_t index, LayerWeights& L);
  // The kind of its MTP (nextn) blocks' inner layer.
  LayerKind nextn_kind = LayerKind::attention;
};

// Every architecture graft knows, in the order `graft info` and errors list them.
std::span<const Architecture* const> architectures();
// The one named so, or null.
const Architecture* find_architecture(std::string_view name);
// "llama, qwen3" for messages.
std::string architecture_names();

}  // namespace graft
