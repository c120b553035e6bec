#include "model/decoder_block.hpp"

#include <array>
#include <cmath>

namespace graft {

namespace {
// The f32 view t with dimension `dim` `stride` floats apart instead of packed (the dimensions
// above it follow on from it): a part of a stacked projection's output.
TensorView with_stride(TensorView t, int dim, std::int64_t stride) {
  t.nb[dim] = static_cast<std::size_t>(stride) * sizeof(float);
  for (int d = dim + 1; d < kMaxDims; ++d) t.nb[d] = t.nb[d - 1] * static_cast<std::size_t>(t.ne[d - 1]);
  return t;
}
}  // namespace

Status DecoderBlock::matmul(const MatrixWeight& w, const float* x, std::uint32_t n, float* y) const {
  const auto k = w.view.ne[0], m = w.view.ne[1];
  return w.kernels->matmul(*be_, w.view, w.prepared.get(), device_f32(const_cast<float*>(x), k, n), device_f32(y, m, n));
}

Status DecoderBlock::attention(Workspace& ws, const LayerWeights& L, std::uint32_t kv_layer,
                               std::span<const SequenceRows> seqs, const TensorView& positions, std::uint32_t n,
                               const float* in, float* out) const {
  const auto& p = p_;
  Backend& be = *be_;
  const std::int64_t D = p.head_dim, H = p.n_head, HKV = p.n_head_kv;
  // q [D, H, n], k and v [D, HKV, n] = in * wq [E, H*D], wk and wv [E, HKV*D]: three buffers, or
  // the parts of the stacked wqkv's output (one row's q | k | v after another).
  const bool stacked = L.qkv_stacked(), gated = L.kind == LayerKind::gated_attention;
  const std::int64_t stride = (H + 2 * HKV) * D;
  if (stacked) {
    GRAFT_TRY(matmul(L.wqkv, in, n, ws.qkv));
  } else {
    // Gated (qwen35): per head D query values then D gate values; the query goes on through q_norm
    // into ws.q, the gate waits for the attention output.
    GRAFT_TRY(matmul(L.wq, in, n, gated ? ws.q_gate : ws.q));
    GRAFT_TRY(matmul(L.wk, in, n, ws.k));
    GRAFT_TRY(matmul(L.wv, in, n, ws.v));
  }
  auto gated_part = [&](std::int64_t offset) {  // [D, H, n] inside ws.q_gate: rows 2D apart
    TensorView t = device_f32(ws.q_gate + offset, D, H, n);
    t.nb[1] = std::size_t(2 * D) * sizeof(float);
    t.nb[2] = std::size_t(2 * D * H) * sizeof(float);
    t.nb[3] = t.nb[2] * static_cast<std::size_t>(n);
    return t;
  };
  // Rows [r0, r0 + rows) of q, k and v.
  auto qkv_rows = [&](std::uint32_t r0, std::uint32_t rows) {
    if (stacked) {
      float* at = ws.qkv + std::int64_t(r0) * stride;
      return std::array{with_stride(device_f32(at, D, H, rows), 2, stride),
                        with_stride(device_f32(at + H * D, D, HKV, rows), 2, stride),
                        with_stride(device_f32(at + (H + HKV) * D, D, HKV, rows), 2, stride)};
    }
    return std::array{device_f32(ws.q + std::int64_t(r0) * H * D, D, H, rows),
                      device_f32(ws.k + std::int64_t(r0) * HKV * D, D, HKV, rows),
                      device_f32(ws.v + std::int64_t(r0) * HKV * D, D, HKV, rows)};
  };
  const auto [q, k, v] = qkv_rows(0, n);
  // qwen3: q and k per head *= rms_norm with q_norm, k_norm [D] (gated: from the query part).
  if (p.qk_norm) {
    GRAFT_TRY(be.rms_norm(gated ? gated_part(0) : q, L.q_norm.view, p.rms_eps, q));
    GRAFT_TRY(be.rms_norm(k, L.k_norm.view, p.rms_eps, k));
  }
  // RoPE on q and k at each row's position.
  const RopeParams rope{static_cast<std::int32_t>(p.n_rot), p.rope_neox, p.rope_freq_base, p.rope_freq_scale};
  GRAFT_TRY(be.rope(q, positions, rope, q));
  GRAFT_TRY(be.rope(k, positions, rope, k));
  // Each sequence: its k, v into its own KV store after its committed slots; attn [D, H, rows] =
  // attention of its q over that store (causal, or its token tree's ancestor mask).
  std::uint32_t r0 = 0;
  for (const SequenceRows& s : seqs) {
    const auto [qs, ks, vs] = qkv_rows(r0, s.n_tokens);
    GRAFT_TRY(s.kv->write(kv_layer, s.n_past, s.n_tokens, ks, vs));
    AttentionBatch ab;
    ab.n_query = s.n_tokens;
    ab.n_past = s.n_past;
    ab.ancestor = s.mask;
    ab.scale = 1.0f / std::sqrt(static_cast<float>(D));
    GRAFT_TRY(s.kv->attend(kv_layer, qs, ab, device_f32(ws.attn + std::int64_t(r0) * H * D, D, H, s.n_tokens)));
    r0 += s.n_tokens;
  }
  // Gated: attn *= sigmoid(gate), per head.
  if (gated) GRAFT_TRY(be.sigmoid_mul(device_f32(ws.attn, D, H, n), gated_part(D), device_f32(ws.attn, D, H, n)));
  // out = attn * wo [H*D, E].
  return matmul(L.wo, ws.attn, n, out);
}

namespace {
// The shapes of the delta-net: C channels of conv input (q | k | v), Hk q/k heads and Hv v heads of
// Dk = Dv values.
struct DeltaShape {
  std::int64_t C, Dk, Dv, Hk, Hv, Kc;
  explicit DeltaShape(const ModelParams& p)
      : C(p.ssm_channels()), Dk(p.ssm_state), Dv(p.ssm_state), Hk(p.ssm_groups), Hv(p.ssm_heads), Kc(p.ssm_conv_kernel) {}
  // q and k together, [Dk, 2 Hk, rows], inside y [C, rows].
  TensorView qk(float* y, std::uint32_t rows) const { return with_stride(device_f32(y, Dk, 2 * Hk, rows), 2, C); }
  // q, k [Dk, Hk, rows] and v [Dv, Hv, rows] inside y [C, rows] (one row's q | k | v after another).
  std::array<TensorView, 3> qkv(float* y, std::uint32_t rows) const {
    return {with_stride(device_f32(y, Dk, Hk, rows), 2, C), with_stride(device_f32(y + Hk * Dk, Dk, Hk, rows), 2, C),
            with_stride(device_f32(y + 2 * Hk * Dk, Dv, Hv, rows), 2, C)};
  }
};
}  // namespace

Status DecoderBlock::delta_net(Workspace& ws, const LayerWeights& L, std::uint32_t index,
                               std::span<const SequenceRows> seqs, std::uint32_t n, const float* in, float* out) const {
  Backend& be = *be_;
  const DeltaShape d(p_);
  // x [C, n] = in * ssm_in (attn_qkv); z [Hv*Dv, n] = in * ssm_gate (attn_gate); alpha and beta
  // [Hv, n], then the gates: g = softplus(alpha + dt_bias) * ssm_a (the log decay), b = sigmoid(beta).
  GRAFT_TRY(matmul(L.ssm_in, in, n, ws.ssm_x));
  GRAFT_TRY(matmul(L.ssm_gate, in, n, ws.ssm_z));
  GRAFT_TRY(matmul(L.ssm_alpha, in, n, ws.ssm_g));
  GRAFT_TRY(matmul(L.ssm_beta, in, n, ws.ssm_b));
  const TensorView g = device_f32(ws.ssm_g, d.Hv, n), b = device_f32(ws.ssm_b, d.Hv, n);
  GRAFT_TRY(be.delta_net_gates(g, b, L.ssm_dt_bias.view, L.ssm_a.view, g, b));
  // Each sequence: its state takes the path accepted after its last tree pass, if any (here,
  // just before the state is read: one sweep over it per round); y [C, rows] = silu(causal conv
  // of x over its window); a chain moves the window on, a tree keeps its rows' x and g.
  const TensorView w = f32_view(static_cast<float*>(L.ssm_conv.view.data), d.Kc, d.C, 1, L.ssm_conv.view.memory);
  std::uint32_t r0 = 0;
  for (const SequenceRows& s : seqs) {
    RecurrentState& st = *s.state;
    GRAFT_TRY(settle_delta_net(index, st));
    const bool tree = s.parents.data != nullptr;
    const TensorView x = device_f32(ws.ssm_x + std::int64_t(r0) * d.C, d.C, s.n_tokens);
    if (tree) {
      const std::size_t rows = s.n_tokens;
      GRAFT_TRY(be.copy_async(st.pending_x(index), MemoryKind::device, x.data, MemoryKind::device, rows * d.C * sizeof(float)));
      GRAFT_TRY(be.copy_async(st.pending_g(index), MemoryKind::device, ws.ssm_g + std::int64_t(r0) * d.Hv,
                              MemoryKind::device, rows * d.Hv * sizeof(float)));
    }
    GRAFT_TRY(be.causal_conv_silu(x, w, st.conv(index), s.parents, device_f32(ws.ssm_y + std::int64_t(r0) * d.C, d.C, s.n_tokens),
                                  tree ? TensorView{} : st.conv(index)));
    r0 += s.n_tokens;
  }
  // q and k per head /= their L2 norms (one call: the 2 Hk heads of q | k lie side by side).
  GRAFT_TRY(be.l2_norm(d.qk(ws.ssm_y, n), p_.rms_eps, d.qk(ws.ssm_y, n)));
  // Each sequence: o [Dv, Hv, rows] = the gated delta rule over its state; a tree keeps its rows'
  // k and d too.
  r0 = 0;
  for (const SequenceRows& s : seqs) {
    RecurrentState& st = *s.state;
    const bool tree = s.parents.data != nullptr;
    float* y = ws.ssm_y + std::int64_t(r0) * d.C;
    const auto [qs, ks, vs] = d.qkv(y, s.n_tokens);
    if (tree)
      for (std::uint32_t t = 0; t < s.n_tokens; ++t)
        GRAFT_TRY(be.copy_async(st.pending_k(index) + std::int64_t(t) * d.Hk * d.Dk, MemoryKind::device,
                                y + std::int64_t(t) * d.C + d.Hk * d.Dk, MemoryKind::device, d.Hk * d.Dk * sizeof(float)));
    GRAFT_TRY(be.gated_delta_net(qs, ks, vs, device_f32(ws.ssm_g + std::int64_t(r0) * d.Hv, d.Hv, s.n_tokens),
                                 device_f32(ws.ssm_b + std::int64_t(r0) * d.Hv, d.Hv, s.n_tokens), st.delta(index), s.parents,
                                 device_f32(ws.ssm_o + std::int64_t(r0) * d.Hv * d.Dv, d.Dv, d.Hv, s.n_tokens),
                                 tree ? TensorView{} : st.delta(index),
                                 tree ? device_f32(st.pending_d(index), d.Dv, d.Hv, s.n_tokens) : TensorView{}));
    r0 += s.n_tokens;
  }
  // Gated norm per head: o = rms_norm(o) * ssm_norm * silu(z); out = o * ssm_out [Hv*Dv, E].
  const TensorView o = device_f32(ws.ssm_o, d.Dv, d.Hv * n);
  GRAFT_TRY(be.rms_norm(o, L.ssm_norm.view, p_.rms_eps, o));
  GRAFT_TRY(be.silu_mul(device_f32(ws.ssm_z, d.Dv * d.Hv, n), device_f32(ws.ssm_o, d.Dv * d.Hv, n),
                        device_f32(ws.ssm_o, d.Dv * d.Hv, n)));
  return matmul(L.ssm_out, ws.ssm_o, n, out);
}

Status DecoderBlock::settle_delta_net(std::uint32_t index, RecurrentState& st) const {
  if (st.deferred().empty()) return Status::success();
  const TensorView path = st.deferred_rows();  // in backend memory
  const DeltaShape d(p_);
  const auto kept = static_cast<std::int64_t>(st.max_pending());
  // The window takes the path's raw inputs; the state each row's decay and rank-one update.
  GRAFT_TRY(be_->conv_window_advance(device_f32(st.pending_x(index), d.C, kept), path, st.conv(index)));
  return be_->delta_net_apply(device_f32(st.pending_k(index), d.Dk, d.Hk, kept), device_f32(st.pending_d(index), d.Dv, d.Hv, kept),
                              device_f32(st.pending_g(index), d.Hv, kept), path, st.delta(index));
}

Status DecoderBlock::ffn(Workspace& ws, const LayerWeights& L, std::uint32_t n, const float* in, float* out) const {
  const std::int64_t F = p_.n_ff;
  // gate [F, n] = silu(in * w_gate [E, F]) * (in * w_up [E, F]) (SwiGLU), stacked or separate.
  if (L.gate_up_stacked()) {
    GRAFT_TRY(matmul(L.w_gate_up, in, n, ws.gate_up));
    GRAFT_TRY(be_->silu_mul(with_stride(device_f32(ws.gate_up, F, n), 1, 2 * F),
                            with_stride(device_f32(ws.gate_up + F, F, n), 1, 2 * F), device_f32(ws.gate, F, n)));
  } else {
    GRAFT_TRY(matmul(L.w_gate, in, n, ws.gate));
    GRAFT_TRY(matmul(L.w_up, in, n, ws.up));
    GRAFT_TRY(be_->silu_mul(device_f32(ws.gate, F, n), device_f32(ws.up, F, n), device_f32(ws.gate, F, n)));
  }
  // out = gate * w_down [F, E].
  return matmul(L.w_down, ws.gate, n, out);
}

Status DecoderBlock::layer(Workspace& ws, const LayerWeights& L, std::uint32_t slot, std::span<const SequenceRows> seqs,
                           const TensorView& positions, std::uint32_t n, float* x) const {
  const std::int64_t E = p_.n_embd;
  Backend& be = *be_;
  // h = rms_norm(x) * attn_norm [E]; x += mixer(h): attention, or the delta-net.
  GRAFT_TRY(be.rms_norm(device_f32(x, E, n), L.attn_norm.view, p_.rms_eps, device_f32(ws.h, E, n)));
  if (L.kind == LayerKind::delta_net)
    GRAFT_TRY(delta_net(ws, L, slot, seqs, n, ws.h, ws.h));
  else
    GRAFT_TRY(attention(ws, L, slot, seqs, positions, n, ws.h, ws.h));
  GRAFT_TRY(be.add(device_f32(x, E, n), device_f32(ws.h, E, n), device_f32(x, E, n)));
  // h = rms_norm(x) * ffn_norm [E] (qwen35: post_attention_norm); x += ffn(h).
  GRAFT_TRY(be.rms_norm(device_f32(x, E, n), L.ffn_norm.view, p_.rms_eps, device_f32(ws.h, E, n)));
  GRAFT_TRY(ffn(ws, L, n, ws.h, ws.h));
  return be.add(device_f32(x, E, n), device_f32(ws.h, E, n), device_f32(x, E, n));
}

}  // namespace graft
