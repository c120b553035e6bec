// The SIMD attention path: which slots each query sees, softmax and output, around the
// instruction-set kernels of attention_kernels.hpp. Compiled for the baseline ISA; the kernels
// bring their own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>

#include "attention_job.hpp"
#include "views.hpp"

namespace graft::kv {

namespace {

using quant::block_q4_0;
using quant::block_q8_0;

template <class E>
E* grow(std::unique_ptr<E[]>& b, std::size_t n) {
  if (!b) b = std::make_unique_for_overwrite<E[]>(n);
  return b.get();
}

// Working memory of one parallel_for chunk, reused for all its units. Nothing is initialized
// here: every element is written before it is read.
struct Scratch {
  Scratch(const AttnJob& j, std::uint32_t heads)
      : stride(static_cast<std::size_t>(j.batch.n_past) + j.batch.n_query),
        rows(static_cast<std::size_t>(std::min(kQueryBlock, j.batch.n_query)) * heads),
        scores(std::make_unique_for_overwrite<float[]>(rows * stride)),
        acc(std::make_unique_for_overwrite<float[]>(rows * j.cache.head_dim_v)),
        sums(std::make_unique_for_overwrite<float[]>(rows)),
        maxes(std::make_unique_for_overwrite<float[]>(rows)),
        union_batch(std::make_unique_for_overwrite<std::uint32_t[]>(j.batch.n_query)) {}

  // A query's visible K rows (V: v_list) of one type (query by query path), allocated on first use.
  template <class T>
  const T** k_list() {
    return grow(std::get<Lists<T>>(lists_).k, stride);
  }
  template <class T>
  const T** v_list() {
    return grow(std::get<Lists<T>>(lists_).v, stride);
  }

  std::size_t stride;                            // scores of one (query, head) row
  std::size_t rows;                              // (query, head) rows of a unit at most
  std::unique_ptr<float[]> scores;               // [query in block][head][stride], compacted to visible slots
  std::unique_ptr<float[]> acc, sums, maxes;     // [query][head][head_dim_v], [query][head] x 2
  std::unique_ptr<std::uint32_t[]> union_batch;  // batch entries some query of the block sees
  std::unique_ptr<float[]> kbuf, vbuf;           // one chunk of widened f16 rows
  QueryQ8Rows q8;  // the unit's query rows rounded against a q8_0 K, [query][head]
  std::uint32_t lo[kQueryBlock] = {};            // first visible committed slot per query (window)
  std::uint32_t count[kQueryBlock] = {};         // visible slots per query
  std::uint32_t seen_begin[kQueryBlock] = {};    // causal batches: query q sees slots [begin, end)
  std::uint32_t seen_end[kQueryBlock] = {};
  // A chunk's rows as the kernels read them, and the ones one query sees.
  const float* rows_f[kSlotChunk] = {};
  const float* pick_f[kSlotChunk] = {};
  const block_q8_0* rows_k8[kSlotChunk] = {};  // a chunk's q8_0 K rows, read in place
  const block_q8_0* pick_k8[kSlotChunk] = {};

