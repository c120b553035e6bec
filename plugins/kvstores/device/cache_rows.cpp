#include "cache_rows.hpp"

#include <algorithm>
#include <cstring>

#include "formats/q4_0/q4_0_rows.hpp"
#include "formats/q8_0/q8_0_rows.hpp"
#include "rotation.hpp"
#include "tq3_rows.hpp"

namespace graft::kv {

void encode_row(CacheType type, const float* src, std::uint32_t n, void* dst) noexcept {
  switch (type) {
    case CacheType::f32: std::memcpy(dst, src, n * sizeof(float)); return;
    case CacheType::f16: narrow_to_f16(src, static_cast<std::uint16_t*>(dst), n); return;
    case CacheType::q8_0: quant::quantize_row_q8_0(src, static_cast<quant::block_q8_0*>(dst), n); return;
    case CacheType::q4_0: quant::quantize_row_q4_0(src, static_cast<quant::block_q4_0*>(dst), n); return;
    case CacheType::tq3: {
      alignas(64) float work[kMaxRotatedDim];  // on the stack: the store calls this on pool threads
      std::copy_n(src, n, work);
      rotate_row(work, n);
      quantize_row_tq3(work, static_cast<block_tq3*>(dst), n);
      return;
    }
  }
}

}  // namespace graft::kv
