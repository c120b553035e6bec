#include "simd/simd_level.hpp"

#include <cstdlib>
#include <string>

#include "cpu_features.hpp"

namespace graft::quant {

bool cpu_supports(SimdLevel level) noexcept {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  switch (level) {
    case SimdLevel::scalar: return true;
    case SimdLevel::avx2: return avx2;
    case SimdLevel::avx512: return avx512;
    // The AMX kernels also use AVX512-DQ and -BITALG (every AMX CPU so far has both).
    case SimdLevel::amx: return avx512 && f.avx512dq && f.avx512bitalg && amx_tiles_granted();
  }
  return false;
}

SimdLevel best_simd_level() noexcept {
  if (cpu_supports(SimdLevel::amx)) return SimdLevel::amx;
  if (cpu_supports(SimdLevel::avx512)) return SimdLevel::avx512;
  if (cpu_supports(SimdLevel::avx2)) return SimdLevel::avx2;
  return SimdLevel::scalar;
}

Expected<SimdLevel> parse_simd_level(std::string_view text) {
  if (text == "auto") return best_simd_level();
  const std::optional<SimdLevel> level = simd_level_named(text);
  if (!level)
    return Status(Errc::invalid_argument,
                  "unknown simd level '" + std::string(text) + "' (expected auto, scalar, avx2, avx512 or amx)");
  if (!cpu_supports(*level))
    return Status(Errc::unsupported, "simd level '" + std::string(text) + "' is not supported by this CPU (best: " +
                                         simd_level_name(best_simd_level()) + ")");
  return *level;
}

Expected<SimdLevel> resolve_simd_level(const Config& config) {
  if (auto key = config.get_string("simd")) return parse_simd_level(*key);
  if (const char* env = std::getenv(kSimdEnvVar); env && *env) {
    auto level = parse_simd_level(env);
    if (!level) return Status(level.status().code(), std::string(kSimdEnvVar) + ": " + level.status().message());
    return level;
  }
  return best_simd_level();
}

}  // namespace graft::quant
