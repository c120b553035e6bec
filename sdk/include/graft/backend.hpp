// A compute backend: devices, memory, a stream of work, and the generic (format-independent) ops
// the forward pass needs. Matmuls and embedding gathers, dense (f32/f16/bf16) or quantized, come
// from weight-format kernels (the format plugin's own, or a kernel library's for this backend:
// weight_format.hpp), attention from KV-store plugins; all of it runs on the backend's stream.
//
// Execution model (ABI 7, docs/architecture.md "Devices"): every op, and copy_async, is enqueued
// on the backend's one stream and runs in order; on the CPU "enqueue" is "run now". Nothing inside
// a forward pass waits for the device: the pass ends with one synchronize(), which is when its
// logits and hidden states may be read on the host. Index arrays (positions, ids, masks, tree
// parents) are TensorViews in memory the backend reads (device memory on a GPU), so a pass is a
// fixed sequence of launches that a backend with graphs can capture once and replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
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

// Memory owned by a backend. Freed by its virtual destructor, which waits for work that may still
// use it.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() const noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
  virtual MemoryKind kind() const noexcept = 0;
};

// A point in the backend's stream: ready once everything enqueued before it has run.
class Event {
 public:
  virtual ~Event() = default;
  virtual bool ready() const noexcept = 0;
  // Waits on the host until the event is ready.
  virtual Status synchronize() = 0;
};

// A captured sequence of the backend's work (a CUDA graph), launched as one unit. Made and
// updated by Backend::end_capture; its launches run with the pointers and sizes of its capture.
class Graph {
 public:
  virtual ~Graph() = default;
  // Enqueues the whole graph on the backend's stream.
  virtual Status launch() = 0;
  // How often end_capture re-made it from scratch (updates in place do not count): for logs.
  virtual std::uint64_t instantiations() const noexcept = 0;
};

struct RopeParams {
  std::int32_t n_rot = 0;        // rotated dims per head (<= head_dim)
  bool neox = false;             // NEOX pairs (i, i + n_rot/2), else adjacent pairs (2i, 2i+1)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;       // linear position scaling
};

class Backend : public PluginObject {
 public:
  // The plugin's name ("cpu", "cuda"): what WeightFormat::kernels() is asked for, so nothing needs
  // to carry a backend's name beside the Backend itself.
  virtual std::string_view name() const noexcept = 0;
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
  // Copies now: waits for the stream, then copies (a blocking transfer, for loading and tests).
  virtual Status copy(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind,
                      std::size_t bytes) = 0;
  // Enqueues the copy on the stream after the work before it and returns (the CPU copies at once).
  // Host or pinned-host memory it reads or writes must stay valid, and unchanged by the host for a
  // source, until a synchronize() or an event recorded after it; pinned_host lets a GPU copy
  // without staging, and is the only host memory a captured graph may copy to or from.
  virtual Status copy_async(void* dst, MemoryKind dst_kind, const void* src, MemoryKind src_kind,
                            std::size_t bytes) = 0;
  // Waits until everything enqueued has run; reports the first failure of enqueued work.
  virtual Status synchronize() = 0;
  virtual Expected<std::unique_ptr<Event>> record_event() = 0;

  // ---- graphs (CUDA graphs) ----
  // Whether begin_capture can work; the CPU has none (its ops run as they are called).
  virtual bool graphs_supported() const noexcept = 0;
  // From here until end_capture, enqueued work is recorded, not run: no op may wait for the
  // device, and copy_async may touch only device and pinned-host memory. Errc::unsupported
  // where graphs_supported() is false.
  virtual Status begin_capture() = 0;
  // Ends the capture. `graph` null: a new graph is made of it; else the graph is updated in place
  // when its launches have the same shape (cheap), or made anew. Either way the capture is over
  // after the call, also on failure.
  virtual Status end_capture(std::unique_ptr<Graph>& graph) = 0;

