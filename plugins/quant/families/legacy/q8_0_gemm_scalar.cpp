// Portable Q8_0 kernel: the definition the SIMD kernels reproduce bit for bit.
#include <cstring>

#include "families/legacy/q8_0_gemm.hpp"
#include "families/legacy/qgemm_scalar.hpp"
#include "formats/q8_0/block_q8_0.hpp"

namespace graft::quant {

namespace {

struct Q8Weights {
  static constexpr std::size_t kBlockBytes = sizeof(block_q8_0);
  static std::uint16_t decode(const std::uint8_t* p, int* codes) {
    block_q8_0 blk;
    std::memcpy(&blk, p, sizeof blk);
    for (int e = 0; e < kQK8_0; ++e) codes[e] = blk.qs[e];
    return blk.d;
  }
};

}  // namespace

void q8_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarQGemm<Q8Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
