// Argument checks and work splitting shared by every format's CPU matmul and get_rows: prepares the
// activations once, then hands each backend thread a contiguous range of output rows.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "activations/q8_activations.hpp"
#include "driver/format_spec.hpp"
#include "graft/backend.hpp"

namespace graft::quant {

// Activation buffers reused across calls (page faults on fresh buffers cost as much as a small
// matmul).
struct MatmulScratch {
  Q8Activations q;
  Q8KActivations k;
  std::vector<float> rounded;
};

// A weight matrix in one of spec.packed's layouts, made for one level's kernels.
// Matrices of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge pages over
// their whole 2 MiB spans (the tail keeps small pages, so no memory is wasted): 512 times fewer
// page faults while packing and fewer TLB misses while streaming them.
class PackedWeights final : public PreparedWeights {
 public:
  PackedWeights(const FormatSpec& spec, const PackedLayout& layout, SimdLevel level, std::int64_t k, std::int64_t m);
  std::uint64_t bytes() const noexcept override { return size_; }
  const char* layout() const noexcept override { return layout_.name; }

  const FormatSpec& spec() const { return spec_; }
  const PackedLayout& packed_layout() const { return layout_; }
  SimdLevel level() const { return level_; }
  std::int64_t k() const { return k_; }
  std::int64_t m() const { return m_; }
  const std::uint8_t* data() const { return data_.get(); }
  std::uint8_t* data() { return data_.get(); }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const noexcept;
  };
  const FormatSpec& spec_;
  const PackedLayout& layout_;
  SimdLevel level_;
  std::int64_t k_, m_;
  std::size_t size_;
  std::unique_ptr<std::uint8_t[], Free> data_;
};

// packed: null, or made by cpu_prepare for this spec and level from a matrix of w's shape.
Status cpu_matmul(const FormatSpec& spec, SimdLevel level, MatmulScratch& scratch, Backend& backend,
                  const TensorView& w, const PackedWeights* packed, const TensorView& x, const TensorView& y);

// out = the packed form of w where the kernels of `level` read one, else null; cpu_prepared_bytes:
// its bytes (0 for none), from w's shape alone.
std::uint64_t cpu_prepared_bytes(const FormatSpec& spec, SimdLevel level, const TensorView& w) noexcept;
Status cpu_prepare(const FormatSpec& spec, SimdLevel level, Backend& backend, const TensorView& w,
                   std::unique_ptr<PreparedWeights>& out);

// ids: i32 [n]; the CPU reads the file's layout of the table (prepared copies are for matmul).
Status cpu_get_rows(const FormatSpec& spec, Backend& backend, const TensorView& table, const TensorView& ids,
                    const TensorView& y);

// Bytes of one row of `row_len` elements; callers have checked divisibility.
inline std::uint64_t row_bytes(const TypeTraits& t, std::int64_t row_len) {
  return static_cast<std::uint64_t>(row_len) / t.block_elems * t.block_bytes;
}

}  // namespace graft::quant
