// Portable Q4_0 kernel: the definition the SIMD kernels reproduce bit for bit.
#include <cstring>

#include "families/legacy/q4_0_gemm.hpp"
#include "families/legacy/qgemm_scalar.hpp"
#include "formats/q4_0/block_q4_0.hpp"

namespace graft::quant {

namespace {

struct Q4Weights {
  static constexpr std::size_t kBlockBytes = sizeof(block_q4_0);
  static std::uint16_t decode(const std::uint8_t* p, int* codes) {
    block_q4_0 blk;
    std::memcpy(&blk, p, sizeof blk);
    for (int e = 0; e < kQK4_0 / 2; ++e) {
      codes[e] = (blk.qs[e] & 0x0F) - 8;
      codes[e + kQK4_0 / 2] = (blk.qs[e] >> 4) - 8;
    }
    return blk.d;
  }
};

}  // namespace

void q4_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarQGemm<Q4Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
