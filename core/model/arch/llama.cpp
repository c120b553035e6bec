// llama: RMSNorm, softmax attention with RoPE on adjacent pairs, SwiGLU; every layer the same.
#include "model/architecture.hpp"
#include "model/model_params.hpp"
#include "model/model_weights.hpp"

namespace graft {

const Architecture& llama_architecture() {
  static const Architecture a{
      "llama",
      [](ModelParams& p) {
        p.rope_neox = false;
        p.qk_norm = false;
        p.rope_freq_base = 10000.0f;
        p.rms_eps = 1e-5f;
      },
      nullptr,
      bind_attention_layer,
  };
  return a;
}

}  // namespace graft
