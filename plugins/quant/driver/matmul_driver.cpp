#include "driver/matmul_driver.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "activations/dense_activations.hpp"
#include "activations/q8_activations.hpp"
#include "driver/fp16_table.hpp"

namespace graft::quant {

namespace {

// Activation bytes a thread walks per weight row tile (prefill): the tile's weight rows stay in L1
// while this chunk streams from L2, and the weights are re-read from memory once per chunk.
constexpr std::int64_t kActivationBudgetBytes = 1024 * 1024;
constexpr std::int64_t kRowsPerUnit = 4;  // the kernels' row tile: threads split on its multiples
constexpr std::size_t kHugePage = std::size_t{2} << 20;  // transparent huge page (PackedWeights)
// During a forward pass the backend's threads are still spinning from the previous op, so handing
// them work costs about a microsecond: only products smaller than that much streaming run on the
// caller. (At 160 KiB, the q/k/v/o products of a 1-bit 1024-wide model ran on one core: -20%.)
constexpr std::uint64_t kInlineWorkBytes = 16 * 1024;
// Columns per thread from which a layout with PackedLayout::batches_by_column splits a batch on
// columns: below it (speculative verification's few columns) the rows split keeps every thread
// busy, and the per-column work is small next to a thread's share of rows.
constexpr std::int64_t kColumnsPerThread = 16;

// "[k, m]": n_dims entries, more if a higher dimension is not 1.
std::string shape(const TensorView& t) {
  int dims = std::max(1, t.n_dims);
  for (int d = dims; d < kMaxDims; ++d)
    if (t.ne[static_cast<std::size_t>(d)] != 1) dims = d + 1;
  std::string s = "[";
  for (int d = 0; d < dims; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.ne[static_cast<std::size_t>(d)]);
  }
  return s + "]";
}

bool contiguous_f32(const TensorView& t) {
  std::size_t stride = sizeof(float);
  for (std::size_t d = 0; d < 4; ++d) {
    if (t.ne[d] > 1 && t.nb[d] != stride) return false;
    stride *= static_cast<std::size_t>(t.ne[d]);
  }
  return true;
}

Status fail(const FormatSpec& spec, const char* op, const std::string& what) {
  return Status(Errc::invalid_argument, std::string(spec.traits.name) + " " + op + ": " + what);
}

// Checks a weight (or table) view of this format; returns its row stride in bytes.
Status check_weights(const FormatSpec& spec, const char* op, const char* what, const TensorView& w,
                     std::size_t& stride) {
  const TypeTraits& t = spec.traits;
  if (w.type != t.id)
    return fail(spec, op, std::string(what) + " type id " + std::to_string(w.type) + " is not " +
                              std::to_string(t.id) + " (" + t.name + ")");
  if (w.ne[0] < 0 || w.ne[1] < 0 || w.ne[2] != 1 || w.ne[3] != 1)
    return fail(spec, op, std::string(what) + " tensor must be 2-D [k, rows], got " + shape(w));
  if (w.ne[0] % t.block_elems != 0)
    return fail(spec, op, std::string(what) + " row length " + std::to_string(w.ne[0]) +
                              " is not a multiple of the block size " + std::to_string(t.block_elems));
  const std::uint64_t bytes = row_bytes(t, w.ne[0]);
  if (w.ne[1] > 1 && w.nb[1] < bytes)
    return fail(spec, op, std::string(what) + " row stride " + std::to_string(w.nb[1]) + " is smaller than a row (" +
                              std::to_string(bytes) + " bytes)");
  if (!w.data && w.ne[0] > 0 && w.ne[1] > 0) return fail(spec, op, std::string(what) + " tensor has no data");
  stride = w.ne[1] > 1 ? w.nb[1] : static_cast<std::size_t>(bytes);
  return Status::success();
}

Status check_f32_rows(const FormatSpec& spec, const char* op, const char* name, const TensorView& t,
                      std::int64_t cols, std::int64_t rows, bool exact_rows) {
  if (t.type != type_id::f32)
    return fail(spec, op, std::string(name) + " must be f32, got type id " + std::to_string(t.type));
  if (t.ne[0] != cols || (exact_rows && t.rows() != rows))
    return fail(spec, op, std::string(name) + " is " + shape(t) + ", expected " + std::to_string(cols) +
                              (exact_rows ? " x " + std::to_string(rows) : std::string(" columns")));
  if (!contiguous_f32(t)) return fail(spec, op, std::string(name) + " must be contiguous");
  if (!t.data && t.elements() > 0) return fail(spec, op, std::string(name) + " has no data");
  return Status::success();
}

}  // namespace

