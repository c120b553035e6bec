#include "model/transformer.hpp"

#include "model/stacked_matrix.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <span>
#include <tuple>
#include <utility>

namespace graft {

namespace {
// Output rows computed per lm_head matmul: bounds the logits scratch (n_vocab is up to ~256K).
constexpr std::uint32_t kLogitRows = 16;

// The f32 view t with dimension `dim` `stride` floats apart instead of packed (the dimensions
// above it follow on from it): a part of a stacked projection's output.
TensorView with_stride(TensorView t, int dim, std::int64_t stride) {
  t.nb[dim] = static_cast<std::size_t>(stride) * sizeof(float);
  for (int d = dim + 1; d < kMaxDims; ++d) t.nb[d] = t.nb[d - 1] * static_cast<std::size_t>(t.ne[d - 1]);
  return t;
}
}  // namespace

Expected<std::unique_ptr<Transformer>> Transformer::load(std::shared_ptr<const gguf::File> file, Backend& backend,
                                                         std::string_view backend_name, const HostServices& host,
                                                         std::uint32_t max_batch, const TransformerOptions& options) {
  if (max_batch == 0) return Status(Errc::invalid_argument, "transformer: max_batch must be at least 1");
  auto params = ModelParams::from_gguf(*file);
  if (!params) return std::move(params).status();
  auto weights = ModelWeights::bind(*file, *params, host, backend_name);
  if (!weights) return std::move(weights).status();

  std::unique_ptr<Transformer> t(new Transformer());
  t->file_ = std::move(file);
  t->backend_ = &backend;
  t->params_ = *params;
  t->weights_ = std::move(*weights);
  t->max_batch_ = max_batch;
  // A matrix the forward pass no longer reads from the file: its pages go back to the system and
  // the load-time prefault skips it.
  auto release_file_pages = [&t](const void* view_data, std::uint64_t bytes) {
    const auto* data = static_cast<const std::uint8_t*>(view_data);
    t->weights_.released_bytes += t->file_->release(data, bytes);
    t->weights_.released.push_back(data);
  };
  if (options.fuse_projections) {
    for (std::uint32_t il = 0; il < t->params_.n_main_layers(); ++il) {
      LayerWeights& L = t->weights_.layers[il];
      const MatrixWeight* qkv[] = {&L.wq, &L.wk, &L.wv};
      const MatrixWeight* gate_up[] = {&L.w_gate, &L.w_up};
      for (auto [parts, out, name] : {std::tuple{std::span<const MatrixWeight* const>(qkv), &L.wqkv, "attn_q+k+v"},
                                      std::tuple{std::span<const MatrixWeight* const>(gate_up), &L.w_gate_up, "ffn_gate+up"}}) {
        auto stacked = stack_rows(parts, fmt::format("blk.{}.{}", il, name));
        if (!stacked) return std::move(stacked).status();
        if (!stacked->kernels) continue;  // types differ: the parts stay separate
        *out = std::move(*stacked);
        for (const MatrixWeight* part : parts) release_file_pages(part->view.data, part->bytes);  // read stacked only
      }
    }
  }
  // Kernels that read their own layout get it now, once (the file's bytes stay mapped for the
  // rest: norms, token rows, and matrices whose kernels read them as they are). The file's pages of
  // a prepared matrix are then released, so the weights are not held twice (a tied output keeps
  // them: its rows are the token embeddings).
  for (MatrixWeight* m : t->weights_.matmul_weights()) {
    std::unique_ptr<PreparedWeights> prepared;
    if (Status st = m->kernels->prepare(backend, m->view, prepared); !st.ok())
      return Status(st.code(), fmt::format("{}: {}", m->name, st.message()));
    if (prepared) {
      t->weights_.prepared_bytes += prepared->bytes();
      if (m->storage)
        m->storage->release();  // a stacked copy, read no more
      else if (m->view.data != t->weights_.token_embd.view.data)
        release_file_pages(m->view.data, m->bytes);
    } else if (m->storage) {
      t->weights_.prepared_bytes += m->bytes;
    }
    m->prepared = std::move(prepared);
  }

  const auto& p = t->params_;
  const std::uint64_t B = max_batch, q_dim = std::uint64_t(p.n_head) * p.head_dim,
                      kv_dim = std::uint64_t(p.n_head_kv) * p.head_dim;
  bool any_qkv_stacked = false, any_qkv_split = false, any_gate_up_stacked = false, any_gate_up_split = false;
  for (const LayerWeights& L : t->weights_.layers) {
    (L.qkv_stacked() ? any_qkv_stacked : any_qkv_split) = true;
    (L.gate_up_stacked() ? any_gate_up_stacked : any_gate_up_split) = true;
  }
  // The scratch buffers in order, each listed once with its size; unused ones stay null.
  const std::pair<float**, std::uint64_t> parts[] = {
      {&t->x_, B * p.n_embd},
      {&t->h_, B * p.n_embd},
      {&t->attn_, B * q_dim},
      {&t->q_, any_qkv_split ? B * q_dim : 0},
      {&t->k_, any_qkv_split ? B * kv_dim : 0},
      {&t->v_, any_qkv_split ? B * kv_dim : 0},
      {&t->qkv_, any_qkv_stacked ? B * (q_dim + 2 * kv_dim) : 0},
      {&t->gate_, B * p.n_ff},
      {&t->up_, any_gate_up_split ? B * p.n_ff : 0},
      {&t->gate_up_, any_gate_up_stacked ? B * 2 * p.n_ff : 0},
      {&t->logits_, std::uint64_t(kLogitRows) * p.n_vocab}};
  std::uint64_t floats = 0;
  for (const auto& [at, n] : parts) floats += n;
  auto buf = backend.allocate(floats * sizeof(float), MemoryKind::device);
  if (!buf) return std::move(buf).status();
  t->scratch_ = std::move(*buf);
  t->scratch_bytes_ = floats * sizeof(float);
  float* s = static_cast<float*>(t->scratch_->data());
  for (const auto& [at, n] : parts) {
    if (n > 0) *at = s;
    s += n;
  }
  return t;
}

KvGeometry Transformer::kv_geometry(std::uint32_t capacity) const {
  return KvGeometry{params_.n_main_layers(), params_.n_head_kv, params_.head_dim, params_.head_dim, capacity};
}

Status Transformer::matmul(const MatrixWeight& w, float* x, std::uint32_t n, float* y) {
  const auto k = w.view.ne[0], m = w.view.ne[1];
  return w.kernels->matmul(*backend_, w.view, w.prepared.get(), f32_view(x, k, n), f32_view(y, m, n));
}

Status Transformer::layer(std::uint32_t il, std::uint32_t n, const std::int32_t* positions, const ForwardBatch& batch,
                          KvStore& kv) {
  const auto& p = params_;
  const auto& L = weights_.layers[il];
  Backend& be = *backend_;
  const std::int64_t E = p.n_embd, D = p.head_dim, H = p.n_head, HKV = p.n_head_kv;

  // Attention block. q, k and v are [D, heads, n] views: dense buffers of their own, or their
  // parts of the stacked projection's output, one token's q | k | v after another.
  GRAFT_TRY(be.rms_norm(f32_view(x_, E, n), L.attn_norm.view, p.rms_eps, f32_view(h_, E, n)));
  TensorView q, k, v;
  if (L.qkv_stacked()) {
    GRAFT_TRY(matmul(L.wqkv, h_, n, qkv_));
    const std::int64_t stride = (H + 2 * HKV) * D;
    q = with_stride(f32_view(qkv_, D, H, n), 2, stride);
    k = with_stride(f32_view(qkv_ + H * D, D, HKV, n), 2, stride);
    v = with_stride(f32_view(qkv_ + (H + HKV) * D, D, HKV, n), 2, stride);
  } else {
    GRAFT_TRY(matmul(L.wq, h_, n, q_));
    GRAFT_TRY(matmul(L.wk, h_, n, k_));
    GRAFT_TRY(matmul(L.wv, h_, n, v_));
    q = f32_view(q_, D, H, n);
    k = f32_view(k_, D, HKV, n);
    v = f32_view(v_, D, HKV, n);
  }
  if (p.qk_norm) {
    GRAFT_TRY(be.rms_norm(q, L.q_norm.view, p.rms_eps, q));
    GRAFT_TRY(be.rms_norm(k, L.k_norm.view, p.rms_eps, k));
  }
  const RopeParams rope{static_cast<std::int32_t>(p.n_rot), p.rope_neox, p.rope_freq_base, p.rope_freq_scale};
  GRAFT_TRY(be.rope(q, positions, rope, q));
  GRAFT_TRY(be.rope(k, positions, rope, k));
  GRAFT_TRY(kv.write(il, batch.n_past, n, k, v));
  AttentionBatch ab;
  ab.n_query = n;
  ab.n_past = batch.n_past;
  ab.ancestor = batch.ancestor;
  ab.scale = 1.0f / std::sqrt(static_cast<float>(D));
  GRAFT_TRY(kv.attend(il, q, ab, f32_view(attn_, D, H, n)));
  GRAFT_TRY(matmul(L.wo, attn_, n, h_));
  GRAFT_TRY(be.add(f32_view(x_, E, n), f32_view(h_, E, n), f32_view(x_, E, n)));

  // Feed-forward block (SwiGLU).
  GRAFT_TRY(be.rms_norm(f32_view(x_, E, n), L.ffn_norm.view, p.rms_eps, f32_view(h_, E, n)));
  const std::int64_t F = p.n_ff;
  if (L.gate_up_stacked()) {
    GRAFT_TRY(matmul(L.w_gate_up, h_, n, gate_up_));
    GRAFT_TRY(be.silu_mul(with_stride(f32_view(gate_up_, F, n), 1, 2 * F),
                          with_stride(f32_view(gate_up_ + F, F, n), 1, 2 * F), f32_view(gate_, F, n)));
  } else {
    GRAFT_TRY(matmul(L.w_gate, h_, n, gate_));
    GRAFT_TRY(matmul(L.w_up, h_, n, up_));
    GRAFT_TRY(be.silu_mul(f32_view(gate_, F, n), f32_view(up_, F, n), f32_view(gate_, F, n)));
  }
  GRAFT_TRY(matmul(L.w_down, gate_, n, h_));
  return be.add(f32_view(x_, E, n), f32_view(h_, E, n), f32_view(x_, E, n));
}

Status Transformer::forward(const ForwardBatch& batch, KvStore& kv, std::vector<float>& logits) {
  const auto& p = params_;
  const auto n = static_cast<std::uint32_t>(batch.tokens.size());
  if (n == 0) return Status(Errc::invalid_argument, "forward: empty batch");
  if (n > max_batch_)
    return Status(Errc::invalid_argument, fmt::format("forward: {} tokens exceed the batch size {}", n, max_batch_));
  if (!batch.positions.empty() && batch.positions.size() != n)
    return Status(Errc::invalid_argument, "forward: positions and tokens differ in length");
  for (TokenId t : batch.tokens)
    if (t < 0 || static_cast<std::uint32_t>(t) >= p.n_vocab)
      return Status(Errc::out_of_range, fmt::format("forward: token id {} is outside the vocabulary (0..{})", t, p.n_vocab - 1));
  const std::int32_t* positions = batch.positions.data();
  if (batch.positions.empty()) {
    positions_.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) positions_[i] = static_cast<std::int32_t>(batch.n_past + i);
    positions = positions_.data();
  }

