// A kernel library: one backend's kernels for weight formats and KV stores that live in other
// plugins (PluginKind::kernels, libgraft_kernels_<backend>[-<name>].so). It is how a GPU backend
// brings kernels for the built-in formats and stores without the format plugins linking any GPU
// library, and how a third party's format gets kernels on a backend its author did not write:
// graft's own CUDA kernels are the library "cuda"; another is "cuda-<name>". The host loads the
// libraries of the backend in use only (a CPU run never opens a CUDA one) and asks them for a type
// the format plugin has no kernels for on that backend (WeightFormat::kernels first).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "graft/config.hpp"
#include "graft/kv_store.hpp"
#include "graft/plugin_object.hpp"
#include "graft/tensor.hpp"
#include "graft/weight_format.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

class KernelLibrary : public PluginObject {
 public:
  // The backend it computes on (Backend::name()).
  virtual std::string_view backend() const noexcept = 0;
  // The weight types it has kernels for; a type claimed by two libraries of one backend is an
  // error at load naming both files.
  virtual std::span<const TypeId> types() const noexcept = 0;
  // Its kernels for one of types(), else nullptr. Stateless to callers, as WeightFormat::kernels.
  virtual FormatKernels* kernels(TypeId type) noexcept = 0;
  // Whether it implements the KV store a KV-store plugin names (e.g. "device") on its backend:
  // that plugin's factory hands such a backend to create_kv_store, with the plugin's own validated
  // profile table (its element type, ...).
  virtual bool has_kv_store(std::string_view store) const noexcept = 0;
  virtual Expected<std::unique_ptr<KvStore>> create_kv_store(std::string_view store, const Config& config,
                                                             Backend& backend, const KvGeometry& geometry) = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
