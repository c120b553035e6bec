#include "cpu_simd.hpp"

namespace graft {

namespace {
constexpr const char* kNames[kSimdLevels] = {"scalar", "avx2", "avx512", "amx"};
}  // namespace

const char* simd_level_name(SimdLevel level) noexcept {
  const int i = static_cast<int>(level);
  return i >= 0 && i < kSimdLevels ? kNames[i] : "?";
}

std::optional<SimdLevel> simd_level_named(std::string_view name) noexcept {
  for (int i = 0; i < kSimdLevels; ++i)
    if (name == kNames[i]) return static_cast<SimdLevel>(i);
  return std::nullopt;
}

}  // namespace graft
