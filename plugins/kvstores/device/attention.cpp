#include "attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "f16.hpp"
#include "views.hpp"

namespace graft::kv {

namespace {

// The kernel is compiled twice on x86-64, for AVX2 and for the baseline, and the loader picks one
// per CPU (GCC/Clang function multiversioning). Neither target has FMA, so both round every
// multiply and add alike and results do not depend on the clone. The helpers below are forced
// inline so each clone gets its own copy.
#if defined(__x86_64__) && defined(__GNUC__)
#define GRAFT_KV_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GRAFT_KV_CLONES
#endif
#define GRAFT_KV_INLINE inline __attribute__((always_inline))

// Eight independent partial sums in one GCC/Clang vector (two SSE or NEON registers, one AVX
// register): the summation order depends only on n, so a score is the same whichever slot or
// thread computes it. Loads go through memcpy (unaligned; no vector-typed parameters).
using f32x8 = float __attribute__((vector_size(32)));

GRAFT_KV_INLINE float dot(const float* a, const float* b, std::uint32_t n) noexcept {
  f32x8 acc = {};
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 x, y;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, b + i, sizeof y);
    acc += x * y;
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

// a += p * v over n elements.
GRAFT_KV_INLINE void axpy(float* a, float p, const float* v, std::uint32_t n) noexcept {
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 x, y;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, v + i, sizeof y);
    x += p * y;
    std::memcpy(a + i, &x, sizeof x);
  }
  for (; i < n; ++i) a[i] += p * v[i];
}

// Consecutive slots of one KV head are n_kv_heads * head_dim elements apart (often a whole page),
// which the hardware prefetcher does not follow; ask for rows a few slots ahead explicitly.
constexpr std::uint32_t kAhead = 8;
inline void prefetch(const void* p, std::size_t bytes) noexcept {
  for (std::size_t o = 0; o < bytes; o += 64) __builtin_prefetch(static_cast<const char*>(p) + o);
}

// A cached row as f32: f32 rows are read in place, f16 rows are converted into buf.
GRAFT_KV_INLINE const float* as_f32(const float* src, float*, std::uint32_t) noexcept { return src; }
GRAFT_KV_INLINE const float* as_f32(const std::uint16_t* src, float* buf, std::uint32_t n) noexcept {
  for (std::uint32_t i = 0; i < n; ++i) buf[i] = f16_to_f32(src[i]);
  return buf;
}

struct Job {
  const LayerCache& cache;
  const TensorView& q;
  const TensorView& out;
  const AttentionBatch& batch;
  const std::vector<std::uint32_t>& depth;  // query i sits at position n_past + depth[i]
  std::uint32_t n_rep;                      // query heads per KV head
};

// Working memory of one parallel_for chunk, reused for all its (query, kv head) pairs.
struct Scratch {
  explicit Scratch(const Job& j)
      : scores(static_cast<std::size_t>(j.n_rep) * (j.batch.n_past + j.batch.n_query)),
        krow(j.cache.head_dim_k),
        vrow(j.cache.head_dim_v),
        acc(static_cast<std::size_t>(j.n_rep) * j.cache.head_dim_v),
        inv_sum(j.n_rep),
        batch_slots(j.batch.n_query) {}
  std::vector<float> scores;  // n_rep rows of stride n_past + n_query
  std::vector<float> krow, vrow, acc, inv_sum;
  std::vector<std::uint32_t> batch_slots;
};

