// One attend() call as the unit runners see it, and the visibility rule they share. Internal to
// the device store: attention.cpp checks shapes, builds the job and splits units over threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention.hpp"
#include "attention_kernels.hpp"

namespace graft::kv {

struct AttnJob {
  const LayerCache& cache;
  const TensorView& q;
  const TensorView& out;
  const MaskedBatch& batch;
  const std::vector<std::uint32_t>& depth;  // query i sits at position n_past + depth[i]
  std::uint32_t n_rep;                      // query heads per KV head
  // Or null: each (query, head) row's log-sum-exp of its scaled scores, lse[i * n_heads + h]
  // (-inf where it saw nothing), to merge attention over pieces of a cache (the sysram store).
  float* lse = nullptr;
};

// Queries handled together per KV head: each cached row is read once per block instead of once
// per query, which dominated prefill. Every query still sees exactly the operations it would see
// alone (same slots in the same order), so results do not depend on the block.
inline constexpr std::uint32_t kQueryBlock = 16;
// Cached rows are taken kSlotChunk at a time (a chunk stays in L1/L2 while every query uses it).
inline constexpr std::uint32_t kSlotChunk = 64;

// Whether query i sees batch entry j (mask and sliding window).
inline bool sees_batch(const AttnJob& job, std::uint32_t i, std::uint32_t j) noexcept {
  const MaskedBatch& b = job.batch;
  const bool seen = b.ancestor ? b.ancestor[static_cast<std::size_t>(i) * b.n_query + j] != 0 : j <= i;
  if (!seen) return false;
  if (b.sliding_window <= 0) return true;
  const std::int64_t qpos = static_cast<std::int64_t>(b.n_past) + job.depth[i];
  return qpos - (static_cast<std::int64_t>(b.n_past) + job.depth[j]) < b.sliding_window;
}

// Units [begin, end) of (query block, KV head), every query head of the KV head; the kernel of
// the first vectorized version, kept for CPUs without AVX2/F16C and for head sizes that are not
// multiples of 8. Throws std::bad_alloc when scratch memory runs out.
void run_units_portable(const AttnJob& job, std::size_t begin, std::size_t end);

// Units [begin, end) of (query block, KV head, group of heads_per_unit query heads) with the
// given SIMD kernels; needs head_dim_k and head_dim_v to be multiples of 8. Throws std::bad_alloc.
void run_units_simd(const AttnJob& job, const AttnKernels& kernels, std::uint32_t heads_per_unit, std::size_t begin,
                    std::size_t end);

}  // namespace graft::kv
