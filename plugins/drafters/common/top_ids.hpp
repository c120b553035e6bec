// Ranking a drafter's scores: the few best of a vocabulary-sized row, shared by the drafters that
// rank logits or probabilities (mtp, dflash2).
#pragma once

#include <cstdint>
#include <vector>

namespace graft::drafters {

// The k ids of the largest values, largest first (lowest id on ties).
std::vector<std::int32_t> top_ids(const float* values, std::uint32_t n, std::uint32_t k);

}  // namespace graft::drafters
