#include "model/workspace.hpp"

#include <algorithm>

namespace graft {

std::uint64_t Workspace::lay_out(const ModelParams& p, const WorkspaceNeeds& needs, std::uint32_t max_batch,
                                 float* base) {
  const std::uint64_t B = max_batch, q_dim = std::uint64_t(p.n_head) * p.head_dim,
                      kv_dim = std::uint64_t(p.n_head_kv) * p.head_dim;
  std::uint64_t used = 0;
  auto take = [&](float*& field, std::uint64_t floats) {
    if (floats > 0 && base) field = base + used;
    used += floats;
  };
  take(x, B * p.n_embd);
  take(h, B * p.n_embd);
  take(attn, B * q_dim);
  take(q, needs.qkv_split ? B * q_dim : 0);
  take(k, needs.qkv_split ? B * kv_dim : 0);
  take(v, needs.qkv_split ? B * kv_dim : 0);
  take(qkv, needs.qkv_stacked ? B * (q_dim + 2 * kv_dim) : 0);
  take(q_gate, needs.gated_q ? B * 2 * q_dim : 0);
  const std::uint64_t C = p.ssm_channels(), Hv = p.ssm_heads, HvDv = Hv * p.ssm_state;
  take(ssm_x, needs.delta_net ? B * C : 0);
  take(ssm_y, needs.delta_net ? B * C : 0);
  take(ssm_z, needs.delta_net ? B * HvDv : 0);
  take(ssm_o, needs.delta_net ? B * HvDv : 0);
  take(ssm_g, needs.delta_net ? B * Hv : 0);
  take(ssm_b, needs.delta_net ? B * Hv : 0);
  take(gate, B * p.n_ff);
  take(up, needs.gate_up_split ? B * p.n_ff : 0);
  take(gate_up, needs.gate_up_stacked ? B * 2 * p.n_ff : 0);
  take(logits, std::uint64_t(needs.logit_rows) * p.n_vocab);
  float* ids = nullptr;  // i32, as many as floats
  take(ids, std::uint64_t(needs.logit_rows) * kMaxCandidates);
  top_ids = reinterpret_cast<std::int32_t*>(ids);
  take(top_logits, std::uint64_t(needs.logit_rows) * kMaxCandidates);
  return used;
}

namespace {
// A graph-capable backend's pinned outputs: logits, taps, greedy ids, candidates' ids and logits
// (i32 ids: as many as floats).
std::uint64_t graph_output_floats(const ModelParams& p) {
  return std::uint64_t(Workspace::kGraphLogitRows) * p.n_vocab + std::uint64_t(Workspace::kGraphTapRows) * p.n_embd +
         Workspace::kGraphLogitRows * (1 + 2 * std::uint64_t(kMaxCandidates));
}
}  // namespace

std::uint64_t Workspace::bytes_for(const ModelParams& p, const WorkspaceNeeds& needs, std::uint32_t max_batch,
                                   bool graphs) {
  Workspace counted;
  // The pass's index arrays twice: their pinned staging and their copy in backend memory.
  return counted.lay_out(p, needs, max_batch, nullptr) * sizeof(float) +
         2 * PassInputs::bytes_for(max_batch, std::min(max_batch, kMaxTreeRows)) +
         (graphs ? graph_output_floats(p) * sizeof(float) : 0);
}

Expected<std::unique_ptr<Workspace>> Workspace::create(Backend& backend, const ModelParams& p,
                                                       const WorkspaceNeeds& needs, std::uint32_t max_batch) {
  if (max_batch == 0) return Status(Errc::invalid_argument, "workspace: max_batch must be at least 1");
  std::unique_ptr<Workspace> ws(new Workspace());
  const std::uint64_t floats = ws->lay_out(p, needs, max_batch, nullptr);
  auto buf = backend.allocate(floats * sizeof(float), MemoryKind::device);
  if (!buf) return std::move(buf).status();
  ws->buffer_ = std::move(*buf);
  ws->bytes_ = floats * sizeof(float);
  ws->max_batch_ = max_batch;
  ws->lay_out(p, needs, max_batch, static_cast<float*>(ws->buffer_->data()));
  auto inputs = PassInputs::create(backend, PassInputs::bytes_for(max_batch, std::min(max_batch, kMaxTreeRows)));
  if (!inputs) return std::move(inputs).status();
  ws->inputs = std::move(*inputs);
  ws->bytes_ += 2 * ws->inputs->capacity();  // staging and backend copy
  if (backend.graphs_supported()) {
    const std::uint64_t out_floats = graph_output_floats(p);
    auto outputs = backend.allocate(out_floats * sizeof(float), MemoryKind::pinned_host);
    if (!outputs) return std::move(outputs).status();
    ws->graph_outputs = std::move(*outputs);
    ws->bytes_ += out_floats * sizeof(float);
  }
  return ws;
}

}  // namespace graft
