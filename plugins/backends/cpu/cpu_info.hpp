// What the CPU backend reports about the machine: model name, SIMD features, memory.
#pragma once

#include <cstdint>
#include <string>

namespace graft::cpu {

struct CpuInfo {
  std::string model;  // from /proc/cpuinfo
  unsigned logical_cores = 1;
  bool avx2 = false, fma = false, f16c = false, avx512f = false, avx512bw = false, avx512vnni = false;
  std::uint64_t total_memory = 0;
  std::uint64_t available_memory = 0;
  std::string simd_summary() const;  // "avx2 fma f16c" or "scalar"
};

CpuInfo detect_cpu();

}  // namespace graft::cpu
