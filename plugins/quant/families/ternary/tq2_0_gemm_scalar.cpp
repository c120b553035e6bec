// Portable TQ2_0 kernel: the definition the SIMD kernels reproduce bit for bit (tq2_0_gemm.hpp).
#include <cstddef>

#include "families/ternary/ternary_gemm_scalar.hpp"
#include "families/ternary/tq2_0_gemm.hpp"
#include "formats/tq2_0/block_tq2_0.hpp"

namespace graft::quant {

namespace {

// 2-bit codes (tq2_0_code); the scale follows qs.
struct TQ2Weights {
  static constexpr std::int64_t kBlockBytes = sizeof(block_tq2_0);
  static constexpr int kScaleOffset = offsetof(block_tq2_0, d);
  static int code(const std::uint8_t* blk, int e) { return tq2_0_code(blk, e); }
};

}  // namespace

void tq2_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarTernaryGemm<TQ2Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