PackedWeights::PackedWeights(const FormatSpec& spec, const PackedLayout& layout, SimdLevel level, std::int64_t k,
                             std::int64_t m)
    : spec_(spec), layout_(layout), level_(level), k_(k), m_(m), size_(layout.bytes(k, m)) {
  const std::size_t align = size_ >= kHugePage ? kHugePage : 64;
  const std::size_t rounded = (std::max<std::size_t>(size_, 1) + align - 1) / align * align;
  auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(align, rounded));
  if (!p) throw std::bad_alloc();
  if (align == kHugePage) ::madvise(p, size_ / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice: failure is harmless
  data_.reset(p);
}

void PackedWeights::Free::operator()(std::uint8_t* p) const noexcept { std::free(p); }

std::uint64_t cpu_prepared_bytes(const FormatSpec& spec, SimdLevel level, const TensorView& w) noexcept {
  const PackedLayout* layout = packed_layout(spec, kernel_level(spec.gemm, level));
  if (!layout || (layout->used_for && !layout->used_for(w.ne[0]))) return 0;
  return layout->bytes(w.ne[0], w.ne[1]);
}

Status cpu_prepare(const FormatSpec& spec, SimdLevel level, Backend& backend, const TensorView& w,
                   std::unique_ptr<PreparedWeights>& out) {
  out.reset();
  level = kernel_level(spec.gemm, level);
  std::size_t w_stride = 0;
  GRAFT_TRY(check_weights(spec, "prepare", "weight", w, w_stride));
  const PackedLayout* layout = packed_layout(spec, level);
  const std::int64_t k = w.ne[0], m = w.ne[1];
  if (!layout || (layout->used_for && !layout->used_for(k))) return Status::success();
  std::unique_ptr<PackedWeights> packed;
  try {
    packed = std::make_unique<PackedWeights>(spec, *layout, level, k, m);
  } catch (const std::bad_alloc&) {
    return Status(Errc::out_of_memory, std::string(spec.traits.name) + " prepare: out of memory for the " +
                                           layout->name + " copy of a " + shape(w) + " weight (" +
                                           std::to_string(layout->bytes(k, m)) + " bytes)");
  }
  const auto groups = static_cast<std::size_t>((m + layout->row_group - 1) / layout->row_group);
  const auto* src = static_cast<const std::uint8_t*>(w.data);
  std::uint8_t* dst = packed->data();
  backend.parallel_for(groups, [&](std::size_t g0, std::size_t g1) {
    layout->pack(src, w_stride, k, m, static_cast<std::int64_t>(g0), static_cast<std::int64_t>(g1), dst);
  });
  out = std::move(packed);
  return Status::success();
}

