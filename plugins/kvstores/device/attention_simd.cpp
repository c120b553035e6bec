// The SIMD attention path: which slots each query sees, chunking, softmax and output, around the
// instruction-set kernels of attention_kernels.hpp. Compiled for the baseline ISA; the kernels
// bring their own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "attention_job.hpp"
#include "views.hpp"

namespace graft::kv {

namespace {

// Working memory of one parallel_for chunk, reused for all its units. Nothing is initialized
// here: every element is written before it is read.
struct Scratch {
  Scratch(const AttnJob& j, std::uint32_t heads)
      : nqb(std::min(kQueryBlock, j.batch.n_query)),
        stride(static_cast<std::size_t>(j.batch.n_past) + j.batch.n_query),
        scores(std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(nqb) * heads * stride)),
        acc(std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(nqb) * heads * j.cache.head_dim_v)),
        inv_sum(std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(nqb) * heads)),
        union_batch(std::make_unique_for_overwrite<std::uint32_t[]>(j.batch.n_query)) {}
  // Buffers for widened f16 rows, allocated by the first unit that widens.
  float* kbuf(std::size_t n) { return grow(kbuf_, n); }
  float* vbuf(std::size_t n) { return grow(vbuf_, n); }

  std::uint32_t nqb;                         // queries per block
  std::size_t stride;                        // scores of one (query, head) row
  std::unique_ptr<float[]> scores;           // [query in block][head][stride], compacted to visible slots
  std::unique_ptr<float[]> acc, inv_sum;     // [query][head][head_dim_v], [query][head]
  std::unique_ptr<std::uint32_t[]> union_batch;  // batch entries some query of the block sees
  std::uint32_t lo[kQueryBlock] = {};        // first visible committed slot per query (window)
  std::uint32_t count[kQueryBlock] = {};     // visible slots per query
  // A chunk's rows as the kernels read them, and the ones one query sees.
  const std::uint16_t* rows_h[kSlotChunk] = {};
  const float* rows_f[kSlotChunk] = {};
  const std::uint16_t* pick_h[kSlotChunk] = {};
  const float* pick_f[kSlotChunk] = {};

 private:
  static float* grow(std::unique_ptr<float[]>& b, std::size_t n) {
    if (!b) b = std::make_unique_for_overwrite<float[]>(n);
    return b.get();
  }
  std::unique_ptr<float[]> kbuf_, vbuf_;
};

// Rows of a KV head are n_kv_heads * head_dim elements apart (often a whole page), which the
// hardware prefetcher does not follow: the next chunk's rows are requested while this one runs.
inline void prefetch(const void* p, std::size_t bytes) noexcept {
  for (std::size_t o = 0; o < bytes; o += 64) __builtin_prefetch(static_cast<const char*>(p) + o);
}

