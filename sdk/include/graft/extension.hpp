// Optional capabilities of plugin objects, looked up by name and version through
// PluginObject::extension (in the spirit of ggml's ggml_backend_reg_get_proc_address), so adding
// one changes no interface that every plugin implements. The rules:
// - A name is "<owner>.<plugin or area>.<capability>" in lower case. "graft." is reserved for the
//   structs defined in this header; a third party uses its own owner prefix and publishes its
//   struct itself.
// - A version names one struct layout and never changes once released: a new field makes a new
//   struct with the next version. An object answers exactly the (name, version) pairs it
//   implements, possibly several versions of one name, and nullptr for everything else.
// - The struct is plain data; the pointer, and whatever the struct points to, stays valid while
//   the object lives.
#pragma once

#include <cstdint>
#include <string_view>

#include "graft/plugin_object.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

// The extension T (a struct with kName and kVersion) if the object offers it, else nullptr.
template <class T>
const T* find_extension(const PluginObject& object) noexcept {
  return static_cast<const T*>(object.extension(T::kName, T::kVersion));
}

// "graft.cpu.simd" v1, offered by the CPU backend: the instruction set its kernels use.
struct CpuSimdExtension {
  static constexpr std::string_view kName = "graft.cpu.simd";
  static constexpr std::uint32_t kVersion = 1;

  const char* level;                // the kernels in use: "scalar", "avx2" or "avx512"
  std::uint32_t floats_per_vector;  // 1 (scalar), 8 (avx2) or 16 (avx512)
  const char* cpu_features;         // what the CPU offers, e.g. "avx2 fma f16c avx512f", or "scalar"
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