Status cpu_matmul(const FormatSpec& spec, SimdLevel level, MatmulScratch& scratch, Backend& backend,
                  const TensorView& w, const PackedWeights* packed, const TensorView& x, const TensorView& y) {
  level = kernel_level(spec.gemm, level);
  GemmFn gemm = spec.gemm[level];
  std::size_t w_stride = 0;
  GRAFT_TRY(check_weights(spec, "matmul", "weight", w, w_stride));
  const std::int64_t k = w.ne[0], m = w.ne[1];
  std::int64_t rows_per_unit = kRowsPerUnit;
  if (packed) {
    if (&packed->spec() != &spec || packed->level() != level)
      return fail(spec, "matmul", "the prepared weights were made for other kernels");
    if (packed->k() != k || packed->m() != m)
      return fail(spec, "matmul", "the prepared weights are [" + std::to_string(packed->k()) + ", " +
                                      std::to_string(packed->m()) + "], the weight " + shape(w));
    gemm = packed->packed_layout().gemm[level];
    rows_per_unit = packed->packed_layout().row_group;
  }
  GRAFT_TRY(check_f32_rows(spec, "matmul", "x", x, k, 0, false));
  const std::int64_t n = x.rows();
  GRAFT_TRY(check_f32_rows(spec, "matmul", "y", y, m, n, true));
  if (n == 0 || m == 0) return Status::success();
  // Kernels read x (f32 weights: directly) while writing y, so they must not share memory.
  const auto xb = reinterpret_cast<std::uintptr_t>(x.data), yb = reinterpret_cast<std::uintptr_t>(y.data);
  if (xb < yb + static_cast<std::uintptr_t>(n * m) * 4 && yb < xb + static_cast<std::uintptr_t>(n * k) * 4)
    return fail(spec, "matmul", "y overlaps x");

  GemmArgs args;
  args.w = packed ? packed->data() : static_cast<const std::uint8_t*>(w.data);
  // Packed groups are whole rows' bytes apart, whatever the stride of the view they were made from.
  args.w_stride = packed ? static_cast<std::size_t>(row_bytes(spec.traits, k)) : w_stride;
  args.k = k;
  args.y = y.as<float>();
  args.y_stride = static_cast<std::size_t>(m);

  // Activations are converted once per call, before any thread reads them.
  Q8Activations& xq = scratch.q;
  std::vector<float>& rounded = scratch.rounded;
  std::int64_t act_row_bytes = k * 4;
  // The column-pair copy only where this call's kernels read it.
  // (The AMX kernels read none, but at the amx level the batches they do not take run the avx512
  // tiles, which do.)
  const bool pairs = spec.avx512_pairs && (level == SimdLevel::avx512 || level == SimdLevel::amx) && n >= 2;
  switch (spec.activations) {
    case ActivationForm::q8_0:
      quantize_activations(backend, level, x.as<float>(), n, k, spec.activation_offset, pairs, xq);
      args.xq = &xq;
      args.fp16 = fp16_table();
      // Per column and block: 32 quants, 8 offsets, a scale; the AVX-512 pairs carry 96 bytes.
      act_row_bytes = pairs ? k * 3 : k + k / 32 * 36;
      break;
    case ActivationForm::q8_k:
      // The batch tiles that read the sums of 32 (decode tiles add them themselves).
      quantize_q8k_activations(backend, level, x.as<float>(), n, k, pairs,
                               spec.q8k_sums32 && level == SimdLevel::avx2 && n >= 2, scratch.k);
      args.xk = &scratch.k;
      args.fp16 = fp16_table();
      act_row_bytes = k + k / kQK_K * 36;  // quants, f32 scale, 16 int16 sums
      break;
    case ActivationForm::f32: args.xf = x.as<float>(); break;
    case ActivationForm::f16_round:
      args.xf = prepare_dense_activations(backend, level, DenseRounding::f16, x.as<float>(), n * k, rounded);
      break;
    case ActivationForm::bf16_round:
      args.xf = prepare_dense_activations(backend, level, DenseRounding::bf16, x.as<float>(), n * k, rounded);
      break;
  }

  // Each thread owns whole row tiles; within them it walks the activations in chunks that stay in
  // L2, so a weight row is read from memory once per chunk rather than once per activation row.
  const std::int64_t chunk = std::max<std::int64_t>(4, kActivationBudgetBytes / std::max<std::int64_t>(1, act_row_bytes) / 4 * 4);
  const auto units = static_cast<std::size_t>((m + rows_per_unit - 1) / rows_per_unit);
  // Rows [r0, r1) x columns [cb, ce), the columns in activation chunks.
  auto rectangle = [&](std::int64_t r0, std::int64_t r1, std::int64_t cb, std::int64_t ce) {
    for (std::int64_t c0 = cb; c0 < ce; c0 += chunk) gemm(args, r0, r1, c0, std::min(ce, c0 + chunk));
  };
  auto rows = [&](std::size_t begin, std::size_t end) {
    rectangle(static_cast<std::int64_t>(begin) * rows_per_unit,
              std::min(m, static_cast<std::int64_t>(end) * rows_per_unit), 0, n);
  };
  // Where the rows or columns run never changes a result (see gemm.hpp), only how fast.
  if (row_bytes(spec.traits, k) * static_cast<std::uint64_t>(m * n) < kInlineWorkBytes) {
    rows(0, units);
  } else if (packed && packed->packed_layout().batches_by_column &&
             n >= kColumnsPerThread * static_cast<std::int64_t>(std::max(1u, backend.n_threads()))) {
    backend.parallel_for(static_cast<std::size_t>(n), [&](std::size_t begin, std::size_t end) {
      rectangle(0, m, static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end));
    });
  } else {
    backend.parallel_for(units, rows);
  }
  return Status::success();
}

Status cpu_get_rows(const FormatSpec& spec, Backend& backend, const TensorView& table, const TensorView& id_view,
                    const TensorView& y) {
  std::size_t stride = 0;
  GRAFT_TRY(check_weights(spec, "get_rows", "table", table, stride));
  const std::int64_t k = table.ne[0], rows = table.ne[1];
  if (id_view.type != type_id::i32 || id_view.ne[0] < 0 || id_view.ne[1] != 1 || id_view.ne[2] != 1 ||
      id_view.ne[3] != 1 || id_view.nb[0] != sizeof(std::int32_t))
    return fail(spec, "get_rows", "ids must be a packed i32 vector");
  const auto n = static_cast<std::size_t>(id_view.ne[0]);
  const auto* ids = static_cast<const std::int32_t*>(id_view.data);
  GRAFT_TRY(check_f32_rows(spec, "get_rows", "y", y, k, static_cast<std::int64_t>(n), true));
  if (n > 0 && !ids) return fail(spec, "get_rows", "ids is null");
  for (std::size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= rows)
      return fail(spec, "get_rows", "row id " + std::to_string(ids[i]) + " is out of range for a table of " +
                                        std::to_string(rows) + " rows");
  const auto* base = static_cast<const std::uint8_t*>(table.data);
  float* out = y.as<float>();
  auto copy = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      spec.dequantize_row(base + static_cast<std::size_t>(ids[i]) * stride, out + i * static_cast<std::size_t>(k), k);
  };
  if (static_cast<std::int64_t>(n) * k < (std::int64_t{1} << 16)) copy(0, n);
  else backend.parallel_for(n, copy);
  return Status::success();
}

}  // namespace graft::quant
