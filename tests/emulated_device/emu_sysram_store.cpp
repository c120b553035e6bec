#include "emu_sysram_store.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cache_rows.hpp"
#include "half.hpp"
#include "offload_window.hpp"
#include "slot_book.hpp"
#include "views.hpp"

namespace graft::emu {

namespace {

using kv::CacheType;
using kv::SlotRange;

constexpr const char* kPrefix = "kvstore sysram: ";

class EmuSysramStore final : public KvStore {
 public:
  EmuSysramStore(Device& dev, Backend& backend, const KvGeometry& g, const kv::SysramOptions& o)
      : dev_(dev), be_(backend), g_(g), o_(o), book_(g), win_(g.capacity, o.device_tokens, o.chunk),
        k_row_(kv::cache_row_bytes(o.type, g.head_dim_k)), v_row_(kv::cache_row_bytes(o.type, g.head_dim_v)) {}

  // Everything it will hold, once: the window and the host rows of every layer.
  Status allocate() {
    const std::size_t rows = win_.device_rows(), heads = g_.n_kv_heads;
    for (std::uint32_t l = 0; l < g_.n_layers; ++l) {
      for (auto [bytes, kind, list] : {std::tuple{rows * k_row_, MemoryKind::device, &dk_},
                                       std::tuple{rows * v_row_, MemoryKind::device, &dv_},
                                       std::tuple{std::size_t(g_.capacity) * k_row_, MemoryKind::pinned_host, &hk_},
                                       std::tuple{std::size_t(g_.capacity) * v_row_, MemoryKind::pinned_host, &hv_}}) {
        auto b = be_.allocate(bytes * heads, kind);
        if (!b) return b.status();
        (kind == MemoryKind::device ? mem_.device_bytes : mem_.host_bytes) += (*b)->size();
        list->push_back(std::move(*b));
      }
    }
    if (o_.mode == kv::SysramMode::retrieval_lossy) {
      bounds_.assign(g_.n_layers, {});
      bounded_.assign(g_.n_layers, 0);
    }
    return Status::success();
  }

  KvGeometry geometry() const noexcept override { return g_; }
  std::uint32_t size() const noexcept override { return book_.size(); }
  bool lossless() const noexcept override { return o_.type == CacheType::f32 && o_.mode == kv::SysramMode::exact; }
  KvMemory memory() const noexcept override { return mem_; }

  Status write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
               const TensorView& v) override {
    GRAFT_TRY(book_.check_write(layer, slot, n));
    std::uint32_t end = 0;
    for (std::uint32_t l = 0; l < g_.n_layers; ++l) end = std::max(end, book_.filled(l));
    auto move = win_.before_write(slot, n, end);
    if (!move) return move.status();
    if (move->shift) {
      GRAFT_TRY(dev_.enqueue("sysram window move", [this, m = *move] {
        for (std::uint32_t l = 0; l < g_.n_layers; ++l)
          for (std::uint32_t h = 0; h < g_.n_kv_heads; ++h) {
            std::memmove(dev_row(dk_, l, h, 0, k_row_), dev_row(dk_, l, h, m.shift, k_row_), std::size_t(m.keep) * k_row_);
            std::memmove(dev_row(dv_, l, h, 0, v_row_), dev_row(dv_, l, h, m.shift, v_row_), std::size_t(m.keep) * v_row_);
          }
        return Status::success();
      }));
      win_.moved(*move);
    }
    TensorView ck, cv;
    GRAFT_TRY(dev_.to_cpu(k, "kv write", "k", true, ck));
    GRAFT_TRY(dev_.to_cpu(v, "kv write", "v", true, cv));
    const std::uint32_t at = slot - win_.base();
    // The rows on the device, then the same bytes to system RAM (written through).
    GRAFT_TRY(dev_.enqueue("sysram write", [this, layer, slot, at, n, ck, cv] {
      for (std::uint32_t t = 0; t < n; ++t)
        for (std::uint32_t h = 0; h < g_.n_kv_heads; ++h) {
          kv::encode_row(o_.type, kv::row(ck, h, t), g_.head_dim_k, dev_row(dk_, layer, h, at + t, k_row_));
          kv::encode_row(o_.type, kv::row(cv, h, t), g_.head_dim_v, dev_row(dv_, layer, h, at + t, v_row_));
        }
      for (std::uint32_t h = 0; h < g_.n_kv_heads; ++h) {
        std::memcpy(host_row(hk_, layer, h, slot, k_row_), dev_row(dk_, layer, h, at, k_row_), std::size_t(n) * k_row_);
        std::memcpy(host_row(hv_, layer, h, slot, v_row_), dev_row(dv_, layer, h, at, v_row_), std::size_t(n) * v_row_);
      }
      return Status::success();
    }));
    if (!bounded_.empty()) bounded_[layer] = std::min(bounded_[layer], slot / o_.block);
    book_.wrote(layer, slot, n);
    return Status::success();
  }