 private:
  template <class T>
  struct Lists {
    std::unique_ptr<const T*[]> k, v;
  };
  std::tuple<Lists<float>, Lists<std::uint16_t>, Lists<block_q8_0>, Lists<block_q4_0>, Lists<block_tq3>> lists_;
};

inline void prefetch(const void* p, std::size_t bytes) noexcept {
  for (std::size_t o = 0; o < bytes; o += 64) __builtin_prefetch(static_cast<const char*>(p) + o);
}

// Scores, softmax numerators and V sums with the kernels; the two heads of a pair share each row's
// loads (and f16 conversion).
template <class T>
void kernel_scores(const AttnKernels& k, const float* const* q, std::uint32_t nh, const T* const* rows,
                   std::uint32_t n, std::uint32_t d, float scale, float* const* out, std::uint32_t listed) {
  if constexpr (std::is_same_v<T, float>)
    k.scores_f32(q, nh, rows, n, d, scale, out, listed);
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    k.scores_f16(q, nh, rows, n, d, scale, out, listed);
  else if constexpr (std::is_same_v<T, block_q4_0>)
    k.scores_q4_0(q, nh, rows, n, d, scale, out, listed);
  else
    k.scores_tq3(q, nh, rows, n, d, scale, out, listed);
}
template <class T>
void kernel_values(const AttnKernels& k, float* const* acc, float* sum, const float* const* p, std::uint32_t nh,
                   const T* const* rows, std::uint32_t n, std::uint32_t d, std::uint32_t listed) {
  if constexpr (std::is_same_v<T, float>)
    k.values_f32(acc, sum, p, nh, rows, n, d, listed);
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    k.values_f16(acc, sum, p, nh, rows, n, d, listed);
  else if constexpr (std::is_same_v<T, block_q8_0>)
    k.values_q8_0(acc, sum, p, nh, rows, n, d, listed);
  else if constexpr (std::is_same_v<T, block_q4_0>)
    k.values_q4_0(acc, sum, p, nh, rows, n, d, listed);
  else
    k.values_tq3(acc, sum, p, nh, rows, n, d, listed);
}

// Queries [i0, i1) against KV head g, for its query heads [r0, r1) (head g * n_rep + r). Query i
// sees, in ascending order, committed slots [lo_i, n_past) and then the batch entries the mask
// allows; a key at position p is visible when qpos - p < window.
template <class KT, class VT>
class Unit {
 public:
  Unit(const AttnJob& job, const AttnKernels& kern, std::uint32_t i0, std::uint32_t i1, std::uint32_t g,
       std::uint32_t r0, std::uint32_t r1, Scratch& s)
      : job_(job), kern_(kern), b_(job.batch), s_(s), i0_(i0), nq_(i1 - i0), g_(g), r0_(r0), nh_(r1 - r0),
        hk_(job.cache.head_dim_k), hv_(job.cache.head_dim_v),
        K_(static_cast<const KT*>(job.cache.k) + job.cache.k_head(g)),
        V_(static_cast<const VT*>(job.cache.v) + job.cache.v_head(g)),
        k_slot_(job.cache.k_slot()),
        v_slot_(job.cache.v_slot()) {
    lo_min_ = b_.n_past;
    for (std::uint32_t q = 0; q < nq_; ++q) {
      const std::int64_t qpos = static_cast<std::int64_t>(b_.n_past) + job.depth[i0 + q];
      s.lo[q] = b_.sliding_window > 0
                    ? static_cast<std::uint32_t>(std::clamp<std::int64_t>(qpos - b_.sliding_window + 1, 0, b_.n_past))
                    : 0;
      lo_min_ = std::min(lo_min_, s.lo[q]);
      s.count[q] = 0;
    }
    n_union_ = 0;
    if (!b_.ancestor) {  // causal: entries [i0 - window + 1, i1) (depth = index), no scan needed
      const std::int64_t first =
          b_.sliding_window > 0 ? std::max<std::int64_t>(0, std::int64_t(i0) - b_.sliding_window + 1) : 0;
      for (auto j = static_cast<std::uint32_t>(first); j < i1; ++j) s.union_batch[n_union_++] = j;
    } else {
      for (std::uint32_t j = 0; j < b_.n_query; ++j)
        for (std::uint32_t q = 0; q < nq_; ++q)
          if (sees_batch(job, i0 + q, j)) {
            s.union_batch[n_union_++] = j;
            break;
          }
    }
    // The block's slots in the order every query visits its own: committed ones, then batch ones.
    n_prefix_ = b_.n_past - lo_min_;
    n_slots_ = n_prefix_ + n_union_;
    if (!b_.ancestor) {
      // Causal: query i0 + q sees batch entries up to its own, and of the slots before them those
      // within the window; a window that ends inside the batch leaves no committed slot, so the
      // visible slots are one range, which visible() would find one slot at a time.
      const std::uint32_t first = n_union_ > 0 ? s.union_batch[0] : i0;
      for (std::uint32_t q = 0; q < nq_; ++q) {
        const std::uint32_t i = i0 + q;
        std::uint32_t begin = s.lo[q] - lo_min_;
        if (begin == n_prefix_ && b_.sliding_window > 0)
          begin = n_prefix_ + static_cast<std::uint32_t>(
                                  std::max<std::int64_t>(first, std::int64_t(i) - b_.sliding_window + 1) - first);
        s.seen_begin[q] = begin;
        s.seen_end[q] = n_prefix_ + (i + 1 - first);
      }
    }
  }

