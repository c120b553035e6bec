// The portable attention kernel (generic C++ vectors, F16C where the CPU has it): the first
// vectorized version, which defines the operation order the SIMD kernels reproduce.
#include "attention_job.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu_features.hpp"
#include "formats/q4_0/q4_0_rows.hpp"
#include "formats/q8_0/q8_0_rows.hpp"
#include "half.hpp"
#include "query_q8.hpp"
#include "tq3_rows.hpp"
#include "softmax_exp.hpp"
#include "views.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace graft::kv {

namespace {

// The kernel is compiled twice on x86-64, for x86-64-v3 (AVX2 with FMA) and for the baseline, and
// the loader picks one per CPU (GCC/Clang function multiversioning). Products are accumulated with
// explicit fused multiply-adds (one rounding each): an FMA instruction in the first clone, libm's
// exact fmaf in the second, so results do not depend on the clone. The helpers below are forced
// inline so each clone gets its own copy.
#if defined(__x86_64__) && defined(__GNUC__)
#define GRAFT_KV_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GRAFT_KV_CLONES
#endif
#define GRAFT_KV_INLINE inline __attribute__((always_inline))

// Eight independent partial sums in one GCC/Clang vector (two SSE or NEON registers, one AVX
// register): the summation order depends only on n, so a score is the same whichever slot or
// thread computes it. Loads go through memcpy (unaligned; no vector-typed parameters).
using f32x8 = float __attribute__((vector_size(32)));

// c += a * b per lane, rounded once (references: no vector-typed parameters).
GRAFT_KV_INLINE void fma8(const f32x8& a, const f32x8& b, f32x8& c) noexcept {
  for (int l = 0; l < 8; ++l) c[l] = __builtin_fmaf(a[l], b[l], c[l]);
}

GRAFT_KV_INLINE float dot(const float* a, const float* b, std::uint32_t n) noexcept {
  f32x8 acc = {};
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 x, y;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, b + i, sizeof y);
    fma8(x, y, acc);
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail = __builtin_fmaf(a[i], b[i], tail);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

// a += p * v over n elements.
GRAFT_KV_INLINE void axpy(float* a, float p, const float* v, std::uint32_t n) noexcept {
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 x, y;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, v + i, sizeof y);
    const f32x8 pv = {p, p, p, p, p, p, p, p};
    fma8(pv, y, x);
    std::memcpy(a + i, &x, sizeof x);
  }
  for (; i < n; ++i) a[i] = __builtin_fmaf(p, v[i], a[i]);
}

// The same two operations with the query row (dot) or the accumulator row (axpy) held in
// registers across many cached rows, for the usual head sizes. Each result is computed by exactly
// the operations of dot() / axpy() above, so the bits do not depend on which form ran.
template <std::uint32_t D>
GRAFT_KV_INLINE void dots_fixed(const float* qrow, const float* const* rows, const std::uint32_t* pick, std::uint32_t n,
                                float scale, float* out) noexcept {
  f32x8 qv[D / 8];
  for (std::uint32_t e = 0; e < D / 8; ++e) std::memcpy(&qv[e], qrow + 8 * e, sizeof(f32x8));
  for (std::uint32_t j = 0; j < n; ++j) {
    const float* k = rows[pick[j]];
    f32x8 acc = {};
    for (std::uint32_t e = 0; e < D / 8; ++e) {
      f32x8 y;
      std::memcpy(&y, k + 8 * e, sizeof y);
      fma8(qv[e], y, acc);
    }
    const float tail = 0.0f;  // dot() adds its (empty) tail too: -0 + 0 is +0
    out[j] = (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail) * scale;
  }
}
template <std::uint32_t D>
GRAFT_KV_INLINE void axpys_fixed(float* a, const float* p, const float* const* rows, const std::uint32_t* pick,
                                 std::uint32_t n) noexcept {
  f32x8 acc[D / 8];
  for (std::uint32_t e = 0; e < D / 8; ++e) std::memcpy(&acc[e], a + 8 * e, sizeof(f32x8));
  for (std::uint32_t j = 0; j < n; ++j) {
    const float* v = rows[pick[j]];
    const f32x8 pv = {p[j], p[j], p[j], p[j], p[j], p[j], p[j], p[j]};
    for (std::uint32_t e = 0; e < D / 8; ++e) {
      f32x8 y;
      std::memcpy(&y, v + 8 * e, sizeof y);
      fma8(pv, y, acc[e]);
    }
  }
  for (std::uint32_t e = 0; e < D / 8; ++e) std::memcpy(a + 8 * e, &acc[e], sizeof(f32x8));
}
GRAFT_KV_INLINE void dots(const float* qrow, const float* const* rows, const std::uint32_t* pick, std::uint32_t n,
                          std::uint32_t d, float scale, float* out) noexcept {
  if (d == 64) return dots_fixed<64>(qrow, rows, pick, n, scale, out);
  if (d == 128) return dots_fixed<128>(qrow, rows, pick, n, scale, out);
  for (std::uint32_t j = 0; j < n; ++j) out[j] = dot(qrow, rows[pick[j]], d) * scale;
}
GRAFT_KV_INLINE void axpys(float* a, const float* p, const float* const* rows, const std::uint32_t* pick,
                           std::uint32_t n, std::uint32_t d) noexcept {
  if (d == 64) return axpys_fixed<64>(a, p, rows, pick, n);
  if (d == 128) return axpys_fixed<128>(a, p, rows, pick, n);
  for (std::uint32_t j = 0; j < n; ++j) axpy(a, p[j], rows[pick[j]], d);
}

