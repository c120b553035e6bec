#include "top_ids.hpp"

#include <algorithm>

namespace graft::drafters {

std::vector<std::int32_t> top_ids(const float* values, std::uint32_t n, std::uint32_t k) {
  // One pass keeping the best k sorted (k is a handful, n a vocabulary): a value enters only when
  // it beats the current k-th, so ids scanned in order keep the lowest id first on ties.
  k = std::min(k, n);
  std::vector<std::int32_t> ids;
  ids.reserve(k + 1);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (ids.size() == k && !(values[i] > values[ids.back()])) continue;
    auto at = ids.end();
    while (at != ids.begin() && values[i] > values[*(at - 1)]) --at;
    ids.insert(at, static_cast<std::int32_t>(i));
    if (ids.size() > k) ids.pop_back();
  }
  return ids;
}

}  // namespace graft::drafters
