// Portable TQ2_0 kernel: the definition the SIMD kernels reproduce bit for bit (tq2_0_gemm.hpp).
#include "tq2_0_gemm.hpp"
#include "ternary_gemm_scalar.hpp"

namespace graft::quant {

namespace {

// 2-bit codes: element 128h + 32s + i is bit pair s of qs[32h + i]; the scale follows qs[64].
struct TQ2Weights {
  static constexpr std::int64_t kBlockBytes = 66;
  static constexpr int kScaleOffset = 64;
  static int code(const std::uint8_t* blk, int e) { return (blk[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }
};

}  // namespace

void tq2_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarTernaryGemm<TQ2Weights>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