  void run() {
    if constexpr (std::is_same_v<KT, block_q8_0>) quantize_queries();
    if (nq_ * nh_ <= kern_.direct_rows)
      by_query();
    else
      by_chunk();
  }

 private:
  std::size_t slot_at(std::uint32_t t) const {
    return t < n_prefix_ ? lo_min_ + t : b_.n_past + s_.union_batch[t - n_prefix_];
  }
  bool visible(std::uint32_t q, std::uint32_t t) const {
    return t < n_prefix_ ? lo_min_ + t >= s_.lo[q] : sees_batch(job_, i0_ + q, s_.union_batch[t - n_prefix_]);
  }
  float* score_row(std::uint32_t q, std::uint32_t r) const {
    return s_.scores.get() + (static_cast<std::size_t>(q) * nh_ + r) * s_.stride;
  }
  float* acc_row(std::uint32_t q, std::uint32_t r) const {
    return s_.acc.get() + (static_cast<std::size_t>(q) * nh_ + r) * hv_;
  }
  const float* q_row(std::uint32_t q, std::uint32_t r) const {
    return row(job_.q, g_ * job_.n_rep + r0_ + r, i0_ + q);
  }

  // The unit's query rows rounded to q8_0 once, for every chunk of a q8_0 K.
  void quantize_queries() {
    s_.q8.prepare(static_cast<std::size_t>(nq_) * nh_, hk_);
    for (std::uint32_t q = 0; q < nq_; ++q)
      for (std::uint32_t r = 0; r < nh_; ++r) s_.q8.round(static_cast<std::size_t>(q) * nh_ + r, q_row(q, r));
  }

  // Scores of query q's heads r and r + pair - 1 against n rows, stored from slot `at` on: the f32
  // operations, or the integer ones against a q8_0 K.
  template <class T>
  void scores(std::uint32_t q, std::uint32_t r, std::uint32_t pair, const T* const* rows, std::uint32_t n,
              std::uint32_t at, std::uint32_t listed) {
    float* outs[2] = {score_row(q, r) + at, score_row(q, r + pair - 1) + at};
    if constexpr (std::is_same_v<T, block_q8_0>) {
      const QueryQ8 qs[2] = {s_.q8[q * nh_ + r], s_.q8[q * nh_ + r + pair - 1]};
      kern_.scores_q8_0(qs, pair, rows, n, hk_, b_.scale, outs, listed);
    } else {
      const float* qs[2] = {q_row(q, r), q_row(q, r + pair - 1)};
      kernel_scores(kern_, qs, pair, rows, n, hk_, b_.scale, outs, listed);
    }
  }

  // Softmax numerators exp(score - max) in place (their sum is taken in slot order with V).
  void exponentiate(std::uint32_t q) {
    const std::uint32_t n = s_.count[q];
    for (std::uint32_t r = 0; r < nh_; ++r) {
      float* sc = score_row(q, r);
      const float m = kern_.max(sc, n);
      s_.maxes[q * nh_ + r] = m;
      kern_.exp_shifted(sc, n, m);
    }
  }