  Status attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& batch, const TensorView& out) override {
    GRAFT_TRY(book_.check_attend(layer, batch.n_past, batch.n_query));
    if (batch.sliding_window)
      return Status(Errc::not_implemented, std::string(kPrefix) + "attend: a sliding window is not implemented");
    auto pieces = win_.host_pieces(batch.n_past);
    if (!pieces) return pieces.status();
    TensorView cq, co;
    AttentionBatch cb = batch;
    GRAFT_TRY(dev_.to_cpu(q, "kv attend", "q", true, cq));
    GRAFT_TRY(dev_.to_cpu(out, "kv attend", "out", true, co));
    GRAFT_TRY(dev_.to_cpu(batch.ancestor, "kv attend", "ancestor", true, cb.ancestor));
    const std::uint32_t base = win_.base();
    return dev_.enqueue("sysram attend", [this, layer, cq, cb, co, base, pieces = std::move(*pieces)] {
      return attend_now(layer, cq, cb, co, base, pieces);
    });
  }

  Status truncate(std::uint32_t n) override {
    GRAFT_TRY(book_.check_truncate(n));
    GRAFT_TRY(refill(win_.after_truncate(n)));
    for (auto& b : bounded_) b = std::min(b, n / o_.block);
    book_.set_all(n);
    return Status::success();
  }

  Status compact(std::uint32_t dst, std::span<const std::uint32_t> src) override {
    GRAFT_TRY(book_.check_compact(dst, src));
    const std::uint32_t n = static_cast<std::uint32_t>(dst + src.size());
    std::vector<std::uint32_t> moved(src.begin(), src.end());
    const std::uint32_t base = win_.base();
    // System RAM's rows move, and the window's where the slots stay in it; slots moved below the
    // window are right only in system RAM, and the window is then refilled from it.
    const bool below = dst < base && !src.empty();
    GRAFT_TRY(dev_.enqueue("sysram compact", [this, dst, moved, base, below] {
      for (std::uint32_t l = 0; l < g_.n_layers; ++l)
        for (std::uint32_t h = 0; h < g_.n_kv_heads; ++h)
          for (std::size_t i = 0; i < moved.size(); ++i) {
            const std::uint32_t from = moved[i], to = dst + static_cast<std::uint32_t>(i);
            if (from == to) continue;
            std::memmove(host_row(hk_, l, h, to, k_row_), host_row(hk_, l, h, from, k_row_), k_row_);
            std::memmove(host_row(hv_, l, h, to, v_row_), host_row(hv_, l, h, from, v_row_), v_row_);
            if (below) continue;
            std::memmove(dev_row(dk_, l, h, to - base, k_row_), dev_row(dk_, l, h, from - base, k_row_), k_row_);
            std::memmove(dev_row(dv_, l, h, to - base, v_row_), dev_row(dv_, l, h, from - base, v_row_), v_row_);
          }
      return Status::success();
    }));
    if (below) GRAFT_TRY(refill(win_.rebase(n)));
    for (auto& b : bounded_) b = std::min(b, dst / o_.block);
    book_.set_all(n);
    return Status::success();
  }

 private:
  // Row `slot` of head h in a layer's device window (rows [0, device_rows)), untagged for the CPU.
  char* dev_row(const std::vector<std::unique_ptr<Buffer>>& bufs, std::uint32_t layer, std::uint32_t h,
                std::uint32_t row, std::size_t row_bytes) const {
    return static_cast<char*>(untag(bufs[layer]->data())) + (std::size_t(h) * win_.device_rows() + row) * row_bytes;
  }
  char* host_row(const std::vector<std::unique_ptr<Buffer>>& bufs, std::uint32_t layer, std::uint32_t h,
                 std::uint32_t slot, std::size_t row_bytes) const {
    return static_cast<char*>(bufs[layer]->data()) + (std::size_t(h) * g_.capacity + slot) * row_bytes;
  }