// Queries [i0, i1) against KV head g, for its query heads [r0, r1) (head g * n_rep + r). Query i
// sees, in ascending order, committed slots [lo_i, n_past) and then the batch entries the mask
// allows; a key at position p is visible when qpos - p < window.
template <class T>
void attend_unit(const AttnJob& job, const AttnKernels& kern, std::uint32_t i0, std::uint32_t i1, std::uint32_t g,
                 std::uint32_t r0, std::uint32_t r1, Scratch& s) {
  constexpr bool kF16 = std::is_same_v<T, std::uint16_t>;
  const LayerCache& c = job.cache;
  const AttentionBatch& b = job.batch;
  const std::uint32_t hk = c.head_dim_k, hv = c.head_dim_v, nq = i1 - i0, nh = r1 - r0;
  const std::size_t stride = s.stride;

  std::uint32_t lo_min = b.n_past;
  for (std::uint32_t q = 0; q < nq; ++q) {
    const std::int64_t qpos = static_cast<std::int64_t>(b.n_past) + job.depth[i0 + q];
    s.lo[q] = b.sliding_window > 0
                  ? static_cast<std::uint32_t>(std::clamp<std::int64_t>(qpos - b.sliding_window + 1, 0, b.n_past))
                  : 0;
    lo_min = std::min(lo_min, s.lo[q]);
    s.count[q] = 0;
  }
  std::uint32_t n_union = 0;
  if (!b.ancestor) {  // causal: entries [i0 - window + 1, i1) (depth = index), no scan needed
    const std::int64_t first =
        b.sliding_window > 0 ? std::max<std::int64_t>(0, std::int64_t(i0) - b.sliding_window + 1) : 0;
    for (auto j = static_cast<std::uint32_t>(first); j < i1; ++j) s.union_batch[n_union++] = j;
  } else {
    for (std::uint32_t j = 0; j < b.n_query; ++j)
      for (std::uint32_t q = 0; q < nq; ++q)
        if (sees_batch(job, i0 + q, j)) {
          s.union_batch[n_union++] = j;
          break;
        }
  }
  // The block's slots in the order every query visits its own: committed ones, then batch ones.
  const std::uint32_t n_prefix = b.n_past - lo_min, n_slots = n_prefix + n_union;
  auto slot_at = [&](std::uint32_t t) -> std::size_t {
    return t < n_prefix ? lo_min + t : b.n_past + s.union_batch[t - n_prefix];
  };
  auto visible = [&](std::uint32_t q, std::uint32_t t) {
    return t < n_prefix ? lo_min + t >= s.lo[q] : sees_batch(job, i0 + q, s.union_batch[t - n_prefix]);
  };
  auto score_row = [&](std::uint32_t q, std::uint32_t r) {
    return s.scores.get() + (static_cast<std::size_t>(q) * nh + r) * stride;
  };
  auto acc_row = [&](std::uint32_t q, std::uint32_t r) {
    return s.acc.get() + (static_cast<std::size_t>(q) * nh + r) * hv;
  };

  const T* K = static_cast<const T*>(c.k) + static_cast<std::size_t>(g) * hk;
  const T* V = static_cast<const T*>(c.v) + static_cast<std::size_t>(g) * hv;
  const std::size_t k_slot = static_cast<std::size_t>(c.n_kv_heads) * hk;
  const std::size_t v_slot = static_cast<std::size_t>(c.n_kv_heads) * hv;
  // f16 rows are converted once per chunk when many score rows read them, else in registers.
  const bool widen = kF16 && nq * nh > kern.direct_rows;
  float* const kbuf = widen ? s.kbuf(static_cast<std::size_t>(kSlotChunk) * hk) : nullptr;
  float* const vbuf = widen ? s.vbuf(static_cast<std::size_t>(kSlotChunk) * hv) : nullptr;

  auto prefetch_chunk = [&](const T* base, std::size_t slot_elems, std::uint32_t dim, std::uint32_t t0) {
    const std::uint32_t t1 = std::min(n_slots, t0 + kSlotChunk);
    for (std::uint32_t t = t0; t < t1; ++t) prefetch(base + slot_at(t) * slot_elems, dim * sizeof(T));
  };
  // The chunk [t0, t1) of rows as the kernels read them (in place, or widened into buf).
  auto load_chunk = [&](const T* base, std::size_t slot_elems, std::uint32_t dim, float* buf, std::uint32_t t0,
                        std::uint32_t t1) {
    for (std::uint32_t t = t0; t < t1; ++t) {
      const T* row = base + slot_at(t) * slot_elems;
      if constexpr (kF16) {
        if (widen) {
          float* w = buf + static_cast<std::size_t>(t - t0) * dim;
          kern.widen(row, w, dim);
          s.rows_f[t - t0] = w;
        } else {
          s.rows_h[t - t0] = row;
        }
      } else {
        s.rows_f[t - t0] = row;
      }
    }
  };
  // The chunk rows query q sees, in order, into pick_h / pick_f.
  auto pick_rows = [&](std::uint32_t q, std::uint32_t t0, std::uint32_t t1) {
    std::uint32_t m = 0;
    const bool in_place = kF16 && !widen;
    for (std::uint32_t t = t0; t < t1; ++t) {
      if (!visible(q, t)) continue;
      if (in_place)
        s.pick_h[m++] = s.rows_h[t - t0];
      else
        s.pick_f[m++] = s.rows_f[t - t0];
    }
    return m;
  };
  auto q_row = [&](std::uint32_t q, std::uint32_t r) { return row(job.q, g * job.n_rep + r0 + r, i0 + q); };

  // Scores, two query heads per kernel call (they share each row's loads and conversion).
  if (n_slots > 0) prefetch_chunk(K, k_slot, hk, 0);
  for (std::uint32_t t0 = 0; t0 < n_slots; t0 += kSlotChunk) {
    const std::uint32_t t1 = std::min(n_slots, t0 + kSlotChunk);
    if (t1 < n_slots)
      prefetch_chunk(K, k_slot, hk, t1);
    else
      prefetch_chunk(V, v_slot, hv, 0);  // the V pass starts there after the softmax
    load_chunk(K, k_slot, hk, kbuf, t0, t1);
    for (std::uint32_t q = 0; q < nq; ++q) {
      const std::uint32_t m = pick_rows(q, t0, t1);
      if (m == 0) continue;
      for (std::uint32_t r = 0; r < nh; r += 2) {
        const std::uint32_t pair = std::min(2u, nh - r);
        const float* qs[2] = {q_row(q, r), q_row(q, r + pair - 1)};
        float* outs[2] = {score_row(q, r) + s.count[q], score_row(q, r + pair - 1) + s.count[q]};
        if (kF16 && !widen)
          kern.scores_f16(qs, pair, s.pick_h, m, hk, b.scale, outs);
        else
          kern.scores_f32(qs, pair, s.pick_f, m, hk, b.scale, outs);
      }
      s.count[q] += m;
    }
  }

  // Softmax with the maximum subtracted, so exp never overflows; exp and the sum run in slot order.
  for (std::uint32_t q = 0; q < nq; ++q)
    for (std::uint32_t r = 0; r < nh; ++r) {
      float* sc = score_row(q, r);
      const std::uint32_t n = s.count[q];
      if (n == 0) continue;
      const float mx = kern.max(sc, n);
      float sum = 0.0f;
      for (std::uint32_t t = 0; t < n; ++t) {
        sc[t] = std::exp(sc[t] - mx);
        sum += sc[t];
      }
      s.inv_sum[q * nh + r] = 1.0f / sum;
    }

  std::fill_n(s.acc.get(), static_cast<std::size_t>(nq) * nh * hv, 0.0f);
  std::uint32_t used[kQueryBlock] = {};
  for (std::uint32_t t0 = 0; t0 < n_slots; t0 += kSlotChunk) {
    const std::uint32_t t1 = std::min(n_slots, t0 + kSlotChunk);
    if (t1 < n_slots) prefetch_chunk(V, v_slot, hv, t1);
    load_chunk(V, v_slot, hv, vbuf, t0, t1);
    for (std::uint32_t q = 0; q < nq; ++q) {
      const std::uint32_t m = pick_rows(q, t0, t1);
      if (m == 0) continue;
      for (std::uint32_t r = 0; r < nh; r += 2) {
        const std::uint32_t pair = std::min(2u, nh - r);
        float* accs[2] = {acc_row(q, r), acc_row(q, r + pair - 1)};
        const float* ps[2] = {score_row(q, r) + used[q], score_row(q, r + pair - 1) + used[q]};
        if (kF16 && !widen)
          kern.values_f16(accs, ps, pair, s.pick_h, m, hv);
        else
          kern.values_f32(accs, ps, pair, s.pick_f, m, hv);
      }
      used[q] += m;
    }
  }
  for (std::uint32_t q = 0; q < nq; ++q)
    for (std::uint32_t r = 0; r < nh; ++r) {
      float* o = mutable_row(job.out, g * job.n_rep + r0 + r, i0 + q);
      if (s.count[q] == 0) {  // nothing visible: defined as a zero output rather than 0/0
        std::fill_n(o, hv, 0.0f);
        continue;
      }
      const float* a = acc_row(q, r);
      const float inv = s.inv_sum[q * nh + r];
      for (std::uint32_t d = 0; d < hv; ++d) o[d] = a[d] * inv;
    }
}

}  // namespace