  void write_output(std::uint32_t q) {
    for (std::uint32_t r = 0; r < nh_; ++r) {
      float* o = mutable_row(job_.out, g_ * job_.n_rep + r0_ + r, i0_ + q);
      if (job_.lse)
        job_.lse[static_cast<std::size_t>(i0_ + q) * job_.q.ne[1] + g_ * job_.n_rep + r0_ + r] =
            s_.count[q] ? s_.maxes[q * nh_ + r] + std::log(s_.sums[q * nh_ + r])
                        : -std::numeric_limits<float>::infinity();
      if (s_.count[q] == 0) {  // nothing visible: defined as a zero output rather than 0/0
        std::fill_n(o, hv_, 0.0f);
        continue;
      }
      const float* a = acc_row(q, r);
      const float inv = 1.0f / s_.sums[q * nh_ + r];
      for (std::uint32_t d = 0; d < hv_; ++d) o[d] = a[d] * inv;
    }
  }

  // Few (query, head) rows (decode): each query walks its own list of visible rows, which the
  // kernels read in place (f16 converted in registers) and prefetch ahead.
  void by_query() {
    const KT** kp = s_.template k_list<KT>();
    const VT** vp = s_.template v_list<VT>();
    for (std::uint32_t q = 0; q < nq_; ++q) {
      std::uint32_t n = 0;
      for (std::uint32_t t = s_.lo[q] - lo_min_; t < n_prefix_; ++t, ++n) {
        const std::size_t slot = lo_min_ + t;
        kp[n] = K_ + slot * k_slot_;
        vp[n] = V_ + slot * v_slot_;
      }
      for (std::uint32_t t = n_prefix_; t < n_slots_; ++t)
        if (visible(q, t)) {
          kp[n] = K_ + slot_at(t) * k_slot_;
          vp[n] = V_ + slot_at(t) * v_slot_;
          ++n;
        }
      s_.count[q] = n;
      if (n > 0) {
        // The kernels prefetch rows some way ahead of the one they read; the first ones of K
        // (and V, below) are asked for here, all at once, rather than met one by one.
        for (std::uint32_t j = 0; j < std::min(n, 32u); ++j) prefetch(kp[j], row_bytes<KT>(hk_));
        // Runs of kRun rows, every head pair per run, so a pair after the first finds the rows in
        // cache (a whole context per pair would not fit).
        constexpr std::uint32_t kRun = 256;
        for (std::uint32_t c0 = 0; c0 < n; c0 += kRun)
          for (std::uint32_t r = 0; r < nh_; r += 2)
            scores(q, r, std::min(2u, nh_ - r), kp + c0, std::min(kRun, n - c0), c0, n - c0);
        for (std::uint32_t j = 0; j < std::min(n, 16u); ++j) prefetch(vp[j], row_bytes<VT>(hv_));
        exponentiate(q);
        std::fill_n(acc_row(q, 0), static_cast<std::size_t>(nh_) * hv_, 0.0f);
        std::fill_n(&s_.sums[q * nh_], nh_, 0.0f);
        for (std::uint32_t c0 = 0; c0 < n; c0 += kRun)
          for (std::uint32_t r = 0; r < nh_; r += 2) {
            const std::uint32_t pair = std::min(2u, nh_ - r);
            float* accs[2] = {acc_row(q, r), acc_row(q, r + pair - 1)};
            const float* ps[2] = {score_row(q, r) + c0, score_row(q, r + pair - 1) + c0};
            kernel_values(kern_, accs, &s_.sums[q * nh_ + r], ps, pair, vp + c0, std::min(kRun, n - c0), hv_, n - c0);
          }
      }
      write_output(q);
    }
  }