// Query i against KV head g, for the n_rep query heads that share g (GQA: head h uses KV head
// h / n_rep), so each cached row is read and converted once for all of them.
template <class T>
GRAFT_KV_INLINE void attend_pair(const Job& job, std::uint32_t i, std::uint32_t g, Scratch& s) {
  const LayerCache& c = job.cache;
  const AttentionBatch& b = job.batch;
  const std::uint32_t hk = c.head_dim_k, hv = c.head_dim_v, n_rep = job.n_rep;
  const std::size_t stride = static_cast<std::size_t>(b.n_past) + b.n_query;
  const std::int64_t window = b.sliding_window;
  const std::int64_t qpos = static_cast<std::int64_t>(b.n_past) + job.depth[i];

  // Visible slots in ascending order: committed [lo, n_past), then the batch entries the mask
  // allows. With a window, a key at position p is visible when qpos - p < window.
  std::uint32_t lo = 0;
  if (window > 0) lo = static_cast<std::uint32_t>(std::clamp<std::int64_t>(qpos - window + 1, 0, b.n_past));
  const std::uint32_t n_prefix = b.n_past - lo;
  std::uint32_t n_batch = 0;
  for (std::uint32_t j = 0; j < b.n_query; ++j) {
    const bool seen = b.ancestor ? b.ancestor[static_cast<std::size_t>(i) * b.n_query + j] != 0 : j <= i;
    if (!seen) continue;
    if (window > 0 && qpos - (static_cast<std::int64_t>(b.n_past) + job.depth[j]) >= window) continue;
    s.batch_slots[n_batch++] = b.n_past + j;
  }
  const std::uint32_t n_vis = n_prefix + n_batch;
  auto slot_at = [&](std::uint32_t t) { return t < n_prefix ? lo + t : s.batch_slots[t - n_prefix]; };
  auto out_row = [&](std::uint32_t r) { return mutable_row(job.out, g * n_rep + r, i); };

  if (n_vis == 0) {  // nothing visible: defined as a zero output rather than 0/0
    for (std::uint32_t r = 0; r < n_rep; ++r) std::fill_n(out_row(r), hv, 0.0f);
    return;
  }

  const T* K = static_cast<const T*>(c.k);
  const T* V = static_cast<const T*>(c.v);
  const std::size_t k_slot = static_cast<std::size_t>(c.n_kv_heads) * hk;
  const std::size_t v_slot = static_cast<std::size_t>(c.n_kv_heads) * hv;

  for (std::uint32_t t = 0; t < n_vis; ++t) {
    if (t + kAhead < n_vis)
      prefetch(K + slot_at(t + kAhead) * k_slot + static_cast<std::size_t>(g) * hk, hk * sizeof(T));
    const float* k = as_f32(K + slot_at(t) * k_slot + static_cast<std::size_t>(g) * hk, s.krow.data(), hk);
    for (std::uint32_t r = 0; r < n_rep; ++r)
      s.scores[r * stride + t] = dot(row(job.q, g * n_rep + r, i), k, hk) * b.scale;
  }

  // Softmax with the maximum subtracted, so exp never overflows.
  for (std::uint32_t r = 0; r < n_rep; ++r) {
    float* sc = s.scores.data() + r * stride;
    float m = -std::numeric_limits<float>::infinity();
    for (std::uint32_t t = 0; t < n_vis; ++t) m = std::max(m, sc[t]);
    float sum = 0.0f;
    for (std::uint32_t t = 0; t < n_vis; ++t) {
      sc[t] = std::exp(sc[t] - m);
      sum += sc[t];
    }
    s.inv_sum[r] = 1.0f / sum;
  }

  std::fill(s.acc.begin(), s.acc.end(), 0.0f);
  for (std::uint32_t t = 0; t < n_vis; ++t) {
    if (t + kAhead < n_vis)
      prefetch(V + slot_at(t + kAhead) * v_slot + static_cast<std::size_t>(g) * hv, hv * sizeof(T));
    const float* v = as_f32(V + slot_at(t) * v_slot + static_cast<std::size_t>(g) * hv, s.vrow.data(), hv);
    for (std::uint32_t r = 0; r < n_rep; ++r) {
      const float p = s.scores[r * stride + t];
      axpy(s.acc.data() + static_cast<std::size_t>(r) * hv, p, v, hv);
    }
  }
  for (std::uint32_t r = 0; r < n_rep; ++r) {
    float* o = out_row(r);
    const float* a = s.acc.data() + static_cast<std::size_t>(r) * hv;
    for (std::uint32_t d = 0; d < hv; ++d) o[d] = a[d] * s.inv_sum[r];
  }
}

GRAFT_KV_CLONES void run_pairs_f16(const Job& job, std::size_t begin, std::size_t end, Scratch& s) {
  for (std::size_t p = begin; p < end; ++p)
    attend_pair<std::uint16_t>(job, static_cast<std::uint32_t>(p / job.cache.n_kv_heads),
                               static_cast<std::uint32_t>(p % job.cache.n_kv_heads), s);
}
GRAFT_KV_CLONES void run_pairs_f32(const Job& job, std::size_t begin, std::size_t end, Scratch& s) {
  for (std::size_t p = begin; p < end; ++p)
    attend_pair<float>(job, static_cast<std::uint32_t>(p / job.cache.n_kv_heads),
                       static_cast<std::uint32_t>(p % job.cache.n_kv_heads), s);
}

}  // namespace

Status attend(Backend& backend, const LayerCache& c, const TensorView& q, const AttentionBatch& b,
              const TensorView& out) {
  const std::int64_t n_heads = q.ne[1];
  GRAFT_TRY(check_f32_rows(q, "attend: q", c.head_dim_k, n_heads, b.n_query, "[head_dim_k, n_heads, n_query]"));
  if (n_heads <= 0 || n_heads % c.n_kv_heads != 0)
    return Status(Errc::invalid_argument, "kvstore device: attend: q has " + std::to_string(n_heads) +
                                              " heads, which is not a positive multiple of the " +
                                              std::to_string(c.n_kv_heads) + " KV heads");
  GRAFT_TRY(check_f32_rows(out, "attend: out", c.head_dim_v, n_heads, b.n_query, "[head_dim_v, n_heads, n_query]"));
  if (!std::isfinite(b.scale)) return Status(Errc::invalid_argument, "kvstore device: attend: scale is not finite");
  if (b.n_query == 0) return Status::success();

  // A node's position is n_past + its depth, the number of other batch entries it sees (its
  // ancestors); for a causal batch that is simply i. The window is measured in positions, so a
  // tree node sees the same keys as the same token would on a plain chain.
  std::vector<std::uint32_t> depth(b.n_query);
  for (std::uint32_t i = 0; i < b.n_query; ++i) {
    if (!b.ancestor) {
      depth[i] = i;
      continue;
    }
    std::uint32_t d = 0;
    for (std::uint32_t j = 0; j < b.n_query; ++j)
      d += (j != i && b.ancestor[static_cast<std::size_t>(i) * b.n_query + j]);
    depth[i] = d;
  }

  const Job job{c, q, out, b, depth, static_cast<std::uint32_t>(n_heads / c.n_kv_heads)};
  std::atomic<bool> failed{false};
  backend.parallel_for(static_cast<std::size_t>(b.n_query) * c.n_kv_heads, [&](std::size_t begin, std::size_t end) {
    try {  // an exception must not escape a pool thread
      Scratch s(job);
      if (c.type == CacheType::f16)
        run_pairs_f16(job, begin, end, s);
      else
        run_pairs_f32(job, begin, end, s);
    } catch (...) {
      failed = true;
    }
  });
  if (failed)
    return Status(Errc::out_of_memory,
                  "kvstore device: attend: cannot allocate scratch memory for " + std::to_string(job.n_rep) + " x " +
                      std::to_string(static_cast<std::uint64_t>(b.n_past) + b.n_query) + " scores");
  return Status::success();
}

}  // namespace graft::kv
