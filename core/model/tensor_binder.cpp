#include "model/tensor_binder.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "model/model_params.hpp"
#include "model/model_weights.hpp"

namespace graft {

Status TensorBinder::matrix(const std::string& name, std::uint64_t k, std::uint64_t m, MatrixWeight& out) {
  used_.insert(name);
  const gguf::TensorInfo* t = f_.tensor(name);
  if (!t) return Status(Errc::invalid_argument, fmt::format("{}: missing tensor '{}'", f_.name(), name));
  if (t->n_dims != 2 || t->ne[0] != k || t->ne[1] != m)
    return Status(Errc::invalid_argument, fmt::format("{}: tensor '{}' has shape [{}, {}], expected [{}, {}]", f_.name(),
                                                      name, t->ne[0], t->ne[1], k, m));
  const WeightFormat* format = host_.weight_format(t->type);
  if (!format)
    return Status(Errc::unsupported,
                  fmt::format("{}: tensor '{}' has type id {} and no weight-format plugin for it is loaded "
                              "(graft plugins lists what is installed)",
                              f_.name(), name, t->type));
  // The format plugin's kernels for this backend, else a kernel library's (HostServices).
  FormatKernels* kernels = host_.format_kernels(t->type, backend_.name());
  const char* type_name = "?";
  std::uint32_t block_bytes = 0;
  for (const auto& tt : format->types())
    if (tt.id == t->type) type_name = tt.name, block_bytes = tt.block_bytes;
  if (!kernels)
    return Status(Errc::unsupported, fmt::format("{}: tensor '{}': weight format {} has no kernels for backend '{}'",
                                                 f_.name(), name, type_name, backend_.name()));
  const std::int64_t ne[4] = {static_cast<std::int64_t>(k), static_cast<std::int64_t>(m), 1, 1};
  GRAFT_TRY(format->check_tensor(t->type, ne, 2, t->bytes));
  out.name = name;
  out.kernels = kernels;
  out.bytes = t->bytes;
  out.view = weight_view(*t, block_bytes);
  return Status::success();
}

Status TensorBinder::vector(const std::string& name, std::uint64_t n, VectorWeight& out) {
  used_.insert(name);
  const gguf::TensorInfo* t = f_.tensor(name);
  if (!t) return Status(Errc::invalid_argument, fmt::format("{}: missing tensor '{}'", f_.name(), name));
  if (t->elements() != n)
    return Status(Errc::invalid_argument,
                  fmt::format("{}: tensor '{}' has {} elements, expected {}", f_.name(), name, t->elements(), n));
  out.name = name;
  if (t->type == type_id::f32) {
    out.view = f32_view(const_cast<float*>(reinterpret_cast<const float*>(t->data)), static_cast<std::int64_t>(n));
  } else {
    const WeightFormat* format = host_.weight_format(t->type);
    if (!format)
      return Status(Errc::unsupported, fmt::format("{}: tensor '{}' has type id {} and no weight-format plugin for it",
                                                   f_.name(), name, t->type));
    out.owned.resize(n);
    GRAFT_TRY(format->dequantize(t->type, t->data, out.owned.data(), static_cast<std::int64_t>(n)));
    out.view = f32_view(out.owned.data(), static_cast<std::int64_t>(n));
  }
  if (!upload_ || backend_.host_accessible(MemoryKind::device)) return Status::success();
  // A GPU: the vector goes to device memory now, once.
  auto buf = backend_.allocate(n * sizeof(float), MemoryKind::device);
  if (!buf) return Status(buf.status().code(), fmt::format("{}: tensor '{}': {}", f_.name(), name, buf.status().message()));
  GRAFT_TRY(backend_.copy((*buf)->data(), MemoryKind::device, out.view.data, MemoryKind::host, n * sizeof(float)));
  out.device = std::move(*buf);
  out.owned.clear();
  out.owned.shrink_to_fit();
  out.view.data = out.device->data();
  out.view.memory = MemoryKind::device;
  return Status::success();
}

// A tensor the forward pass would not read means the file describes a model this implementation
// computes differently (biases, RoPE frequency factors, ...): refuse rather than answer wrongly.
// Blocks after the main layers (MTP heads) belong to drafters and are allowed.
Status TensorBinder::check_all_used(const ModelParams& p) const {
  for (const auto& t : f_.tensors()) {
    if (used_.count(t.name)) continue;
    unsigned block = 0;
    if (std::sscanf(t.name.c_str(), "blk.%u.", &block) == 1 && block >= p.n_main_layers() && block < p.n_layer)
      continue;
    std::string why = "graft's " + p.arch_name + " forward pass does not use it";
    if (t.name == "rope_freqs.weight") why = "RoPE frequency factors (llama3-style rope scaling) are not supported yet";
    else if (t.name.ends_with(".bias")) why = "biases are not supported by graft's " + p.arch_name + " forward pass";
    return Status(Errc::unsupported,
                  fmt::format("{}: tensor '{}' is not used: {}; refusing to run a model that would compute "
                              "differently from its definition",
                              f_.name(), t.name, why));
  }
  return Status::success();
}


}  // namespace graft
