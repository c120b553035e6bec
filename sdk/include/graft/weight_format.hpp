// A weight format: type ids, block geometry, the reference quantizer/dequantizer, and the kernels
// that multiply by weights of this format on each backend it supports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "graft/backend.hpp"
#include "graft/plugin_object.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

struct TypeTraits {
  TypeId id;
  const char* name;          // as ggml names it: "q4_0", "q1_0", ...
  std::uint32_t block_elems; // elements per block along ne[0]
  std::uint32_t block_bytes; // bytes per block
};

// A weight matrix rearranged once, at load, into the layout a backend's kernels read fastest (e.g.
// 16 rows interleaved, so one vector load brings the same block of 16 rows). Made by
// FormatKernels::prepare; only the kernels that made it can read it. Its memory is the plugin's and
// is freed by its destructor, so it must not outlive the plugin.
class PreparedWeights {
 public:
  virtual ~PreparedWeights() = default;
  virtual std::uint64_t bytes() const noexcept = 0;  // memory it holds
  virtual const char* layout() const noexcept = 0;   // a name for logs and `graft bench`
};

// One backend's kernels for a format. The format plugin owns it.
class FormatKernels {
 public:
  virtual ~FormatKernels() = default;
  // y[n, m] = x[n, k] * w[m, k]^T, w quantized rows along k, x and y f32. n == 1 is the decode
  // (matrix-vector) case, n > 1 prefill and speculative verification. `prepared` is null or what
  // prepare() made of this w; results are bit-identical either way.
  virtual Status matmul(Backend& backend, const TensorView& w, const PreparedWeights* prepared, const TensorView& x,
                        const TensorView& y) = 0;
  Status matmul(Backend& backend, const TensorView& w, const TensorView& x, const TensorView& y) {
    return matmul(backend, w, nullptr, x, y);
  }
  // The kernels' own layout of w, or out = null where they read the file's layout as it is (this
  // format or this CPU has no faster one). w's memory need not outlive the result. Where the
  // backend cannot read host memory (a GPU), w arrives in host memory and `out` must be the
  // weights in device memory: this is where weights are uploaded, once, at load.
  virtual Status prepare(Backend& backend, const TensorView& w, std::unique_ptr<PreparedWeights>& out) = 0;
  // The bytes prepare(backend, w) would hold (PreparedWeights::bytes()), 0 where it would make
  // nothing; from w's type and shape alone (w.data may be null): the memory planner counts a
  // model's kernel copies with it before anything is loaded (ABI 9).
  virtual std::uint64_t prepared_bytes(Backend& backend, const TensorView& w) = 0;
  // Embedding lookup: y [k, n] f32 = rows ids[0..n) of table [k, rows]; ids i32 [n] in backend
  // memory. `prepared` as for matmul (the tied lm_head's copy, where there is one).
  virtual Status get_rows(Backend& backend, const TensorView& table, const PreparedWeights* prepared,
                          const TensorView& ids, const TensorView& y) = 0;
};

class WeightFormat : public PluginObject {
 public:
  virtual std::span<const TypeTraits> types() const noexcept = 0;

  // Checks a tensor of this format beyond block geometry, e.g. a legacy layout that reused the id.
  virtual Status check_tensor(TypeId type, const std::int64_t* ne, int n_dims, std::uint64_t bytes) const = 0;

  // Reference conversions over n elements (n a multiple of the block size).
  virtual Status dequantize(TypeId type, const void* src, float* dst, std::int64_t n) const = 0;
  // importance: optional per-column weights (length row_len) for importance-aware quantizers.
  virtual Status quantize(TypeId type, const float* src, void* dst, std::int64_t n_rows,
                          std::int64_t row_len, const float* importance) const = 0;

  // Kernels for a backend by its name (Backend::name(): "cpu", "cuda"), or nullptr when this
  // format has none there: the host then asks the kernel libraries of that backend
  // (kernel_library.hpp) and reports a type neither has as an error, never a silent fallback.
  // Const: formats reached through HostServices::weight_format() are const; kernels are
  // stateless to callers (any scratch they keep is internal and thread-safe).
  virtual FormatKernels* kernels(std::string_view backend_name) const noexcept = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