  // ---- execution ----
  virtual unsigned n_threads() const noexcept = 0;
  // Runs fn(begin, end) over [0, n) split into contiguous ranges across the backend's threads and
  // returns when all are done. fn must not throw (an exception on a pool thread ends the process).
  // Re-entrant: a nested call, or a call from a second host thread, runs on its caller.
  virtual void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) = 0;
  // cudaStream_t on CUDA (kernel libraries launch on it), nullptr on CPU.
  virtual void* native_stream() noexcept = 0;

  // ---- generic ops: the ones the forward pass calls (contracts in docs/backends.md) ----
  // f32 tensors, ne[0] = row length. Where an op says "row-strided", a tensor's rows (ne[0]
  // elements each, contiguous) may lie apart: nb[1..3] are any multiples of 4 bytes that keep rows
  // from overlapping (the q/k or gate/up part of a fused projection's output); elsewhere tensors
  // must be packed. Other layouts and types are Errc::invalid_argument, with one line naming the
  // op, the tensor and the fault. An output may be an input only where stated, and then exactly
  // the same view; any other overlap is refused. Empty batches (a zero in ne[1..3]) succeed.
  // A row's result never depends on the other rows in the call or on the thread count (bitwise),
  // so a batched verify pass reproduces one-token decoding.
  //
  // y = (x * (1 / sqrt(mean(x^2) + eps))) * w per row. x and y row-strided, w packed with ne[0]
  // elements; y may be x.
  virtual Status rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) = 0;
  // x: [head_dim, n_heads, n_tokens] (ne[3] = 1), row-strided; positions: i32 [n_tokens] in
  // backend memory. y like x, row-strided; y may be x.
  virtual Status rope(const TensorView& x, const TensorView& positions, const RopeParams& p,
                      const TensorView& y) = 0;
  // y = a + b, all packed; b is either a's shape or one row broadcast over all rows of a. y may be
  // a, or b when b is not broadcast.
  virtual Status add(const TensorView& a, const TensorView& b, const TensorView& y) = 0;
  // y = silu(gate) * up, all row-strided and of one shape; y may be gate or up.
  virtual Status silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) = 0;

  // ---- the ops of gated (linear) attention: qwen35's gated delta-net and gated full attention ----
  // y = x * sigmoid(g) (an output gate), all row-strided and of one shape; y may be x or g.
  virtual Status sigmoid_mul(const TensorView& x, const TensorView& g, const TensorView& y) = 0;
  // y = x / max(sqrt(sum(x^2)), eps) per row (the sum in double, as ggml_l2_norm). x and y
  // row-strided; y may be x.
  virtual Status l2_norm(const TensorView& x, float eps, const TensorView& y) = 0;
  // The delta-net's gates from its raw projections, per row of Hv heads: g = softplus(alpha +
  // dt_bias) * ssm_a (the log of the step's decay; ssm_a = -exp(A_log) <= 0) and b = sigmoid(beta).
  // alpha, beta, g, b: [Hv, rows...] row-strided; dt_bias, ssm_a: packed [Hv]. g may be alpha, b
  // may be beta.
  virtual Status delta_net_gates(const TensorView& alpha, const TensorView& beta, const TensorView& dt_bias,
                                 const TensorView& ssm_a, const TensorView& g, const TensorView& b) = 0;
  // A depthwise causal convolution then silu, over rows that follow a recurrent window:
  // y[c, t] = silu(sum_i w[i, c] * window_t[c][i]) where window_t is the Kc - 1 raw inputs before
  // row t, then x[., t] (oldest first). x, y: [C, T] row-strided; w: packed [Kc, C]; state: packed
  // [Kc - 1, C] (per channel its last Kc - 1 raw inputs, oldest first).
  // parents (data null: none) for a chain (row t follows row t - 1, row 0 the state); otherwise
  // i32 [T] in backend memory, parents[t] the row before t (< t), or -1 for the state: the rows of
  // a token tree, each after its ancestors. state_out (data null: none) receives the window after
  // the last row (a chain only); it may be state.
  virtual Status causal_conv_silu(const TensorView& x, const TensorView& w, const TensorView& state,
                                  const TensorView& parents, const TensorView& y, const TensorView& state_out) = 0;
  // The gated delta rule, recurrently, one row after another (qwen35.md section 4): per v head j
  // (q/k head j mod Hk), with S the head's state, S[i][m] at state[j][m][i]:
  //   S = exp(g[j]) * S;  d[m] = b[j] * (v[m] - sum_i S[i][m] k[i]);  S[i][m] += k[i] d[m];
  //   out[m] = (sum_i S[i][m] q[i]) / sqrt(Dk)
  // q, k: [Dk, Hk, T]; v, out: [Dv, Hv, T]; g, b: [Hv, T]; all row-strided. state: packed
  // [Dk, Dv, Hv]. Hv a multiple of Hk. parents and state_out as in causal_conv_silu. A row's
  // result is that of running its rows (its ancestors, then it) one at a time, bit for bit.
  // deltas (data null: none) receives each row's d, packed [Dv, Hv, T]: with the row's k and g it
  // moves its parent's state on to the row's without the dot products (delta_net_apply).
  virtual Status gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                                 const TensorView& b, const TensorView& state, const TensorView& parents,
                                 const TensorView& out, const TensorView& state_out, const TensorView& deltas) = 0;
  // Moves a delta state on by rows a pass over a token tree has computed: for each of `rows` in
  // order (indices into k, d and g), per v head j (q/k head j mod Hk): S = exp(g[j]) * S, then
  // S[i][m] += k[i] d[m]: the same bits as gated_delta_net's chain over those rows. k: [Dk, Hk, T]
  // and g: [Hv, T] row-strided, d: [Dv, Hv, T] (gated_delta_net's deltas); state: packed
  // [Dk, Dv, Hv], moved on in place. rows: i32 [n_rows] in backend memory, each in [0, T).
  virtual Status delta_net_apply(const TensorView& k, const TensorView& d, const TensorView& g,
                                 const TensorView& rows, const TensorView& state) = 0;
  // Moves a causal conv window on by raw inputs: state (packed [Kc - 1, C], per channel its last
  // Kc - 1 raw inputs, oldest first) becomes the last Kc - 1 of (state, x[., rows[0]], ...,
  // x[., rows[n_rows - 1]]), as causal_conv_silu's state_out over those rows. x: [C, T]
  // row-strided; rows: i32 [n_rows] in backend memory, each in [0, T).
  virtual Status conv_window_advance(const TensorView& x, const TensorView& rows, const TensorView& state) = 0;

  // ---- what the head hands back ----
  // ids: i32 [k, rows], values: f32 [k, rows] (data null: not wanted) = the k largest entries of
  // each row of x (f32 [n, rows], packed), largest first, the lower index first among equal
  // values; NaN counts as smaller than every number. k <= n. So a greedy walk reads back k = 1
  // id per row, not a row of n_vocab logits.
  virtual Status top_k(const TensorView& x, std::uint32_t k, const TensorView& ids, const TensorView& values) = 0;
  // y = softmax of each row of x (f32 [n, rows], packed; y like x, may be x): m = the row's
  // largest number (NaN ignored), e_i = exp(x_i - m) in f32, s = their sum in double in index
  // order, y_i = e_i * (float)(1 / s). A drafter's head then hands back the probabilities of its
  // top_k candidates, not n_vocab logits.
  virtual Status softmax(const TensorView& x, const TensorView& y) = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
