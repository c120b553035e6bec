// top_k's order as one unsigned key, so a radix select can find the k-th entry by its bits: a
// larger key comes first; numbers by value (-0 equal to +0), every NaN after every number (key 0,
// below -inf's). Equal keys are exactly top_k's equal entries (the lower index first). Shared by
// the kernel and the host tests.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GRAFT_HOST_DEVICE __host__ __device__
#else
#define GRAFT_HOST_DEVICE
#endif

namespace graft::cuda {

GRAFT_HOST_DEVICE inline std::uint32_t top_k_key(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0u;  // NaN, either sign
  if (b == 0x80000000u) b = 0u;                     // -0 is +0
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

}  // namespace graft::cuda