  // System RAM's slots [r.begin, r.end) into the window's rows [0, r.size()), every layer.
  Status refill(SlotRange r) {
    if (r.size() == 0) return Status::success();
    return dev_.enqueue("sysram refill", [this, r] {
      const std::uint32_t at = 0;
      for (std::uint32_t l = 0; l < g_.n_layers; ++l)
        for (std::uint32_t h = 0; h < g_.n_kv_heads; ++h) {
          std::memcpy(dev_row(dk_, l, h, at, k_row_), host_row(hk_, l, h, r.begin, k_row_), std::size_t(r.size()) * k_row_);
          std::memcpy(dev_row(dv_, l, h, at, v_row_), host_row(hv_, l, h, r.begin, v_row_), std::size_t(r.size()) * v_row_);
        }
      return Status::success();
    });
  }

  kv::LayerCache cache(const char* k, const char* v, std::uint32_t capacity) const {
    return kv::LayerCache{k, v, o_.type, o_.type, g_.n_kv_heads, g_.head_dim_k, g_.head_dim_v, capacity};
  }

  // Runs on the stream: the window (with the batch and its mask) on the device, then every piece
  // of the older slots where they are, merged by their log-sum-exp.
  Status attend_now(std::uint32_t layer, const TensorView& q, const AttentionBatch& b, const TensorView& out,
                    std::uint32_t base, std::vector<SlotRange> pieces) {
    const std::uint32_t n_heads = static_cast<std::uint32_t>(q.ne[1]), hv = g_.head_dim_v, nq = b.n_query;
    const std::size_t rows = std::size_t(n_heads) * nq;
    std::vector<float> acc(rows * hv), lse(rows), part(rows * hv), part_lse(rows);
    const TensorView acc_view = f32_view(acc.data(), hv, n_heads, nq), part_view = f32_view(part.data(), hv, n_heads, nq);
    AttentionBatch window = b;
    window.n_past = b.n_past - base;
    GRAFT_TRY(kv::attend(dev_.cpu(), cache(dev_row(dk_, layer, 0, 0, k_row_), dev_row(dv_, layer, 0, 0, v_row_),
                                           win_.device_rows()),
                         q, window, acc_view, lse.data()));
    if (o_.mode == kv::SysramMode::retrieval_lossy) pieces = chosen(layer, q, base);
    // Older slots see no batch entry: an all-zero mask over the batch.
    std::vector<std::uint8_t> none(std::size_t(nq) * nq, 0);
    TensorView mask{};
    mask.data = none.data();
    mask.type = type_id::i8;
    mask.n_dims = 2;
    mask.ne[0] = nq, mask.ne[1] = nq, mask.ne[2] = 1, mask.ne[3] = 1;
    mask.nb[0] = 1, mask.nb[1] = nq, mask.nb[2] = mask.nb[3] = std::size_t(nq) * nq;
    for (const SlotRange& p : pieces) {
      AttentionBatch older{nq, p.size(), mask, b.scale, 0};
      GRAFT_TRY(kv::attend(dev_.cpu(), cache(host_row(hk_, layer, 0, p.begin, k_row_), host_row(hv_, layer, 0, p.begin, v_row_),
                                             g_.capacity),
                           q, older, part_view, part_lse.data()));
      kv::merge_attention(acc.data(), lse.data(), part.data(), part_lse.data(), static_cast<std::uint32_t>(rows), hv);
    }
    for (std::uint32_t i = 0; i < nq; ++i)
      for (std::uint32_t h = 0; h < n_heads; ++h)
        std::memcpy(kv::mutable_row(out, h, i), acc.data() + (std::size_t(i) * n_heads + h) * hv, hv * sizeof(float));
    return Status::success();
  }