  const std::int64_t E = p.n_embd;
  GRAFT_TRY(weights_.token_embd.kernels->get_rows(*backend_, weights_.token_embd.view, batch.tokens.data(), n,
                                                  f32_view(x_, E, n)));
  for (std::uint32_t il = 0; il < p.n_main_layers(); ++il) GRAFT_TRY(layer(il, n, positions, batch, kv));

  // Final norm and LM head, only for the rows the caller wants.
  const std::uint32_t first = batch.all_logits ? 0 : n - 1;
  const std::uint32_t rows = n - first;
  GRAFT_TRY(backend_->rms_norm(f32_view(x_ + std::int64_t(first) * E, E, rows), weights_.output_norm.view, p.rms_eps,
                               f32_view(h_, E, rows)));
  logits.resize(std::size_t(rows) * p.n_vocab);
  for (std::uint32_t r = 0; r < rows; r += kLogitRows) {
    const std::uint32_t chunk = std::min(kLogitRows, rows - r);
    GRAFT_TRY(matmul(weights_.output, h_ + std::int64_t(r) * E, chunk, logits_));
    GRAFT_TRY(backend_->synchronize());
    GRAFT_TRY(backend_->copy(logits.data() + std::size_t(r) * p.n_vocab, MemoryKind::host, logits_,
                             MemoryKind::device, std::size_t(chunk) * p.n_vocab * sizeof(float)));
  }
  return Status::success();
}

}  // namespace graft
