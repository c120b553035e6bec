// qwen3: llama's layer with per-head RMSNorm on q and k and NEOX RoPE (pairs half a head apart).
#include "model/architecture.hpp"
#include "model/model_params.hpp"
#include "model/model_weights.hpp"

namespace graft {

const Architecture& qwen3_architecture() {
  static const Architecture a{
      "qwen3",
      [](ModelParams& p) {
        p.rope_neox = true;
        p.qk_norm = true;
        p.rope_freq_base = 1e6f;
        p.rms_eps = 1e-6f;
      },
      nullptr,
      bind_attention_layer,
  };
  return a;
}

}  // namespace graft
