#include "driver/fp16_table.hpp"

#include <cstdint>
#include <vector>

#include "half.hpp"

namespace graft::quant {

const float* fp16_table() noexcept {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (std::uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_f32(static_cast<std::uint16_t>(h));
    return t;
  }();
  return table.data();
}

}  // namespace graft::quant