// Integer scores against q8_0 rows, the query rounded to q8_0 (the order attention_kernels.hpp
// defines): per block, lane l's integer sum of elements 4l..4l+3, then one fused multiply-add by
// the two scales' product.
GRAFT_KV_INLINE void dots_q8(const QueryQ8& q, const quant::block_q8_0* const* rows, const std::uint32_t* pick,
                             std::uint32_t n, std::uint32_t d, float scale, float* out) noexcept {
  for (std::uint32_t j = 0; j < n; ++j) {
    const quant::block_q8_0* k = rows[pick[j]];
    f32x8 acc = {};
    for (std::uint32_t b = 0; b < d / 32; ++b) {
      f32x8 p, s;
      for (int l = 0; l < 8; ++l) {
        std::int32_t sum = 0;
        for (int i = 4 * l; i < 4 * l + 4; ++i) sum += std::int32_t{q.qs[32 * b + i]} * k[b].qs[i];
        p[l] = static_cast<float>(sum);
        s[l] = f16_to_f32(k[b].d) * q.d[b];
      }
      fma8(p, s, acc);
    }
    const float tail = 0.0f;
    out[j] = (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail) * scale;
  }
}

// Consecutive slots of one KV head are n_kv_heads * head_dim elements apart (often a whole page) in
// a token-major cache, which the hardware prefetcher does not follow; ask for rows a few slots
// ahead explicitly.
constexpr std::uint32_t kAhead = 8;
inline void prefetch(const void* p, std::size_t bytes) noexcept {
  for (std::size_t o = 0; o < bytes; o += 64) __builtin_prefetch(static_cast<const char*>(p) + o);
}

