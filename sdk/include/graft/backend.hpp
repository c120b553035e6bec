// A compute backend: devices, memory, execution and the generic (format-independent) ops.
// Quantized matmuls live in weight-format plugins, attention in KV-store plugins; both run on a
// backend through parallel_for (CPU) or native_stream (CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graft/plugin_object.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

struct DeviceInfo {
  std::string name;           // "cpu: AMD EPYC ... (2 threads, avx2)" or "NVIDIA H200"
  std::uint64_t total_memory = 0;  // bytes
  std::uint64_t free_memory = 0;   // bytes
  int compute_major = 0;       // CUDA compute capability; 0 on CPU
  int compute_minor = 0;
};

// Memory owned by a backend. Freed by its virtual destructor.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() const noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
  virtual MemoryKind kind() const noexcept = 0;
};

struct RopeParams {
  std::int32_t n_rot = 0;        // rotated dims per head (<= head_dim)
  bool neox = false;             // NEOX pairs (i, i + n_rot/2), else adjacent pairs (2i, 2i+1)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;       // linear position scaling
};

class Backend : public PluginObject {
 public:
  // "ok" when usable; otherwise why not (e.g. "no CUDA device: cudaGetDeviceCount returned 100").
  virtual Status status() const = 0;
  virtual std::vector<DeviceInfo> devices() const = 0;

  // ---- memory ----
  // Whether the host CPU may read and write memory of this kind directly (CPU backend: every
  // kind; CUDA: host and pinned_host only). Plugins that compute on the CPU check this instead of
  // guessing from native_stream().
  virtual bool host_accessible(MemoryKind kind) const noexcept = 0;
  // A Buffer must be destroyed before the backend that allocated it.
  virtual Expected<std::unique_ptr<Buffer>> allocate(std::size_t bytes, MemoryKind kind) = 0;
  virtual Status copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind,
                      std::size_t bytes) = 0;
  virtual Status synchronize() = 0;

  // ---- execution ----
  virtual unsigned n_threads() const noexcept = 0;
  // Runs fn(begin, end) over [0, n) split into contiguous ranges across the backend's threads and
  // returns when all are done. fn must not throw (an exception on a pool thread ends the process).
  // Re-entrant: a nested call, or a call from a second host thread, runs on its caller.
  virtual void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) = 0;
  // cudaStream_t on CUDA, nullptr on CPU.
  virtual void* native_stream() noexcept = 0;

  // ---- generic ops ----
  // Tensors are packed (contiguous) f32 rows, ne[0] = row length; other layouts are refused with
  // Errc::invalid_argument. The result for one row never depends on the other rows in the call or
  // on the thread count (bitwise), so a batched verify pass reproduces one-token decoding.
  // y = (x * (1 / sqrt(mean(x^2) + eps))) * w per row; w has ne[0] elements; y may alias x.
  virtual Status rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) = 0;
  // x: [head_dim, n_heads, n_tokens]; positions: n_tokens entries. In-place allowed (y == x).
  virtual Status rope(const TensorView& x, const std::int32_t* positions, const RopeParams& p,
                      const TensorView& y) = 0;
  // Row-wise softmax of x * scale; in place allowed.
  virtual Status softmax(const TensorView& x, float scale, const TensorView& y) = 0;
  // Elementwise; b is either a's shape or one row broadcast over all rows of a; y may alias a.
  virtual Status add(const TensorView& a, const TensorView& b, const TensorView& y) = 0;
  virtual Status mul(const TensorView& a, const TensorView& b, const TensorView& y) = 0;
  // y = silu(gate) * up; y may alias gate or up.
  virtual Status silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) = 0;
  // Dense (f32/f16/bf16) weights: y[n, m] = x[n, k] * w[m, k]^T (w rows along k as in GGUF).
  virtual Status matmul(const TensorView& w, const TensorView& x, const TensorView& y) = 0;
  // Dense embedding lookup: y[i] = table row ids[i]; an id outside the table is Errc::out_of_range.
  virtual Status get_rows(const TensorView& table, const std::int32_t* ids, std::size_t n,
                          const TensorView& y) = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
