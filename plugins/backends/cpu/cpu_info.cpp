#include "cpu_info.hpp"

#include <fstream>
#include <sstream>
#include <thread>

#include "cpu_features.hpp"

namespace graft::cpu {

namespace {
std::uint64_t meminfo_kib(const std::string& field) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream ss(line.substr(field.size() + 1));
    std::uint64_t kib = 0;
    ss >> kib;
    return kib;
  }
  return 0;
}
}  // namespace

std::string CpuInfo::simd_summary() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vnni, "avx512vnni");
  return s.empty() ? "scalar" : s;
}

CpuInfo detect_cpu() {
  CpuInfo info;
  info.logical_cores = std::max(1u, std::thread::hardware_concurrency());
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) info.model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  if (info.model.empty()) info.model = "unknown CPU";
  const CpuFeatures& features = cpu_features();
  info.avx2 = features.avx2;
  info.fma = features.fma;
  info.f16c = features.f16c;
  info.avx512f = features.avx512f;
  info.avx512bw = features.avx512bw;
  info.avx512vnni = features.avx512vnni;
  info.total_memory = meminfo_kib("MemTotal") * 1024;
  info.available_memory = meminfo_kib("MemAvailable") * 1024;
  return info;
}

}  // namespace graft::cpu
