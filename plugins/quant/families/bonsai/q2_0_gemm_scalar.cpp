// Portable Q2_0 kernel: the definition the SIMD kernels reproduce bit for bit.
#include <cstring>

#include "families/bonsai/bonsai_gemm_scalar.hpp"
#include "families/bonsai/q2_0_gemm.hpp"
#include "formats/q2_0/block_q2_0.hpp"

namespace graft::quant {

namespace {

struct Q2Weights {
  static constexpr int kSubPerBlock = 2, kLanesPerSub = 2;
  static constexpr std::size_t kBlockBytes = sizeof(block_q2_0);
  static std::uint16_t decode(const std::uint8_t* p, int* codes) {
    block_q2_0 blk;
    std::memcpy(&blk, p, sizeof blk);
    for (int e = 0; e < kQK2_0; ++e) codes[e] = ((blk.qs[e / 4] >> (2 * (e % 4))) & 3) - 1;
    return blk.d;
  }
};

}  // namespace

void q2_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<BonsaiScalarGemm<Q2Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