  // Retrieval: the sink, and the `top_blocks` blocks between it and the window whose key bounds
  // score highest for any query row of the call (LOSSY: the other slots are not attended).
  std::vector<SlotRange> chosen(std::uint32_t layer, const TensorView& q, std::uint32_t base) {
    std::vector<SlotRange> out;
    const std::uint32_t sink = std::min(o_.sink, base);
    if (sink) out.push_back({0, sink});
    if (base <= sink) return out;
    const std::uint32_t first = sink, blocks = (base - first + o_.block - 1) / o_.block;
    update_bounds(layer, base);
    const std::uint32_t n_heads = static_cast<std::uint32_t>(q.ne[1]), rep = n_heads / g_.n_kv_heads, dk = g_.head_dim_k;
    std::vector<float> scores(blocks, -std::numeric_limits<float>::infinity());
    for (std::uint32_t i = 0; i < blocks; ++i) {
      const std::uint32_t begin = first + i * o_.block, end = std::min(base, begin + o_.block);
      for (std::uint32_t h = 0; h < n_heads; ++h)
        for (std::int64_t t = 0; t < q.ne[2]; ++t) {
          // The block's bound over the slots it covers (bounds are kept per aligned block).
          float s = -std::numeric_limits<float>::infinity();
          for (std::uint32_t a = begin / o_.block; a <= (end - 1) / o_.block; ++a) {
            const float* lohi = &bounds_[layer][((std::size_t(a) * g_.n_kv_heads) + h / rep) * 2 * dk];
            s = std::max(s, kv::block_bound(kv::row(q, h, t), lohi, lohi + dk, dk));
          }
          scores[i] = std::max(scores[i], s);
        }
    }
    for (const SlotRange& r : kv::best_blocks(scores, first, base, o_.block, o_.top_blocks)) out.push_back(r);
    return out;
  }

  // Per aligned block of `block` slots below `end`, per KV head: each channel's smallest and
  // largest key (as stored), from system RAM; kept, and redone from the first block a write,
  // truncate or compact touched.
  void update_bounds(std::uint32_t layer, std::uint32_t end) {
    const std::uint32_t dk = g_.head_dim_k, whole = end / o_.block;
    auto& b = bounds_[layer];
    b.resize(std::size_t(whole + 1) * g_.n_kv_heads * 2 * dk);
    std::vector<float> k(dk);
    for (std::uint32_t a = bounded_[layer]; a * o_.block < end; ++a)
      for (std::uint32_t h = 0; h < g_.n_kv_heads; ++h) {
        float* lo = &b[(std::size_t(a) * g_.n_kv_heads + h) * 2 * dk];
        float* hi = lo + dk;
        std::fill_n(lo, dk, std::numeric_limits<float>::infinity());
        std::fill_n(hi, dk, -std::numeric_limits<float>::infinity());
        for (std::uint32_t s = a * o_.block; s < std::min(end, (a + 1) * o_.block); ++s) {
          const char* r = host_row(hk_, layer, h, s, k_row_);
          for (std::uint32_t d = 0; d < dk; ++d) {
            const float x = o_.type == CacheType::f32 ? reinterpret_cast<const float*>(r)[d]
                                                      : f16_to_f32(reinterpret_cast<const std::uint16_t*>(r)[d]);
            lo[d] = std::min(lo[d], x);
            hi[d] = std::max(hi[d], x);
          }
        }
      }
    bounded_[layer] = whole;  // the last (partial) block is redone next time
  }

  Device& dev_;
  Backend& be_;
  KvGeometry g_;
  kv::SysramOptions o_;
  kv::SlotBook book_;
  kv::OffloadWindow win_;
  std::size_t k_row_, v_row_;
  std::vector<std::unique_ptr<Buffer>> dk_, dv_, hk_, hv_;  // per layer: window (device), all (pinned host)
  KvMemory mem_;
  std::vector<std::vector<float>> bounds_;  // retrieval: per layer, [block][kv head][lo | hi][dim]
  std::vector<std::uint32_t> bounded_;      // retrieval: per layer, blocks whose bounds are current
};

}  // namespace

Expected<std::unique_ptr<KvStore>> make_sysram_store(Device& dev, Backend& backend, const KvGeometry& g,
                                                     const kv::SysramOptions& options) {
  auto memory = kv::sysram_memory(options, g);
  if (!memory) return Status(memory.status().code(), kPrefix + memory.status().message());
  std::unique_ptr<EmuSysramStore> s(new EmuSysramStore(dev, backend, g, options));
  GRAFT_TRY(s->allocate());
  return std::unique_ptr<KvStore>(std::move(s));
}

}  // namespace graft::emu
