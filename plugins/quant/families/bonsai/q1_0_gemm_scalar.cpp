// Portable Q1_0 kernel: the definition the SIMD kernels reproduce bit for bit.
#include <cstring>

#include "families/bonsai/bonsai_gemm_scalar.hpp"
#include "families/bonsai/q1_0_gemm.hpp"
#include "formats/q1_0/block_q1_0.hpp"

namespace graft::quant {

namespace {

struct Q1Weights {
  static constexpr int kSubPerBlock = 4, kLanesPerSub = 1;
  static constexpr std::size_t kBlockBytes = sizeof(block_q1_0);
  static std::uint16_t decode(const std::uint8_t* p, int* codes) {
    block_q1_0 blk;
    std::memcpy(&blk, p, sizeof blk);
    // Arithmetic, not a branch: the bits are random, and mispredictions cost 10x the decode.
    for (int e = 0; e < kQK1_0; ++e) codes[e] = 2 * ((blk.qs[e / 8] >> (e % 8)) & 1) - 1;
    return blk.d;
  }
};

}  // namespace

void q1_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<BonsaiScalarGemm<Q1Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