// Unit u: query block u / (n_kv_heads * groups), then KV head, then head group.
void run_units_simd(const AttnJob& job, const AttnKernels& kernels, std::uint32_t heads_per_unit, std::size_t begin,
                    std::size_t end) {
  const std::uint32_t groups = (job.n_rep + heads_per_unit - 1) / heads_per_unit;
  const std::size_t per_block = static_cast<std::size_t>(job.cache.n_kv_heads) * groups;
  Scratch s(job, heads_per_unit);
  for (std::size_t u = begin; u < end; ++u) {
    const auto blk = static_cast<std::uint32_t>(u / per_block);
    const auto g = static_cast<std::uint32_t>(u % per_block / groups);
    const auto grp = static_cast<std::uint32_t>(u % groups);
    const std::uint32_t i0 = blk * kQueryBlock, i1 = std::min(job.batch.n_query, i0 + kQueryBlock);
    const std::uint32_t r0 = grp * heads_per_unit, r1 = std::min(job.n_rep, r0 + heads_per_unit);
    if (job.cache.type == CacheType::f16)
      attend_unit<std::uint16_t>(job, kernels, i0, i1, g, r0, r1, s);
    else
      attend_unit<float>(job, kernels, i0, i1, g, r0, r1, s);
  }
}

}  // namespace graft::kv