  // Many rows (verification, prefill): kSlotChunk cached rows at a time, f16 widened or blocks
  // decoded once into a buffer that every query of the block then reads from L1 (a q8_0 K's blocks
  // are read in place by the integer scores).
  void by_chunk() {
    constexpr bool kInPlaceK = std::is_same_v<KT, float> || std::is_same_v<KT, block_q8_0>;
    float* const kbuf = kInPlaceK ? nullptr : grow(s_.kbuf, static_cast<std::size_t>(kSlotChunk) * hk_);
    float* const vbuf = std::is_same_v<VT, float> ? nullptr : grow(s_.vbuf, static_cast<std::size_t>(kSlotChunk) * hv_);
    constexpr std::uint32_t kAhead = 8;
    // The chunk [t0, t1) of rows as f32: in place, or converted into buf.
    auto load_chunk = [&](const auto* base, std::size_t slot_units, std::uint32_t dim, float* buf, std::uint32_t t0,
                          std::uint32_t t1) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(base)>>;
      for (std::uint32_t t = t0; t < t1; ++t) {
        if (t + kAhead < t1) prefetch(base + slot_at(t + kAhead) * slot_units, row_bytes<T>(dim));
        const T* src = base + slot_at(t) * slot_units;
        float* w = buf + static_cast<std::size_t>(t - t0) * dim;
        if constexpr (std::is_same_v<T, float>) {
          s_.rows_f[t - t0] = src;
          continue;
        } else if constexpr (std::is_same_v<T, std::uint16_t>) {
          kern_.widen(src, w, dim);
        } else if constexpr (std::is_same_v<T, block_q8_0>) {
          kern_.decode_q8_0(src, w, dim);
        } else if constexpr (std::is_same_v<T, block_q4_0>) {
          kern_.decode_q4_0(src, w, dim);
        } else {
          kern_.decode_tq3(src, w, dim);
        }
        s_.rows_f[t - t0] = w;
      }
    };
    // Query q's rows of the chunk [t0, t1) out of the chunk's rows `all`: their count, and where
    // their pointers start (in `all`, or copied to `pick` under a mask).
    auto pick_rows = [&]<class R>(std::uint32_t q, std::uint32_t t0, std::uint32_t t1, const R* const* all,
                                  const R** pick) -> std::pair<std::uint32_t, const R* const*> {
      if (!b_.ancestor) {
        const std::uint32_t lo = std::max(t0, s_.seen_begin[q]), hi = std::min(t1, s_.seen_end[q]);
        return {hi > lo ? hi - lo : 0, all + (lo - t0)};
      }
      std::uint32_t m = 0;
      for (std::uint32_t t = t0; t < t1; ++t)
        if (visible(q, t)) pick[m++] = all[t - t0];
      return {m, pick};
    };

    auto pick_k = [&](std::uint32_t q, std::uint32_t t0, std::uint32_t t1) {
      if constexpr (std::is_same_v<KT, block_q8_0>)
        return pick_rows(q, t0, t1, s_.rows_k8, s_.pick_k8);
      else
        return pick_rows(q, t0, t1, s_.rows_f, s_.pick_f);
    };

    for (std::uint32_t t0 = 0; t0 < n_slots_; t0 += kSlotChunk) {
      const std::uint32_t t1 = std::min(n_slots_, t0 + kSlotChunk);
      if constexpr (std::is_same_v<KT, block_q8_0>) {
        for (std::uint32_t t = t0; t < t1; ++t) {
          if (t + kAhead < t1) prefetch(K_ + slot_at(t + kAhead) * k_slot_, row_bytes<KT>(hk_));
          s_.rows_k8[t - t0] = K_ + slot_at(t) * k_slot_;
        }
      } else {
        load_chunk(K_, k_slot_, hk_, kbuf, t0, t1);
      }
      for (std::uint32_t q = 0; q < nq_; ++q) {
        const auto [m, picked] = pick_k(q, t0, t1);
        if (m == 0) continue;
        for (std::uint32_t r = 0; r < nh_; r += 2) scores(q, r, std::min(2u, nh_ - r), picked, m, s_.count[q], 0);
        s_.count[q] += m;
      }
    }
    for (std::uint32_t q = 0; q < nq_; ++q) exponentiate(q);

