#include "simd_level.hpp"

namespace graft::cpu {

namespace {
bool has_avx2(const CpuInfo& i) { return i.avx2 && i.fma && i.f16c; }
bool has_avx512(const CpuInfo& i) { return has_avx2(i) && i.avx512f; }

std::string missing_avx2(const CpuInfo& i) {
  std::string m;
  auto add = [&](bool have, const char* name) {
    if (have) return;
    if (!m.empty()) m += ", ";
    m += name;
  };
  add(i.avx2, "avx2");
  add(i.fma, "fma");
  add(i.f16c, "f16c");
  return m;
}
}  // namespace

SimdLevel best_simd_level(const CpuInfo& info) noexcept {
  if (has_avx512(info)) return SimdLevel::avx512;
  if (has_avx2(info)) return SimdLevel::avx2;
  return SimdLevel::scalar;
}

Expected<SimdLevel> resolve_simd_level(std::string_view requested, const CpuInfo& info,
                                       std::string_view source) {
  const std::string prefix = "cpu backend: " + std::string(source) + " = \"" + std::string(requested) + "\": ";
  if (requested.empty() || requested == "auto") return best_simd_level(info);
  if (requested == "scalar") return SimdLevel::scalar;
  if (requested == "avx2") {
    if (has_avx2(info)) return SimdLevel::avx2;
    return Status(Errc::invalid_argument, prefix + "this CPU lacks " + missing_avx2(info));
  }
  // The weight formats' "amx" level (AMX tiles for their batched products) is avx512 here: the
  // backend's own kernels have no tile forms. Accepted so one GRAFT_CPU_SIMD serves both.
  if (requested == "avx512" || requested == "amx") {
    if (has_avx512(info)) return SimdLevel::avx512;
    std::string missing = missing_avx2(info);
    if (!info.avx512f) missing += missing.empty() ? "avx512f" : ", avx512f";
    return Status(Errc::invalid_argument, prefix + "this CPU lacks " + missing);
  }
  return Status(Errc::invalid_argument, prefix + "expected auto, amx, avx512, avx2 or scalar");
}

}  // namespace graft::cpu
