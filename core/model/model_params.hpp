// Hyperparameters of a decoder-only transformer, read from GGUF metadata (<arch>.* keys).
#pragma once

#include <cstdint>
#include <string>

#include <vector>

#include "graft/kv_store.hpp"
#include "graft/status.hpp"
#include "gguf/gguf_file.hpp"

namespace graft {

struct Architecture;

// An integer metadata key into `out`: a one-line error naming the file and key when it is missing,
// not an integer, or outside [min, max].
Status read_count(const gguf::File& f, const std::string& key, std::uint32_t& out, std::int64_t min = 1,
                  std::int64_t max = std::int64_t{1} << 31);
enum class LayerKind : std::uint8_t;

struct ModelParams {
  const Architecture* arch = nullptr;  // model/architecture.hpp (llama's when not from a file)
  std::string arch_name;  // general.architecture
  std::string name;       // general.name, for display
  std::uint32_t n_vocab = 0;
  std::uint32_t n_ctx_train = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_layer = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t head_dim = 0;  // key_length; value_length must equal it
  std::uint32_t n_ff = 0;
  std::uint32_t n_rot = 0;
  bool rope_neox = false;      // qwen3: NEOX pairs; llama: adjacent pairs
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;
  float rms_eps = 1e-5f;
  bool qk_norm = false;        // qwen3 per-head RMSNorm on Q and K
  bool tied_output = false;    // output.weight absent: lm_head = token_embd
  std::uint32_t n_nextn = 0;   // MTP blocks stored after the main layers (not run by the forward pass)
  std::vector<LayerKind> layer_kinds;  // one per main layer

  // Gated delta-net layers (qwen35; shared/reference/qwen35.md): ssm.* keys.
  std::uint32_t ssm_conv_kernel = 0;  // Kc
  std::uint32_t ssm_state = 0;        // Dk = Dv: key and value head size
  std::uint32_t ssm_groups = 0;       // Hk: q/k heads
  std::uint32_t ssm_heads = 0;        // Hv: v heads (ssm.time_step_rank)
  std::uint32_t full_attention_interval = 0;  // every this many layers one is full attention
  std::uint32_t ssm_channels() const { return 2 * ssm_groups * ssm_state + ssm_heads * ssm_state; }  // C
  // Layers of each kind among the main layers.
  std::uint32_t count(LayerKind kind) const;

  std::uint32_t n_main_layers() const { return n_layer - n_nextn; }
  // The layers with a KV cache: the attention kinds (a delta-net keeps a recurrent state instead).
  std::uint32_t kv_layers() const;
  // The KV cache those layers need for `capacity` tokens.
  KvGeometry kv_geometry(std::uint32_t capacity) const {
    return KvGeometry{kv_layers(), n_head_kv, head_dim, head_dim, capacity};
  }
  // K and V elements one token adds to the cache, and the floats of one sequence's recurrent state
  // (per delta-net layer its conv window, (Kc - 1) x C, and one Dk x Dv matrix per v head),
  // whatever its length.
  std::uint64_t kv_elements_per_token() const { return 2ull * kv_layers() * n_head_kv * head_dim; }
  std::uint64_t recurrent_state_floats() const;

  // Every missing or inconsistent key is a one-line error naming it; an architecture graft does not
  // know is refused naming the ones it does.
  static Expected<ModelParams> from_gguf(const gguf::File& file);
};

}  // namespace graft
