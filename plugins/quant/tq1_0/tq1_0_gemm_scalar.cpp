// Portable TQ1_0 kernel: the definition the SIMD kernels reproduce bit for bit (tq1_0_gemm.hpp).
#include "ternary_gemm_scalar.hpp"
#include "tq1_0_gemm.hpp"

namespace graft::quant {

namespace {

// Base-3 packed codes (tq1_0_code); the scale follows qs[48] and qh[4].
struct TQ1Weights {
  static constexpr std::int64_t kBlockBytes = 54;
  static constexpr int kScaleOffset = 52;
  static int code(const std::uint8_t* blk, int e) { return tq1_0_code(blk, e); }
};

}  // namespace

void tq1_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarTernaryGemm<TQ1Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
