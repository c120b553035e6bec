// Portable TQ1_0 kernel: the definition the SIMD kernels reproduce bit for bit (tq1_0_gemm.hpp).
#include <cstddef>

#include "families/ternary/ternary_gemm_scalar.hpp"
#include "families/ternary/tq1_0_gemm.hpp"
#include "formats/tq1_0/block_tq1_0.hpp"

namespace graft::quant {

namespace {

// Base-3 packed codes (tq1_0_code); the scale follows qs and qh.
struct TQ1Weights {
  static constexpr std::int64_t kBlockBytes = sizeof(block_tq1_0);
  static constexpr int kScaleOffset = offsetof(block_tq1_0, d);
  static int code(const std::uint8_t* blk, int e) { return tq1_0_code(blk, e); }
};

}  // namespace

void tq1_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarTernaryGemm<TQ1Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
