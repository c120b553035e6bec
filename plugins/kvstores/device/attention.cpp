#include "attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "attention_job.hpp"
#include "cpu_features.hpp"
#include "half.hpp"
#include "rotation.hpp"
#include "views.hpp"

namespace graft::kv {

namespace {

// The kernel table of a level; null for the portable kernel.
const AttnKernels* table_for(AttnSimd level) noexcept {
  switch (level) {
    case AttnSimd::avx512:
    case AttnSimd::amx: return attn_kernels_avx512();
    case AttnSimd::avx2: return attn_kernels_avx2();
    case AttnSimd::scalar: break;
  }
  return nullptr;
}

// The SIMD path needs head sizes that are multiples of 8 (its partial sums are 8 wide and it has
// no scalar tails); anything else runs the portable kernel, which computes the same bits.
const AttnKernels* kernels_for(AttnSimd level, const LayerCache& c) noexcept {
  if (c.head_dim_k % 8 != 0 || c.head_dim_v % 8 != 0) return nullptr;
  return table_for(level);
}

// f(head, query) for every row of a [dim, n_heads, n_query] tensor; on the pool when there are
// enough elements to repay waking it (prefill), on the calling thread otherwise (decode).
template <class F>
void for_rows(Backend& backend, std::int64_t n_heads, std::uint32_t n_query, std::uint32_t dim, const F& f) {
  const std::size_t rows = static_cast<std::size_t>(n_heads) * n_query;
  auto run = [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r)
      f(static_cast<std::int64_t>(r % static_cast<std::size_t>(n_heads)), static_cast<std::uint32_t>(r / n_heads));
  };
  if (rows * dim >= (1u << 16))
    backend.parallel_for(rows, run);
  else
    run(0, rows);
}

}  // namespace

const char* cache_type_name(CacheType t) noexcept {
  switch (t) {
    case CacheType::f32: return "f32";
    case CacheType::f16: return "f16";
    case CacheType::q8_0: return "q8_0";
    case CacheType::q4_0: return "q4_0";
    case CacheType::tq3: return "tq3";
  }
  return "?";
}

std::optional<CacheType> cache_type_from_name(std::string_view name) noexcept {
  for (CacheType t : {CacheType::f32, CacheType::f16, CacheType::q8_0, CacheType::q4_0, CacheType::tq3})
    if (name == cache_type_name(t)) return t;
  return std::nullopt;
}

bool cpu_supports(AttnSimd level) noexcept {
  const CpuFeatures& f = cpu_features();
  switch (level) {
    case AttnSimd::scalar: return true;
    case AttnSimd::avx2: return attn_kernels_avx2() && f.avx2 && f.f16c && f.fma;
    case AttnSimd::avx512:
      return cpu_supports(AttnSimd::avx2) && attn_kernels_avx512() && f.avx512f && f.avx512bw && f.avx512vl &&
             f.avx512dq;
    case AttnSimd::amx: break;  // parse_attn_simd reads "amx" as avx512
  }
  return false;
}

AttnSimd best_attn_simd() noexcept {
  if (cpu_supports(AttnSimd::avx512)) return AttnSimd::avx512;
  if (cpu_supports(AttnSimd::avx2)) return AttnSimd::avx2;
  return AttnSimd::scalar;
}

Expected<AttnSimd> parse_attn_simd(std::string_view text) {
  const std::string prefix = "kvstore device: " + std::string(kSimdEnvVar) + " = \"" + std::string(text) + "\": ";
  if (text.empty() || text == "auto") return best_attn_simd();
  std::optional<AttnSimd> level = simd_level_named(text);
  if (!level) return Status(Errc::invalid_argument, prefix + "expected auto, amx, avx512, avx2 or scalar");
  // The weight formats' "amx" level (AMX tiles for their batched products) means avx512 here.
  if (*level == AttnSimd::amx) level = AttnSimd::avx512;
  if (!cpu_supports(*level)) return Status(Errc::invalid_argument, prefix + "this CPU does not support it");
  return *level;
}

namespace {
// $GRAFT_CPU_SIMD, read once per process.
const Expected<AttnSimd>& process_level() {
  static const Expected<AttnSimd> level = [] {
    const char* env = std::getenv(kSimdEnvVar);
    return parse_attn_simd(env ? env : "");
  }();
  return level;
}
}  // namespace

Status attend(Backend& backend, const LayerCache& c, const TensorView& q, const AttentionBatch& b,
              const TensorView& out, float* lse) {
  const Expected<AttnSimd>& level = process_level();
  if (!level) return level.status();
  return attend(backend, c, q, b, out, *level, lse);
}

