// The activations of one forward pass, sized for up to max_batch rows: what a forward call
// writes and reads between its steps. A Workspace belongs to whoever runs forward passes (a
// Session, a batch over several sessions, a drafter's block runner); the Model it serves is
// immutable and shared.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graft/backend.hpp"
#include "graft/status.hpp"
#include "model/forward_batch.hpp"
#include "model/model_params.hpp"
#include "model/pass_inputs.hpp"

namespace graft {

// Which optional buffers the layers need: stacked q/k/v and gate/up, the separate ones, or both
// (a model whose layers differ in type), and lm_head rows for logits.
struct WorkspaceNeeds {
  bool qkv_stacked = false, qkv_split = true, gate_up_stacked = false, gate_up_split = true;
  bool gated_q = false;  // gated attention: the query projection's output is query | gate per head
  bool delta_net = false;  // delta-net layers (qwen35): their projections, conv output and gates
  std::uint32_t logit_rows = 0;  // rows of n_vocab logits per lm_head chunk (0: no head)
};

class Workspace {
 public:
  // Backend memory for max_batch rows of a model of these dimensions.
  static Expected<std::unique_ptr<Workspace>> create(Backend& backend, const ModelParams& p, const WorkspaceNeeds& needs,
                                                     std::uint32_t max_batch);
  // The bytes create() allocates (graphs: on a backend with graphs_supported(), which adds pinned
  // outputs).
  static std::uint64_t bytes_for(const ModelParams& p, const WorkspaceNeeds& needs, std::uint32_t max_batch,
                                 bool graphs = false);

  std::uint32_t max_batch() const { return max_batch_; }
  std::uint64_t bytes() const { return bytes_; }

  // Backend memory, rows token-major. q, k, v and up serve layers whose projections are separate;
  // qkv ([row][q | k | v]) and gate_up ([row][gate | up]) the stacked ones. gate is SwiGLU's output
  // either way. logits holds one lm_head chunk.
  float *x = nullptr, *h = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *attn = nullptr, *gate = nullptr,
        *up = nullptr, *qkv = nullptr, *gate_up = nullptr, *logits = nullptr;
  // The chunk's best entries (ForwardBatch::argmax_rows: k = 1, candidate_rows: k = candidates):
  // ids i32 [k, logit rows] and their logits f32 [k, logit rows], packed, k <= kMaxCandidates.
  std::int32_t* top_ids = nullptr;
  float* top_logits = nullptr;
  float* q_gate = nullptr;  // gated attention's query projection output, [row][head][query | gate]
  // Delta-net layers: the raw conv input x and its output y [C, rows] (q | k | v per row), the
  // output gate z and the delta rule's output o [Hv * Dv, rows], the gates g and b [Hv, rows].
  float *ssm_x = nullptr, *ssm_y = nullptr, *ssm_z = nullptr, *ssm_o = nullptr, *ssm_g = nullptr, *ssm_b = nullptr;
  std::vector<std::int32_t> positions;  // host: the batch's RoPE positions when the caller gave none
  std::vector<std::int32_t> parents;    // host: each sequence's token-tree parents (delta-net layers)
  // The pass's index arrays in backend memory (ids, positions, parents, masks).
  std::unique_ptr<PassInputs> inputs;
  // The largest token tree (rows of one sequence with a mask) a pass over this workspace takes.
  static constexpr std::uint32_t kMaxTreeRows = 512;

  // On a backend with graphs: a pass is captured and launched as one graph, its logits and taps
  // copied to this pinned buffer (a graph may copy only to device or pinned memory), then to the
  // caller after the pass's synchronize. Null elsewhere (the CPU). Sized for kGraphLogitRows rows
  // of logits, kGraphTapRows rows of taps, kGraphLogitRows greedy ids and kGraphLogitRows rows of
  // kMaxCandidates candidates (ids, then logits), in this order; a pass asking for more, or of
  // more than
  // kGraphMaxRows rows (a long prompt's pieces: few passes, each long enough to hide its launches),
  // runs without a graph.
  static constexpr std::uint32_t kGraphLogitRows = 16, kGraphTapRows = 64, kGraphMaxRows = 64;
  std::unique_ptr<Buffer> graph_outputs;
  // One graph per shape of pass (rows per sequence, trees, outputs): a decode step, each verify
  // size. Recaptured every pass and updated in place (cheap where the shape is the same).
  std::map<std::string, std::unique_ptr<Graph>> graphs;
  std::uint64_t graph_launches = 0;

 private:
  Workspace() = default;
  // Points the buffers into `base` (null: only counts); returns the floats they take.
  std::uint64_t lay_out(const ModelParams& p, const WorkspaceNeeds& needs, std::uint32_t max_batch, float* base);

  std::uint32_t max_batch_ = 0;
  std::uint64_t bytes_ = 0;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace graft
