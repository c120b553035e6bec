#include "mtp_drafter.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>


namespace graft::mtp {

namespace {

constexpr std::uint32_t kMaxRows = 64;  // entries per block call (a long prompt goes in pieces)

// Rows of n floats `stride` floats apart: one half of the [e | h] concatenation.
TensorView strided_rows(float* data, std::int64_t n, std::int64_t rows, std::int64_t stride) {
  TensorView t = device_f32(data, n, rows);
  t.nb[1] = static_cast<std::size_t>(stride) * sizeof(float);
  t.nb[2] = t.nb[1] * static_cast<std::size_t>(rows);
  t.nb[3] = t.nb[2];
  return t;
}

// The backend buffer's floats (see the layout in create) and the queue's rows, from the shape and options.
struct MtpSizes {
  std::uint32_t k_head = 1;
  std::uint64_t slots = 0, floats = 0;
  std::uint32_t queue_cap = 0;
};

MtpSizes sizes_for(std::uint64_t E, std::uint32_t V, const MtpOptions& options) {
  MtpSizes z;
  const std::uint64_t R = kMaxRows;
  z.k_head = std::min(std::max<std::uint32_t>(1, options.top_k), V);
  // One slot of best ids and probabilities per head of a proposal (the committed entry's, then
  // each draft step's), read back together at its end.
  z.slots = std::uint64_t(std::max<std::uint32_t>(1, options.max_draft)) * z.k_head;
  // e, h, concat, x, g, g_last, logits; ids and positions (i32), the head's top ids (i32) and probabilities.
  z.floats = E * R * 2 + 2 * E * R + E * R + 2 * E + V + 2 * R + 2 * z.slots;
  // The queue up front: twice the window (where accept() trims it) and a round's commit, or,
  // with no window, two blocks of entries (a full queue runs then). No growth in the rounds.
  z.queue_cap = options.resume_window > 0 ? 2 * options.resume_window + kMaxRows : 2 * kMaxRows;
  return z;
}

}  // namespace

Status MtpDrafter::bind(const DrafterHost& host, const MtpOptions& options) {
  const ModelView& t = host.target();
  if (t.n_nextn_layers() == 0)
    return Status(Errc::unsupported, t.path() + ": no MTP (nextn) block to draft with: " + t.architecture() +
                                         ".nextn_predict_layers is 0 or absent");
  target_ = &t;
  be_ = &t.backend();
  opt_ = options;
  block_ = t.n_layers();  // the first nextn block; every step reuses it (llama.cpp does the same)
  E_ = t.n_embd();
  V_ = t.n_vocab();
  eps_ = t.block_shape().rms_eps;
  max_rows_ = kMaxRows;
  const std::string pre = "blk." + std::to_string(block_) + ".nextn.";
  // The head's own tensors, and the target's where the head shares them.
  auto take = [&](const std::string& name, std::unique_ptr<Weight>& out) -> Status {
    auto w = t.weight(name);
    if (!w) return w.status();
    out = std::move(*w);
    return Status::success();
  };
  auto own_or = [&](const std::string& own, const std::string& shared) { return t.has_tensor(own) ? own : shared; };
  GRAFT_TRY(take(pre + "eh_proj.weight", eh_proj_));
  GRAFT_TRY(take(pre + "enorm.weight", enorm_));
  GRAFT_TRY(take(pre + "hnorm.weight", hnorm_));
  GRAFT_TRY(take(own_or(pre + "shared_head_norm.weight", t.output_norm_name()), head_norm_));
  GRAFT_TRY(take(own_or(pre + "embed_tokens.weight", "token_embd.weight"), embed_));
  GRAFT_TRY(take(own_or(pre + "shared_head_head.weight", t.output_name()), lm_head_));
  const auto& ehv = eh_proj_->view();
  if (ehv.ne[0] != 2 * std::int64_t(E_) || ehv.ne[1] != E_)
    return Status(Errc::invalid_argument, t.path() + ": " + pre + "eh_proj.weight must be [" + std::to_string(2 * E_) +
                                              ", " + std::to_string(E_) + "]");
  auto runner = t.runner(t.block_shape(), kMaxRows);
  if (!runner) return runner.status();
  runner_ = std::move(*runner);
  return Status::success();
}

Expected<DrafterMemory> MtpDrafter::memory(const DrafterHost& host, const MtpOptions& options) {
  MtpDrafter d;
  GRAFT_TRY(d.bind(host, options));
  const BlockShape s = host.target().block_shape();
  const MtpSizes z = sizes_for(d.E_, d.V_, options);
  DrafterMemory m;
  m.kv = KvGeometry{1, s.n_head_kv, s.head_dim, s.head_dim, 0};
  m.kv_extra = options.max_draft + 1;
  m.buffer_bytes = z.floats * sizeof(float) + std::uint64_t(z.queue_cap) * d.E_ * sizeof(float);
  m.runner_blocks = {{d.block_}};
  m.needs = d.needs();
  return m;
}

Expected<std::unique_ptr<Drafter>> MtpDrafter::create(const DrafterHost& host, const MtpOptions& options) {
  std::unique_ptr<MtpDrafter> d(new MtpDrafter());
  GRAFT_TRY(d->bind(host, options));
  // Its own KV cache: one layer, an entry per committed token plus the draft steps of a round.
  const BlockShape s = host.target().block_shape();
  auto kv = host.new_kv_store(KvGeometry{1, s.n_head_kv, s.head_dim, s.head_dim,
                                         host.context_capacity() + options.max_draft + 1});
  if (!kv) return kv.status();
  d->kv_ = std::move(*kv);
  const std::uint64_t E = d->E_, R = kMaxRows;
  const MtpSizes z = sizes_for(E, d->V_, options);
  d->k_head_ = z.k_head;
  auto buf = d->be_->allocate(z.floats * sizeof(float), MemoryKind::device);
  if (!buf) return buf.status();
  d->buf_ = std::move(*buf);
  float* base = static_cast<float*>(d->buf_->data());
  d->e_ = base;
  d->h_ = d->e_ + E * R;
  d->cat_ = d->h_ + E * R;
  d->x_ = d->cat_ + 2 * E * R;
  d->g_ = d->x_ + E * R;
  d->g_last_ = d->g_ + E;
  d->logits_dev_ = d->g_last_ + E;
  d->ids_dev_ = reinterpret_cast<std::int32_t*>(d->logits_dev_ + d->V_);
  d->pos_dev_ = d->ids_dev_ + R;
  d->top_ids_dev_ = d->pos_dev_ + R;
  d->top_p_dev_ = reinterpret_cast<float*>(d->top_ids_dev_ + z.slots);
  d->top_ids_.resize(z.slots);
  d->top_p_.resize(z.slots);
  d->queue_cap_ = z.queue_cap;
  auto queue = d->be_->allocate(std::uint64_t(d->queue_cap_) * E * sizeof(float), MemoryKind::device);
  if (!queue) return queue.status();
  d->queue_buf_ = std::move(*queue);
  d->queue_ = static_cast<float*>(d->queue_buf_->data());
  // Written once, so the rounds never fault a page of them in.
  d->pending_tokens_.resize(d->queue_cap_);
  d->pending_tokens_.clear();
  return std::unique_ptr<Drafter>(std::move(d));
}

DrafterNeeds MtpDrafter::needs() const {
  DrafterNeeds n;
  n.normed_output = true;  // h_i: the target's final hidden state after output_norm
  n.hidden_in_backend_memory = true;  // the head runs on the target's backend: they stay there
  return n;
}

Status MtpDrafter::project(std::uint32_t n) {
  const std::int64_t E = E_;
  // cat [2E, n] = [rms_norm(e) * enorm | rms_norm(h) * hnorm]; x [E, n] = cat * eh_proj.
  GRAFT_TRY(be_->rms_norm(device_f32(e_, E, n), enorm_->view(), eps_, strided_rows(cat_, E, n, 2 * E)));
  GRAFT_TRY(be_->rms_norm(device_f32(h_, E, n), hnorm_->view(), eps_, strided_rows(cat_ + E, E, n, 2 * E)));
  return eh_proj_->matmul(device_f32(cat_, 2 * E, n), device_f32(x_, E, n));
}

Status MtpDrafter::head(std::uint32_t row, std::uint32_t slot) {
  // g = rms_norm(x[row]) * shared_head_norm; logits [V] = g * lm_head; then, where they are, their
  // softmax and its k_head_ best into the slot: only those ids and probabilities come back.
  GRAFT_TRY(be_->rms_norm(device_f32(x_ + std::size_t(row) * E_, E_, 1), head_norm_->view(), eps_, device_f32(g_, E_, 1)));
  const TensorView logits = device_f32(logits_dev_, V_, 1);
  GRAFT_TRY(lm_head_->matmul(device_f32(g_, E_, 1), logits));
  GRAFT_TRY(be_->softmax(logits, logits));
  const std::size_t at = std::size_t(slot) * k_head_;
  return be_->top_k(logits, k_head_, i32_view(top_ids_dev_ + at, k_head_, MemoryKind::device),
                    device_f32(top_p_dev_ + at, k_head_, 1));
}

Status MtpDrafter::read_heads(std::uint32_t n) {
  GRAFT_TRY(be_->synchronize());
  const std::size_t count = std::size_t(n) * k_head_;
  GRAFT_TRY(be_->copy(top_ids_.data(), MemoryKind::host, top_ids_dev_, MemoryKind::device, count * sizeof(std::int32_t)));
  return be_->copy(top_p_.data(), MemoryKind::host, top_p_dev_, MemoryKind::device, count * sizeof(float));
}

Status MtpDrafter::add_entries(const CommitInfo& info, bool whole) {
  if (info.first != held())
    return Status(Errc::invalid_argument, "mtp: the head holds " + std::to_string(held()) +
                                              " entries but the commit starts at token " + std::to_string(info.first));
  const std::uint32_t m = info.n_committed - info.first;
  if (info.context.size() != std::size_t(info.n_committed) + 1 || info.hidden.n_tokens != m ||
      info.hidden.n_embd != E_ || info.hidden.n_per_token != 1 || (m > 0 && !info.hidden.data))
    return Status(Errc::invalid_argument, "mtp: the commit's hidden states do not match what the head asked for");
  // Kept until the next propose (entry i reads token i+1 and the target's h_i): a round in which
  // the mix does not ask this drafter costs a copy, and the entries then run as one batch.
  for (std::uint32_t done = 0; done < m;) {
    const auto queued = static_cast<std::uint32_t>(pending_tokens_.size());
    const std::uint32_t piece = std::min(m - done, queue_cap_);
    if (queued + piece > queue_cap_) {
      if (whole || opt_.resume_window == 0) {
        GRAFT_TRY(flush(0));  // every entry runs: now, in the same order
      } else {
        // The oldest are beyond the window flush() would run (the ring holds more than it): they
        // become the gap the window makes anyway.
        const std::uint32_t drop = queued + piece - queue_cap_;
        queue_pop(drop);
        n_entries_ += drop;
      }
    }
    GRAFT_TRY(queue_push(info.hidden.data + std::size_t(done) * E_, info.hidden.memory, piece));
    pending_tokens_.insert(pending_tokens_.end(), info.context.begin() + info.first + done + 1,
                           info.context.begin() + info.first + done + piece + 1);
    done += piece;
  }
  if (m > 0) have_head_ = false;
  return Status::success();
}

Status MtpDrafter::queue_push(const float* h, MemoryKind memory, std::uint32_t n) {
  const auto queued = static_cast<std::uint32_t>(pending_tokens_.size());
  const std::uint32_t tail = (queue_head_ + queued) % queue_cap_;
  const std::uint32_t first = std::min(n, queue_cap_ - tail);
  // Rows in backend memory are copied on the stream; host rows (valid only during the call) at once.
  auto copy = [&](float* dst, const float* src, std::uint32_t rows) {
    const std::size_t bytes = std::size_t(rows) * E_ * sizeof(float);
    return memory == MemoryKind::host ? be_->copy(dst, MemoryKind::device, src, memory, bytes)
                                      : be_->copy_async(dst, MemoryKind::device, src, memory, bytes);
  };
  GRAFT_TRY(copy(queue_ + std::size_t(tail) * E_, h, first));
  if (n > first) GRAFT_TRY(copy(queue_, h + std::size_t(first) * E_, n - first));
  return Status::success();
}

Status MtpDrafter::queue_copy_out(std::uint32_t k, std::uint32_t n, float* dst) {
  const std::uint32_t start = (queue_head_ + k) % queue_cap_;
  const std::uint32_t first = std::min(n, queue_cap_ - start);
  GRAFT_TRY(be_->copy_async(dst, MemoryKind::device, queue_ + std::size_t(start) * E_, MemoryKind::device,
                            std::size_t(first) * E_ * sizeof(float)));
  if (n > first)
    GRAFT_TRY(be_->copy_async(dst + std::size_t(first) * E_, MemoryKind::device, queue_, MemoryKind::device,
                              std::size_t(n - first) * E_ * sizeof(float)));
  return Status::success();
}

void MtpDrafter::queue_pop(std::uint32_t n) {
  pending_tokens_.erase(pending_tokens_.begin(), pending_tokens_.begin() + n);
  queue_head_ = (queue_head_ + n) % queue_cap_;
}

TensorView MtpDrafter::upload(std::int32_t* dst, const std::int32_t* src, std::uint32_t n, Status& status) {
  // A blocking copy: a flush's token ids and positions, and a proposal's positions, come from the
  // host (the draft steps' ids do not: each reads the previous step's where it lies).
  status = be_->copy(dst, MemoryKind::device, src, MemoryKind::host, std::size_t(n) * sizeof(std::int32_t));
  return i32_view(dst, n, MemoryKind::device);
}

Status MtpDrafter::flush(std::uint32_t window) {
  if (pending_tokens_.empty()) return Status::success();
  // Draft entries of the last round (slots >= n_slots_) go; the committed tokens' come in.
  GRAFT_TRY(kv_->truncate(n_slots_));
  const auto m = static_cast<std::uint32_t>(pending_tokens_.size());
  // Beyond the window the oldest entries are counted but not run (the header says why).
  std::uint32_t done = 0;
  if (window > 0 && m > window) {
    done = m - window;
    n_entries_ += done;
  }
  std::vector<std::int32_t> positions;
  Status ids_status;
  // On a failure the entries that ran leave the queue, so the count of entries stays exact.
  struct Trim {
    MtpDrafter& d;
    const std::uint32_t& done;
    ~Trim() { d.queue_pop(done); }
  } trim{*this, done};
  while (done < m) {
    const std::uint32_t c = std::min(max_rows_, m - done);
    const std::uint32_t i0 = n_entries_;  // entry index of the first row
    GRAFT_TRY(embed_->get_rows(upload(ids_dev_, pending_tokens_.data() + done, c, ids_status), device_f32(e_, E_, c)));
    GRAFT_TRY(std::move(ids_status));
    GRAFT_TRY(queue_copy_out(done, c, h_));
    GRAFT_TRY(project(c));
    // The block at KV slots n_slots_.., RoPE positions i + 1 (entry i).
    positions.resize(c);
    std::iota(positions.begin(), positions.end(), static_cast<std::int32_t>(i0 + 1));
    BlockRows rows;
    rows.n_tokens = c;
    rows.n_past = n_slots_;
    rows.positions = upload(pos_dev_, positions.data(), c, ids_status);
    GRAFT_TRY(std::move(ids_status));
    GRAFT_TRY(runner_->layer(block_, *kv_, 0, rows, device_f32(x_, E_, c)));
    n_entries_ += c;
    n_slots_ += c;
    done += c;
    if (done == m) {
      GRAFT_TRY(head(c - 1, 0));
      GRAFT_TRY(be_->copy_async(g_last_, MemoryKind::device, g_, MemoryKind::device, std::size_t(E_) * sizeof(float)));
      have_head_ = true;
    }
  }
  return Status::success();
}

// The prompt's entries run at once, with the target's prefill (as one batch in any case); the
// rounds' entries wait for the next proposal.
Status MtpDrafter::begin(const CommitInfo& info) {
  GRAFT_TRY(add_entries(info, true));
  return flush(0);  // a prompt runs whole
}
Status MtpDrafter::accept(const CommitInfo& info) {
  GRAFT_TRY(add_entries(info, false));
  // Rounds without a proposal: the queue keeps no more than the window will run (trimmed at twice
  // the window, so the move is rare), so its memory stays the same pages.
  const std::uint32_t w = opt_.resume_window;
  if (w > 0 && pending_tokens_.size() >= 2 * std::size_t(w)) {
    const auto drop = static_cast<std::uint32_t>(pending_tokens_.size() - w);
    queue_pop(drop);
    n_entries_ += drop;
  }
  return Status::success();
}

Status MtpDrafter::truncate(std::uint32_t n) {
  if (n == 0) {
    n_entries_ = 0;
    n_slots_ = 0;
    have_head_ = false;
    pending_tokens_.clear();
    queue_head_ = 0;
    return kv_->truncate(0);
  }
  if (n > held()) return Status::success();  // nothing past n is held
  // Entry i read token i+1: n tokens keep entries [0, n-1). Entry n-1, which read the replaced
  // token n, would need the target's h_{n-1} again, which no call hands over: it becomes a gap,
  // as the resume window's are (RoPE keeps the true positions; drafts may differ, never the output).
  const std::uint32_t keep = n - 1;
  if (keep >= n_entries_) {
    // Only queued entries go; those that stay run now, so the gap comes after them.
    pending_tokens_.resize(keep - n_entries_);  // the ring's newest rows go with them
    GRAFT_TRY(flush(opt_.resume_window));
  } else if (n_slots_ == n_entries_) {
    // Entries already in the head's KV cache, slot i holding entry i (no gap yet): cut there.
    pending_tokens_.clear();
    queue_head_ = 0;
    GRAFT_TRY(kv_->truncate(keep));
    n_slots_ = keep;
  } else {
    // After a gap the slots hold no entry numbers to cut at: the cache forgets them all, and
    // later drafts attend to the entries from here on.
    pending_tokens_.clear();
    queue_head_ = 0;
    GRAFT_TRY(kv_->truncate(0));
    n_slots_ = 0;
  }
  n_entries_ = n;
  have_head_ = false;  // the next commit's entries give the head again
  return Status::success();
}

Status MtpDrafter::propose(const DraftRequest& request, DraftTree& out) {
  GRAFT_TRY(flush(opt_.resume_window));
  // Just after a cut (truncate) the head has no entry to draft from: no proposal this round.
  if (!have_head_ && pending_tokens_.empty() && request.context.size() == std::size_t(n_entries_) + 1)
    return Status::success();
  if (!have_head_ || request.context.size() != std::size_t(n_entries_) + 1)
    return Status(Errc::invalid_argument, "mtp: out of step with the context (" + std::to_string(request.context.size()) +
                                              " tokens, " + std::to_string(n_entries_) + " entries)");
  const std::uint32_t depth = std::min(opt_.max_draft, request.max_depth);
  if (depth == 0 || request.max_nodes == 0) return Status::success();
  // Step 1 is the last committed entry's head (it read the pending token, slot 0). Steps
  // 2..depth run the block on the previous step's g and best id (slot s - 2, read where it is),
  // all enqueued at once: the proposal waits once, at its end, for every step's best ids.
  const std::uint32_t steps = std::min(depth, request.max_nodes);
  if (steps >= 2) {
    std::vector<std::int32_t> positions(steps - 1);
    std::iota(positions.begin(), positions.end(), static_cast<std::int32_t>(n_entries_ + 1));
    Status pos_status;
    const TensorView all_pos = upload(pos_dev_, positions.data(), steps - 1, pos_status);
    GRAFT_TRY(std::move(pos_status));
    for (std::uint32_t s = 2; s <= steps; ++s) {
      const std::uint32_t slot = n_slots_ + s - 2;  // after the committed entries; cut at the next flush
      const TensorView prev = i32_view(top_ids_dev_ + std::size_t(s - 2) * k_head_, 1, MemoryKind::device);
      GRAFT_TRY(embed_->get_rows(prev, device_f32(e_, E_, 1)));
      GRAFT_TRY(be_->copy_async(h_, MemoryKind::device, s == 2 ? g_last_ : g_, MemoryKind::device,
                                std::size_t(E_) * sizeof(float)));
      GRAFT_TRY(project(1));
      BlockRows rows;
      rows.n_tokens = 1;
      rows.n_past = slot;
      rows.positions = i32_view(all_pos.as<std::int32_t>() + (s - 2), 1, MemoryKind::device);
      GRAFT_TRY(runner_->layer(block_, *kv_, 0, rows, device_f32(x_, E_, 1)));
      GRAFT_TRY(head(0, s - 1));
    }
  }
  GRAFT_TRY(read_heads(std::max<std::uint32_t>(steps, 1)));
  const std::span<const std::int32_t> first(top_ids_.data(), k_head_);
  const std::span<const float> p1(top_p_.data(), k_head_);
  if (p1[0] < opt_.p_min) return Status::success();
  out.add(first[0], -1, p1[0]);
  // The chain of the best first token while the head is confident enough (steps after a stop ran
  // for nothing: their KV slots go at the next flush).
  for (std::uint32_t s = 2; s <= steps; ++s) {  // steps <= max_nodes: the chain fits the budget
    const std::size_t at = std::size_t(s - 1) * k_head_;
    if (top_p_[at] < opt_.p_min) break;
    out.add(top_ids_[at], static_cast<std::int32_t>(out.size()) - 1, top_p_[at]);
  }
  // The runner-up first tokens, as leaves beside the chain, while the node budget lasts.
  for (std::size_t j = 1; j < first.size() && out.size() < request.max_nodes; ++j)
    if (p1[j] >= opt_.p_min) out.add(first[j], -1, p1[j]);
  return Status::success();
}

}  // namespace graft::mtp
