#include "dflash_pass.hpp"

#include <algorithm>
#include <array>
#include <numeric>

namespace graft::dflash2 {

namespace {
constexpr std::uint32_t kChunk = 64;  // context tokens per projection call (a prompt goes in pieces)
}

namespace {

// The backend buffer's parts in floats, in the order create() lays them out (index arrays and the
// mask in float units too).
std::array<std::uint64_t, 16> part_sizes(const DFlashFile& f, std::uint64_t sel_rows) {
  const BlockShape& s = f.shape;
  const std::uint64_t E = s.n_embd, R = kChunk, B = f.block_size, V = f.n_vocab;
  const std::uint64_t KV = std::uint64_t(s.n_head_kv) * s.head_dim, W = f.has_conv ? f.conv.dyn_width() : 0;
  const std::uint64_t rank = f.selector_rank;
  const std::uint64_t n_ids = std::max<std::uint64_t>({R, B, sel_rows}), n_pos = std::max(R, B), mask = (B * B + 3) / 4;
  return {f.feature_width * R, E * R, KV * R, KV * R, E * B, E * B, E * B, E * B, E * B,
          W * B, V * B, rank * B, rank * sel_rows, n_ids, n_pos, mask};
}

std::uint32_t selector_rows_of(const DFlashFile& f) {
  return static_cast<std::uint32_t>(f.block_size * std::max<std::uint32_t>(1, f.selector_top_k));
}

}  // namespace

Expected<DrafterMemory> DFlashPass::memory(const DrafterHost&, const DFlashFile& f) {
  auto runner = f.file->runner(f.shape, f.block_size);  // counted by the planning host
  if (!runner) return std::move(runner).status();
  const auto sizes = part_sizes(f, selector_rows_of(f));
  DrafterMemory m;
  m.kv = KvGeometry{f.n_layers, f.shape.n_head_kv, f.shape.head_dim, f.shape.head_dim, 0};
  m.kv_extra = f.block_size;
  m.buffer_bytes = std::accumulate(sizes.begin(), sizes.end(), std::uint64_t(0)) * sizeof(float);
  m.runner_blocks.emplace_back(f.n_layers);
  std::iota(m.runner_blocks[0].begin(), m.runner_blocks[0].end(), 0u);
  return m;
}

Expected<std::unique_ptr<DFlashPass>> DFlashPass::create(const DrafterHost& host, std::shared_ptr<const DFlashFile> file) {
  Backend& be = host.target().backend();
  std::unique_ptr<DFlashPass> d(new DFlashPass());
  d->f_ = std::move(file);
  d->be_ = &be;
  const DFlashFile& f = *d->f_;
  const BlockShape& s = f.shape;
  auto runner = f.file->runner(s, f.block_size);
  if (!runner) return std::move(runner).status();
  d->runner_ = std::move(*runner);
  auto kv = host.new_kv_store(KvGeometry{f.n_layers, s.n_head_kv, s.head_dim, s.head_dim,
                                         host.context_capacity() + f.block_size});
  if (!kv) return std::move(kv).status();
  d->kv_ = std::move(*kv);

  const std::uint64_t E = s.n_embd, B = f.block_size;
  const std::uint64_t W = f.has_conv ? f.conv.dyn_width() : 0;
  d->sel_rows_ = selector_rows_of(f);
  // Index arrays (ids, positions: i32) and the block's all-ones mask (i8) in backend memory too.
  float *ids = nullptr, *pos = nullptr, *ones = nullptr;
  const auto sizes = part_sizes(f, d->sel_rows_);
  float** parts[] = {&d->feat_, &d->c_, &d->k_, &d->v_, &d->x_, &d->h_, &d->t_, &d->a_, &d->out_,
                     &d->dyn_, &d->logits_dev_, &d->gate_dev_, &d->sel_dev_, &ids, &pos, &ones};
  auto buf = be.allocate(std::accumulate(std::begin(sizes), std::end(sizes), std::uint64_t(0)) * sizeof(float),
                         MemoryKind::device);
  if (!buf) return std::move(buf).status();
  d->buf_ = std::move(*buf);
  float* at = static_cast<float*>(d->buf_->data());
  for (std::size_t i = 0; i < std::size(sizes); ++i) *parts[i] = at, at += sizes[i];
  d->ids_dev_ = reinterpret_cast<std::int32_t*>(ids);
  d->pos_dev_ = reinterpret_cast<std::int32_t*>(pos);
  d->ones_dev_ = reinterpret_cast<std::uint8_t*>(ones);
  const std::vector<std::uint8_t> all_ones(std::size_t(B) * B, 1);
  GRAFT_TRY(be.copy(d->ones_dev_, MemoryKind::device, all_ones.data(), MemoryKind::host, all_ones.size()));
  // The convolution mixes a handful of values per channel on the host. Where the host cannot read
  // the backend's memory, its bases are copied here once and its rows travel each call.
  if (f.has_conv && !be.host_accessible(MemoryKind::device)) {
    d->conv_on_host_copies_ = true;
    for (const DFlashLayer& L : f.layers)
      for (const Weight* w : {L.attn_conv_base.get(), L.ffn_conv_base.get()}) {
        const TensorView v = w->view();
        std::vector<float> host(static_cast<std::size_t>(v.elements()));
        GRAFT_TRY(be.copy(host.data(), MemoryKind::host, v.data, v.memory, host.size() * sizeof(float)));
        d->base_host_.push_back(std::move(host));
      }
    d->conv_in_.resize(E * B);
    d->conv_out_.resize(E * B);
    d->conv_dyn_.resize(W * B);
  }
  GRAFT_TRY(d->run_block(f.mask_token, f.block_size));
  return d;
}

Status DFlashPass::add_context(std::uint32_t n, const float* features) {
  const DFlashFile& f = *f_;
  const BlockShape& s = f.shape;
  const std::int64_t E = s.n_embd, D = s.head_dim, HKV = s.n_head_kv, KV = HKV * D;
  for (std::uint32_t done = 0; done < n;) {
    const std::uint32_t c = std::min(kChunk, n - done);
    // c = enc.output_norm(fc(features)) [E, c].
    GRAFT_TRY(be_->copy(feat_, MemoryKind::device, features + std::size_t(done) * f.feature_width, MemoryKind::host,
                        std::size_t(c) * f.feature_width * sizeof(float)));
    GRAFT_TRY(f.fc->matmul(device_f32(feat_, f.feature_width, c), device_f32(c_, E, c)));
    GRAFT_TRY(be_->rms_norm(device_f32(c_, E, c), f.enc_norm->view(), s.rms_eps, device_f32(c_, E, c)));
    positions_.resize(c);
    std::iota(positions_.begin(), positions_.end(), static_cast<std::int32_t>(n_ctx_));
    auto pos = upload(pos_dev_, positions_);
    if (!pos) return std::move(pos).status();
    // Per layer: k = rope(k_norm(W_k c)), v = W_v c, at the next slots.
    const auto slot = static_cast<std::uint32_t>(slot_pos_.size());
    for (std::uint32_t l = 0; l < f.n_layers; ++l) {
      const DFlashLayer& L = f.layers[l];
      GRAFT_TRY(L.k->matmul(device_f32(c_, E, c), device_f32(k_, KV, c)));
      if (L.k_norm) GRAFT_TRY(be_->rms_norm(device_f32(k_, D, HKV * c), L.k_norm->view(), s.rms_eps, device_f32(k_, D, HKV * c)));
      GRAFT_TRY(be_->rope(device_f32(k_, D, HKV, c), *pos, s.rope, device_f32(k_, D, HKV, c)));
      GRAFT_TRY(L.v->matmul(device_f32(c_, E, c), device_f32(v_, KV, c)));
      GRAFT_TRY(kv_->write(l, slot, c, device_f32(k_, D, HKV, c), device_f32(v_, D, HKV, c)));
    }
    slot_pos_.insert(slot_pos_.end(), positions_.begin(), positions_.end());
    n_ctx_ += c;
    done += c;
  }
  return Status::success();
}

Expected<TensorView> DFlashPass::upload(std::int32_t* dst, std::span<const std::int32_t> values) {
  // A blocking copy: the drafter still reads its logits back each block (docs/speculative.md).
  GRAFT_TRY(be_->copy(dst, MemoryKind::device, values.data(), MemoryKind::host, values.size() * sizeof(std::int32_t)));
  return i32_view(dst, static_cast<std::int64_t>(values.size()), MemoryKind::device);
}

Status DFlashPass::truncate(std::uint32_t n) {
  n_ctx_ = std::min(n_ctx_, n);
  slot_pos_.erase(std::lower_bound(slot_pos_.begin(), slot_pos_.end(), static_cast<std::int32_t>(n_ctx_)), slot_pos_.end());
  return kv_->truncate(static_cast<std::uint32_t>(slot_pos_.size()));
}

Status DFlashPass::half(std::uint32_t l, bool attention, std::uint32_t rows, const BlockRows& block_rows) {
  const DFlashFile& f = *f_;
  const DFlashLayer& L = f.layers[l];
  const std::int64_t E = f.shape.n_embd;
  auto view = [&](float* p) { return device_f32(p, E, rows); };
  GRAFT_TRY(be_->rms_norm(view(x_), (attention ? L.attn_norm : L.ffn_norm)->view(), f.shape.rms_eps, view(h_)));
  float* in = h_;
  const float* base = nullptr;
  if (f.has_conv) {
    // dyn = conv_proj(normed input), shared by both sides; side 0 on the half's input.
    const Weight& proj = *(attention ? L.attn_conv_proj : L.ffn_conv_proj);
    base = conv_on_host_copies_ ? base_host_[2 * l + (attention ? 0 : 1)].data()
                                : (attention ? L.attn_conv_base : L.ffn_conv_base)->view().as<float>();
    GRAFT_TRY(proj.matmul(view(h_), device_f32(dyn_, f.conv.dyn_width(), rows)));
    GRAFT_TRY(conv(0, rows, h_, base, t_));
    in = t_;
  }
  if (attention) GRAFT_TRY(runner_->attention(l, *kv_, l, block_rows, view(in), view(a_)));
  else GRAFT_TRY(runner_->ffn(l, view(in), view(a_)));
  float* y = a_;
  if (f.has_conv) {
    GRAFT_TRY(conv(1, rows, a_, base, t_));  // side 1 on the half's output
    y = t_;
  }
  return be_->add(view(x_), view(y), view(x_));
}

Status DFlashPass::conv(std::uint32_t side, std::uint32_t rows, const float* in, const float* base, float* out) {
  const ConvShape& c = f_->conv;
  if (!conv_on_host_copies_) {
    GRAFT_TRY(be_->synchronize());
    causal_conv(c, side, rows, in, dyn_, base, out);
    return Status::success();
  }
  const std::size_t n = std::size_t(rows) * c.n_embd, nd = std::size_t(rows) * c.dyn_width();
  GRAFT_TRY(be_->copy(conv_in_.data(), MemoryKind::host, in, MemoryKind::device, n * sizeof(float)));
  GRAFT_TRY(be_->copy(conv_dyn_.data(), MemoryKind::host, dyn_, MemoryKind::device, nd * sizeof(float)));
  causal_conv(c, side, rows, conv_in_.data(), conv_dyn_.data(), base, conv_out_.data());
  return be_->copy(out, MemoryKind::device, conv_out_.data(), MemoryKind::host, n * sizeof(float));
}

Status DFlashPass::run_block(std::int32_t anchor, std::uint32_t rows) {
  const DFlashFile& f = *f_;
  if (rows < 2 || rows > f.block_size)
    return Status(Errc::invalid_argument, "dflash2: a block of " + std::to_string(rows) + " rows (1 + slots), expected 2.." +
                                              std::to_string(f.block_size));
  const std::int64_t E = f.shape.n_embd, V = f.n_vocab, m = rows - 1;
  std::vector<std::int32_t> ids(rows, f.mask_token);
  ids[0] = anchor;
  positions_.resize(rows);
  std::iota(positions_.begin(), positions_.end(), static_cast<std::int32_t>(n_ctx_));
  BlockRows block_rows;
  block_rows.n_tokens = rows;
  block_rows.n_past = static_cast<std::uint32_t>(slot_pos_.size());
  auto pos = upload(pos_dev_, positions_);
  if (!pos) return std::move(pos).status();
  block_rows.positions = *pos;
  // Every block row sees every other (the ones are read as rows x rows).
  block_rows.ancestor = i8_view(ones_dev_, rows, rows, MemoryKind::device);
  auto body = [&]() -> Status {
    auto id_view = upload(ids_dev_, ids);
    if (!id_view) return std::move(id_view).status();
    GRAFT_TRY(f.embed->get_rows(*id_view, device_f32(x_, E, rows)));
    for (std::uint32_t l = 0; l < f.n_layers; ++l) {
      GRAFT_TRY(half(l, true, rows, block_rows));
      GRAFT_TRY(half(l, false, rows, block_rows));
    }
    // Slots 1..rows-1: out = output_norm(x), logits = lm_head(out), gate = selector_hidden(out).
    GRAFT_TRY(be_->rms_norm(device_f32(x_ + E, E, m), f.output_norm->view(), f.shape.rms_eps, device_f32(out_, E, m)));
    GRAFT_TRY(f.lm_head->matmul(device_f32(out_, E, m), device_f32(logits_dev_, V, m)));
    if (f.has_selector)
      GRAFT_TRY(f.sel_hidden->matmul(device_f32(out_, E, m), device_f32(gate_dev_, f.selector_rank, m)));
    GRAFT_TRY(be_->synchronize());
    logits_.resize(std::size_t(V) * m);
    GRAFT_TRY(be_->copy(logits_.data(), MemoryKind::host, logits_dev_, MemoryKind::device, logits_.size() * sizeof(float)));
    gate_.resize(std::size_t(f.selector_rank) * m);
    if (!gate_.empty())
      GRAFT_TRY(be_->copy(gate_.data(), MemoryKind::host, gate_dev_, MemoryKind::device, gate_.size() * sizeof(float)));
    return Status::success();
  };
  Status st = body();
  // The block's K/V never stay: the next block sits at the context's end again.
  Status cut = kv_->truncate(static_cast<std::uint32_t>(slot_pos_.size()));
  return st.ok() ? cut : st;
}

Status DFlashPass::selector_rows(const Weight& table, const std::vector<std::int32_t>& ids, std::vector<float>& out) {
  const std::uint32_t rank = f_->selector_rank;
  out.resize(ids.size() * rank);
  for (std::size_t done = 0; done < ids.size();) {
    const std::size_t c = std::min<std::size_t>(sel_rows_, ids.size() - done);
    auto id_view = upload(ids_dev_, std::span<const std::int32_t>(ids).subspan(done, c));
    if (!id_view) return std::move(id_view).status();
    GRAFT_TRY(table.get_rows(*id_view, device_f32(sel_dev_, rank, static_cast<std::int64_t>(c))));
    GRAFT_TRY(be_->synchronize());
    GRAFT_TRY(be_->copy(out.data() + done * rank, MemoryKind::host, sel_dev_, MemoryKind::device, c * rank * sizeof(float)));
    done += c;
  }
  return Status::success();
}

}  // namespace graft::dflash2