// f16 rows are widened with F16C where the CPU has it (one instruction per 8 values) and with the
// portable routine elsewhere; both are exact, so the choice never changes a result.
using WidenFn = void (*)(const std::uint16_t* src, float* dst, std::uint32_t n);
void widen_portable(const std::uint16_t* src, float* dst, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx,f16c"))) void widen_f16c(const std::uint16_t* src, float* dst, std::uint32_t n) {
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
const WidenFn kWiden = cpu_features().f16c ? &widen_f16c : &widen_portable;
#else
const WidenFn kWiden = &widen_portable;
#endif

// A cached row as f32: f32 rows are read in place, f16 rows are converted into buf, q8_0, q4_0 and
// tq3 rows decoded into it (their dequantization: exactly the values the blocks stand for).
GRAFT_KV_INLINE const float* as_f32(const float* src, float*, std::uint32_t) noexcept { return src; }
GRAFT_KV_INLINE const float* as_f32(const std::uint16_t* src, float* buf, std::uint32_t n) noexcept {
  kWiden(src, buf, n);
  return buf;
}
GRAFT_KV_INLINE const float* as_f32(const quant::block_q8_0* src, float* buf, std::uint32_t n) noexcept {
  quant::dequantize_row_q8_0(src, buf, n);
  return buf;
}
GRAFT_KV_INLINE const float* as_f32(const quant::block_q4_0* src, float* buf, std::uint32_t n) noexcept {
  quant::dequantize_row_q4_0(src, buf, n);
  return buf;
}
GRAFT_KV_INLINE const float* as_f32(const block_tq3* src, float* buf, std::uint32_t n) noexcept {
  dequantize_row_tq3(src, buf, n);
  return buf;
}

// Working memory of one parallel_for chunk, reused for all its (query block, kv head) units.
struct Scratch {
  explicit Scratch(const AttnJob& j)
      : stride(static_cast<std::size_t>(j.batch.n_past) + j.batch.n_query),
        scores(static_cast<std::size_t>(kQueryBlock) * j.n_rep * stride),
        kbuf(static_cast<std::size_t>(kSlotChunk) * j.cache.head_dim_k),
        vbuf(static_cast<std::size_t>(kSlotChunk) * j.cache.head_dim_v),
        acc(static_cast<std::size_t>(kQueryBlock) * j.n_rep * j.cache.head_dim_v),
        inv_sum(static_cast<std::size_t>(kQueryBlock) * j.n_rep),
        union_batch(j.batch.n_query) {}
  std::size_t stride;         // scores of one (query, head) row
  std::vector<float> scores;  // [query in block][n_rep][stride], compacted to the visible slots
  std::vector<float> kbuf, vbuf, acc, inv_sum;  // kbuf/vbuf: one chunk of converted rows
  const float* rows[kSlotChunk] = {};        // the chunk's rows as f32 (in place or in a buffer)
  const quant::block_q8_0* rows_k8[kSlotChunk] = {};  // a q8_0 K's rows, scored in place
  QueryQ8Rows q8;  // the block's query rows rounded against a q8_0 K, [query][head]
  std::uint32_t pick[kSlotChunk] = {};       // chunk rows one query sees
  std::vector<std::uint32_t> union_batch;  // batch entries some query of the block sees
  std::uint32_t lo[kQueryBlock] = {};      // first visible committed slot per query (window)
  std::uint32_t count[kQueryBlock] = {};   // visible slots per query
};


// Queries [i0, i1) against KV head g, for the n_rep query heads that share g (GQA: head h uses KV
// head h / n_rep). Query i's visible slots, in ascending order: committed [lo_i, n_past), then the
// batch entries the mask allows; a key at position p is visible when qpos - p < window.
template <class KT, class VT>
GRAFT_KV_INLINE void attend_block(const AttnJob& job, std::uint32_t i0, std::uint32_t i1, std::uint32_t g, Scratch& s) {
  const LayerCache& c = job.cache;
  const MaskedBatch& b = job.batch;
  const std::uint32_t hk = c.head_dim_k, hv = c.head_dim_v, n_rep = job.n_rep, nq = i1 - i0;
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
    const std::int64_t first = b.sliding_window > 0 ? std::max<std::int64_t>(0, std::int64_t(i0) - b.sliding_window + 1) : 0;
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
  auto slot_at = [&](std::uint32_t t) { return t < n_prefix ? lo_min + t : b.n_past + s.union_batch[t - n_prefix]; };
  auto visible = [&](std::uint32_t q, std::uint32_t t) {
    return t < n_prefix ? lo_min + t >= s.lo[q] : sees_batch(job, i0 + q, s.union_batch[t - n_prefix]);
  };
  auto score_row = [&](std::uint32_t q, std::uint32_t r) {
    return s.scores.data() + (static_cast<std::size_t>(q) * n_rep + r) * stride;
  };

  const KT* K = static_cast<const KT*>(c.k) + c.k_head(g);
  const VT* V = static_cast<const VT*>(c.v) + c.v_head(g);
  const std::size_t k_slot = c.k_slot();
  const std::size_t v_slot = c.v_slot();

  // Loads the chunk [t0, t1) of cached rows (K or V) some query of the block sees as f32 rows.
  auto load_chunk = [&](const auto* base, std::size_t slot_units, std::uint32_t dim, float* buf, std::uint32_t t0,
                        std::uint32_t t1) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(base)>>;
    for (std::uint32_t t = t0; t < t1; ++t) {
      if (t + kAhead < t1) prefetch(base + slot_at(t + kAhead) * slot_units, row_bytes<T>(dim));
      s.rows[t - t0] = as_f32(base + slot_at(t) * slot_units, buf + static_cast<std::size_t>(t - t0) * dim, dim);
    }
  };
  // The chunk rows query q sees, in order.
  auto pick_rows = [&](std::uint32_t q, std::uint32_t t0, std::uint32_t t1) {
    std::uint32_t m = 0;
    for (std::uint32_t t = t0; t < t1; ++t)
      if (visible(q, t)) s.pick[m++] = t - t0;
    return m;
  };

  if constexpr (std::is_same_v<KT, quant::block_q8_0>) {
    s.q8.prepare(static_cast<std::size_t>(nq) * n_rep, hk);
    for (std::uint32_t q = 0; q < nq; ++q)
      for (std::uint32_t r = 0; r < n_rep; ++r)
        s.q8.round(static_cast<std::size_t>(q) * n_rep + r, row(job.q, g * n_rep + r, i0 + q));
  }
  for (std::uint32_t t0 = 0; t0 < n_slots; t0 += kSlotChunk) {
    const std::uint32_t t1 = std::min(n_slots, t0 + kSlotChunk);
    if constexpr (std::is_same_v<KT, quant::block_q8_0>) {
      for (std::uint32_t t = t0; t < t1; ++t) {
        if (t + kAhead < t1) prefetch(K + slot_at(t + kAhead) * k_slot, row_bytes<KT>(hk));
        s.rows_k8[t - t0] = K + slot_at(t) * k_slot;
      }
    } else {
      load_chunk(K, k_slot, hk, s.kbuf.data(), t0, t1);
    }
    for (std::uint32_t q = 0; q < nq; ++q) {
      const std::uint32_t m = pick_rows(q, t0, t1);
      for (std::uint32_t r = 0; r < n_rep; ++r) {
        float* out = score_row(q, r) + s.count[q];
        if constexpr (std::is_same_v<KT, quant::block_q8_0>)
          dots_q8(s.q8[static_cast<std::size_t>(q) * n_rep + r], s.rows_k8, s.pick, m, hk, b.scale, out);
        else
          dots(row(job.q, g * n_rep + r, i0 + q), s.rows, s.pick, m, hk, b.scale, out);
      }
      s.count[q] += m;
    }
  }

  // Softmax with the maximum subtracted, so exp never overflows.
  for (std::uint32_t q = 0; q < nq; ++q)
    for (std::uint32_t r = 0; r < n_rep; ++r) {
      float* sc = score_row(q, r);
      float m = -std::numeric_limits<float>::infinity();
      for (std::uint32_t t = 0; t < s.count[q]; ++t) m = std::max(m, sc[t]);
      float sum = 0.0f;
      for (std::uint32_t t = 0; t < s.count[q]; ++t) {
        sc[t] = softmax_exp(sc[t] - m);
        sum += sc[t];
      }
      s.inv_sum[q * n_rep + r] = 1.0f / sum;
      if (job.lse)
        job.lse[static_cast<std::size_t>(i0 + q) * job.q.ne[1] + g * n_rep + r] =
            s.count[q] ? m + std::log(sum) : -std::numeric_limits<float>::infinity();
    }

  std::fill_n(s.acc.begin(), static_cast<std::size_t>(nq) * n_rep * hv, 0.0f);
  std::uint32_t used[kQueryBlock] = {};
  for (std::uint32_t t0 = 0; t0 < n_slots; t0 += kSlotChunk) {
    const std::uint32_t t1 = std::min(n_slots, t0 + kSlotChunk);
    load_chunk(V, v_slot, hv, s.vbuf.data(), t0, t1);
    for (std::uint32_t q = 0; q < nq; ++q) {
      const std::uint32_t m = pick_rows(q, t0, t1);
      for (std::uint32_t r = 0; r < n_rep; ++r)
        axpys(s.acc.data() + (static_cast<std::size_t>(q) * n_rep + r) * hv, score_row(q, r) + used[q], s.rows,
              s.pick, m, hv);
      used[q] += m;
    }
  }
  for (std::uint32_t q = 0; q < nq; ++q)
    for (std::uint32_t r = 0; r < n_rep; ++r) {
      float* o = mutable_row(job.out, g * n_rep + r, i0 + q);
      if (s.count[q] == 0) {  // nothing visible: defined as a zero output rather than 0/0
        std::fill_n(o, hv, 0.0f);
        continue;
      }
      const float* a = s.acc.data() + (static_cast<std::size_t>(q) * n_rep + r) * hv;
      const float inv = s.inv_sum[q * n_rep + r];
      for (std::uint32_t d = 0; d < hv; ++d) o[d] = a[d] * inv;
    }
}