void narrow_to_f16(const float* src, std::uint16_t* dst, std::uint32_t n) noexcept {
  static const AttnKernels* const kernels = [] {
    const Expected<AttnSimd>& level = process_level();
    return level ? table_for(*level) : nullptr;
  }();
  if (kernels) return kernels->narrow(src, dst, n);
  for (std::uint32_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

Status attend(Backend& backend, const LayerCache& c, const TensorView& q, const AttentionBatch& batch,
              const TensorView& out, AttnSimd level, float* lse) {
  const std::int64_t n_heads = q.ne[1];
  GRAFT_TRY(check_f32_rows(q, "attend: q", c.head_dim_k, n_heads, batch.n_query, "[head_dim_k, n_heads, n_query]"));
  if (n_heads <= 0 || n_heads % c.n_kv_heads != 0)
    return Status(Errc::invalid_argument, "kvstore device: attend: q has " + std::to_string(n_heads) +
                                              " heads, which is not a positive multiple of the " +
                                              std::to_string(c.n_kv_heads) + " KV heads");
  GRAFT_TRY(check_f32_rows(out, "attend: out", c.head_dim_v, n_heads, batch.n_query, "[head_dim_v, n_heads, n_query]"));
  if (!std::isfinite(batch.scale)) return Status(Errc::invalid_argument, "kvstore device: attend: scale is not finite");
  for (const auto& [type, dim, name] :
       {std::tuple{c.k_type, c.head_dim_k, "K"}, std::tuple{c.v_type, c.head_dim_v, "V"}})
    if (cache_type_elems(type) > 1 && (c.capacity == 0 || dim % cache_type_elems(type) != 0))
      return Status(Errc::invalid_argument, std::string("kvstore device: attend: a ") + cache_type_name(type) + " " +
                                                name + " cache must be head-major with rows of a multiple of " +
                                                std::to_string(cache_type_elems(type)) + " elements");
  for (const auto& [type, dim, name] :
       {std::tuple{c.k_type, c.head_dim_k, "K"}, std::tuple{c.v_type, c.head_dim_v, "V"}})
    if (cache_type_rotated(type) && !rotatable(dim))
      return Status(Errc::invalid_argument, std::string("kvstore device: attend: a ") + cache_type_name(type) + " " +
                                                name + " cache needs a head size that is a power of two up to " +
                                                std::to_string(kMaxRotatedDim) + ", not " +
                                                std::to_string(dim));
  if (!cpu_supports(level))
    return Status(Errc::invalid_argument,
                  std::string("kvstore device: attend: this CPU does not support ") + simd_level_name(level));
  if (batch.n_query == 0) return Status::success();
  const TensorView& mask = batch.ancestor;
  if (mask.data && (mask.type != type_id::i8 || mask.ne[0] != batch.n_query || mask.ne[1] != batch.n_query ||
                    mask.ne[2] != 1 || mask.ne[3] != 1 || mask.nb[0] != 1 || (batch.n_query > 1 && mask.nb[1] != batch.n_query)))
    return Status(Errc::invalid_argument, "kvstore device: attend: the ancestor mask must be a packed i8 [" +
                                              std::to_string(batch.n_query) + ", " + std::to_string(batch.n_query) +
                                              "] (n_query x n_query)");
  const MaskedBatch b{batch.n_query, batch.n_past, static_cast<const std::uint8_t*>(mask.data), batch.scale,
                      batch.sliding_window};

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

  // A rotated K holds R k: the queries are rotated alike (R q . R k = q . k), once per call.
  std::vector<float> q_rotated;
  TensorView q_view = q;
  if (cache_type_rotated(c.k_type)) {
    q_rotated.resize(static_cast<std::size_t>(c.head_dim_k) * n_heads * b.n_query);
    q_view = f32_view(q_rotated.data(), c.head_dim_k, n_heads, b.n_query);
    for_rows(backend, n_heads, b.n_query, c.head_dim_k, [&](std::int64_t h, std::uint32_t i) {
      float* r = mutable_row(q_view, h, i);
      std::copy_n(row(q, h, i), c.head_dim_k, r);
      rotate_row(r, c.head_dim_k);
    });
  }

  const auto n_rep = static_cast<std::uint32_t>(n_heads / c.n_kv_heads);
  const AttnJob job{c, q_view, out, b, depth, n_rep, lse};
  const std::size_t blocks = (b.n_query + kQueryBlock - 1) / kQueryBlock;
  const AttnKernels* kernels = kernels_for(level, c);
  // With fewer (block, KV head) units than threads (decode on many cores), the query heads of a
  // KV head are split over units too; heads never share partial sums, so this changes no bit.
  std::uint32_t heads_per_unit = n_rep;
  if (kernels) {
    const std::size_t units = blocks * c.n_kv_heads, threads = std::max(1u, backend.n_threads());
    if (units < threads) {
      const std::size_t split = std::min<std::size_t>(n_rep, (threads + units - 1) / units);
      heads_per_unit = static_cast<std::uint32_t>((n_rep + split - 1) / split);
    }
  }
  const std::uint32_t groups = (n_rep + heads_per_unit - 1) / heads_per_unit;
  std::atomic<bool> failed{false};
  backend.parallel_for(blocks * c.n_kv_heads * groups, [&](std::size_t begin, std::size_t end) {
    try {  // an exception must not escape a pool thread
      if (kernels)
        run_units_simd(job, *kernels, heads_per_unit, begin, end);
      else
        run_units_portable(job, begin, end);
    } catch (...) {
      failed = true;
    }
  });
  if (failed)
    return Status(Errc::out_of_memory,
                  "kvstore device: attend: cannot allocate scratch memory for " + std::to_string(kQueryBlock * n_rep) +
                      " x " + std::to_string(static_cast<std::uint64_t>(b.n_past) + b.n_query) + " scores");
  // A rotated V gives R times each output row (the weighted sum of R v): un-rotated once here.
  if (cache_type_rotated(c.v_type))
    for_rows(backend, n_heads, b.n_query, c.head_dim_v,
             [&](std::int64_t h, std::uint32_t i) { unrotate_row(mutable_row(out, h, i), c.head_dim_v); });
  return Status::success();
}

}  // namespace graft::kv
