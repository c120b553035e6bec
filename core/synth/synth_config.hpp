// What `graft synth` builds: architecture, shapes, weight types and seed, the named presets,
// and the tensor list those imply (llama.cpp names and shapes, ne[0] = input width).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graft/status.hpp"

namespace graft::synth {

// A qwen35 model's delta-net and attention-pattern shapes (shared/reference/qwen35.md).
struct HybridShape {
  std::int64_t conv_kernel = 0;  // 0: not a hybrid
  std::int64_t state = 0;        // Dk = Dv
  std::int64_t groups = 0;       // Hk
  std::int64_t heads = 0;        // Hv
  std::int64_t interval = 4;     // full attention every this many layers
  std::int64_t n_rot = 0;        // rotated dims per attention head
};

struct SynthConfig {
  std::string arch;         // "llama" | "qwen3" | "qwen35"
  std::string preset;       // preset the shapes started from ("" = tiny defaults, custom)
  std::int64_t n_embd = 64;
  std::int64_t n_layer = 2;
  std::int64_t n_head = 4;
  std::int64_t n_head_kv = 2;
  std::int64_t n_ff = 128;
  std::int64_t n_vocab = 512;
  std::int64_t head_dim = 0;  // 0: n_embd / n_head
  std::int64_t ctx = 2048;
  bool tied = false;          // no output.weight: the output projection reuses token_embd
  std::string type = "f32";   // matrices
  std::string embd_type;      // token_embd; empty: same as `type`
  std::string output_type;    // output.weight (token_embd when tied); empty: same as `type`
  std::string fallback_type;  // for rows that are not whole blocks; empty: an error
  std::vector<std::string> tensor_types;  // REGEX=TYPE overrides, first match wins
  std::uint64_t seed = 0;
  HybridShape hybrid;         // qwen35 only (from its presets)
  std::int64_t nextn = 0;     // MTP (nextn) blocks after the n_layer main ones

  std::int64_t head_dim_or_default() const { return head_dim > 0 ? head_dim : (n_head > 0 ? n_embd / n_head : 0); }
  float rms_eps() const { return arch == "llama" ? 1e-5f : 1e-6f; }
  float rope_freq_base() const { return arch == "qwen3" ? 1e6f : arch == "qwen35" ? 1e7f : 1e4f; }
  // qwen35: whether layer l is a delta-net (else gated full attention), llama.cpp's rule.
  // (MTP blocks, l >= n_layer, are full attention.)
  bool delta_net_layer(std::int64_t l) const {
    return arch == "qwen35" && l < n_layer && (l + 1) % hybrid.interval != 0;
  }
};

struct Preset {
  std::string_view name;
  std::string_view arch;  // empty: any architecture
  std::int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, head_dim, ctx;
  bool tied;
  std::string_view help;
  HybridShape hybrid = {};
};

const std::vector<Preset>& presets();
const Preset* find_preset(std::string_view name);
// Copies a preset's shapes (and its architecture when it has one) into cfg.
void apply_preset(const Preset& p, SynthConfig& cfg);

// Checks the architecture and the shapes; one line naming the flag to fix.
Status validate(const SynthConfig& cfg);

// How a tensor's values are drawn (synth_values.hpp): matrices by fan-in, norms near 1, a
// delta-net's decay (ssm_a = -exp(A_log)) negative, its dt bias small.
enum class TensorRole { embedding, matrix, norm, decay, bias };

struct TensorPlan {
  std::string name;                // "blk.3.attn_q.weight"
  std::vector<std::uint64_t> ne;   // ne[0] first: the input width of a matrix
  TensorRole role;
};

// Every tensor of the model in file order: token_embd, output_norm, output (untied only), then
// each block, then the MTP blocks (an attention block of the architecture's kind and the nextn
// tensors: eh_proj, enorm, hnorm, shared_head_norm).
std::vector<TensorPlan> plan_tensors(const SynthConfig& cfg);
std::uint64_t parameter_count(const SynthConfig& cfg);

}  // namespace graft::synth