    std::fill_n(s_.acc.get(), static_cast<std::size_t>(nq_) * nh_ * hv_, 0.0f);
    std::fill_n(s_.sums.get(), static_cast<std::size_t>(nq_) * nh_, 0.0f);
    std::uint32_t used[kQueryBlock] = {};
    for (std::uint32_t t0 = 0; t0 < n_slots_; t0 += kSlotChunk) {
      const std::uint32_t t1 = std::min(n_slots_, t0 + kSlotChunk);
      load_chunk(V_, v_slot_, hv_, vbuf, t0, t1);
      for (std::uint32_t q = 0; q < nq_; ++q) {
        const auto [m, picked] = pick_rows(q, t0, t1, s_.rows_f, s_.pick_f);
        if (m == 0) continue;
        for (std::uint32_t r = 0; r < nh_; r += 2) {
          const std::uint32_t pair = std::min(2u, nh_ - r);
          float* accs[2] = {acc_row(q, r), acc_row(q, r + pair - 1)};
          const float* ps[2] = {score_row(q, r) + used[q], score_row(q, r + pair - 1) + used[q]};
          kern_.values_f32(accs, &s_.sums[q * nh_ + r], ps, pair, picked, m, hv_, 0);
        }
        used[q] += m;
      }
    }
    for (std::uint32_t q = 0; q < nq_; ++q) write_output(q);
  }

  const AttnJob& job_;
  const AttnKernels& kern_;
  const MaskedBatch& b_;
  Scratch& s_;
  std::uint32_t i0_, nq_, g_, r0_, nh_, hk_, hv_;
  const KT* K_;
  const VT* V_;
  std::size_t k_slot_, v_slot_;
  std::uint32_t lo_min_ = 0, n_union_ = 0, n_prefix_ = 0, n_slots_ = 0;
};

template <class KT>
void run_unit_v(const AttnJob& job, const AttnKernels& kernels, std::uint32_t i0, std::uint32_t i1, std::uint32_t g,
                std::uint32_t r0, std::uint32_t r1, Scratch& s) {
  switch (job.cache.v_type) {
    case CacheType::f32: return Unit<KT, float>(job, kernels, i0, i1, g, r0, r1, s).run();
    case CacheType::f16: return Unit<KT, std::uint16_t>(job, kernels, i0, i1, g, r0, r1, s).run();
    case CacheType::q8_0: return Unit<KT, block_q8_0>(job, kernels, i0, i1, g, r0, r1, s).run();
    case CacheType::q4_0: return Unit<KT, block_q4_0>(job, kernels, i0, i1, g, r0, r1, s).run();
    case CacheType::tq3: return Unit<KT, block_tq3>(job, kernels, i0, i1, g, r0, r1, s).run();
  }
}
void run_unit(const AttnJob& job, const AttnKernels& kernels, std::uint32_t i0, std::uint32_t i1, std::uint32_t g,
              std::uint32_t r0, std::uint32_t r1, Scratch& s) {
  switch (job.cache.k_type) {
    case CacheType::f32: return run_unit_v<float>(job, kernels, i0, i1, g, r0, r1, s);
    case CacheType::f16: return run_unit_v<std::uint16_t>(job, kernels, i0, i1, g, r0, r1, s);
    case CacheType::q8_0: return run_unit_v<block_q8_0>(job, kernels, i0, i1, g, r0, r1, s);
    case CacheType::q4_0: return run_unit_v<block_q4_0>(job, kernels, i0, i1, g, r0, r1, s);
    case CacheType::tq3: return run_unit_v<block_tq3>(job, kernels, i0, i1, g, r0, r1, s);
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
    run_unit(job, kernels, i0, i1, g, r0, r1, s);
  }
}

}  // namespace graft::kv