// Work unit u: query block u / n_kv_heads, KV head u % n_kv_heads.
template <class KT, class VT>
GRAFT_KV_INLINE void run_units(const AttnJob& job, std::size_t begin, std::size_t end, Scratch& s) {
  for (std::size_t u = begin; u < end; ++u) {
    const auto blk = static_cast<std::uint32_t>(u / job.cache.n_kv_heads);
    const std::uint32_t i0 = blk * kQueryBlock, i1 = std::min(job.batch.n_query, i0 + kQueryBlock);
    attend_block<KT, VT>(job, i0, i1, static_cast<std::uint32_t>(u % job.cache.n_kv_heads), s);
  }
}

// One clone pair per K type, over every V type.
template <class KT>
GRAFT_KV_INLINE void run_units_v(const AttnJob& job, std::size_t begin, std::size_t end, Scratch& s) {
  switch (job.cache.v_type) {
    case CacheType::f32: return run_units<KT, float>(job, begin, end, s);
    case CacheType::f16: return run_units<KT, std::uint16_t>(job, begin, end, s);
    case CacheType::q8_0: return run_units<KT, quant::block_q8_0>(job, begin, end, s);
    case CacheType::q4_0: return run_units<KT, quant::block_q4_0>(job, begin, end, s);
    case CacheType::tq3: return run_units<KT, block_tq3>(job, begin, end, s);
  }
}
GRAFT_KV_CLONES void run_units_f16(const AttnJob& job, std::size_t begin, std::size_t end, Scratch& s) {
  run_units_v<std::uint16_t>(job, begin, end, s);
}
GRAFT_KV_CLONES void run_units_f32(const AttnJob& job, std::size_t begin, std::size_t end, Scratch& s) {
  run_units_v<float>(job, begin, end, s);
}
GRAFT_KV_CLONES void run_units_q8_0(const AttnJob& job, std::size_t begin, std::size_t end, Scratch& s) {
  run_units_v<quant::block_q8_0>(job, begin, end, s);
}
GRAFT_KV_CLONES void run_units_q4_0(const AttnJob& job, std::size_t begin, std::size_t end, Scratch& s) {
  run_units_v<quant::block_q4_0>(job, begin, end, s);
}
GRAFT_KV_CLONES void run_units_tq3(const AttnJob& job, std::size_t begin, std::size_t end, Scratch& s) {
  run_units_v<block_tq3>(job, begin, end, s);
}

}  // namespace

void run_units_portable(const AttnJob& job, std::size_t begin, std::size_t end) {
  Scratch s(job);
  switch (job.cache.k_type) {
    case CacheType::f32: return run_units_f32(job, begin, end, s);
    case CacheType::f16: return run_units_f16(job, begin, end, s);
    case CacheType::q8_0: return run_units_q8_0(job, begin, end, s);
    case CacheType::q4_0: return run_units_q4_0(job, begin, end, s);
    case CacheType::tq3: return run_units_tq3(job, begin, end, s);
  }
}

}  // namespace graft::kv
