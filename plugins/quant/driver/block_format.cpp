#include "driver/block_format.hpp"

#include <mutex>
#include <string>

#include "driver/matmul_driver.hpp"

namespace graft::quant {

namespace {

class CpuKernels final : public FormatKernels {
 public:
  CpuKernels(const FormatSpec& spec, SimdLevel level) : spec_(spec), level_(level) {}

  Status matmul(Backend& backend, const TensorView& w, const PreparedWeights* prepared, const TensorView& x,
                const TensorView& y) override {
    const auto* packed = dynamic_cast<const PackedWeights*>(prepared);
    if (prepared && !packed)
      return Status(Errc::invalid_argument,
                    std::string(spec_.traits.name) + " matmul: the prepared weights were made by another plugin");
    return guard([&] {
      // The cached scratch serves one call at a time; a concurrent call gets its own.
      std::unique_lock lock(scratch_mu_, std::try_to_lock);
      if (lock.owns_lock()) return cpu_matmul(spec_, level_, scratch_, backend, w, packed, x, y);
      MatmulScratch local;
      return cpu_matmul(spec_, level_, local, backend, w, packed, x, y);
    });
  }
  Status prepare(Backend& backend, const TensorView& w, std::unique_ptr<PreparedWeights>& out) override {
    return guard([&] { return cpu_prepare(spec_, level_, backend, w, out); });
  }
  std::uint64_t prepared_bytes(Backend&, const TensorView& w) override {
    return cpu_prepared_bytes(spec_, level_, w);
  }
  Status get_rows(Backend& backend, const TensorView& table, const PreparedWeights*, const TensorView& ids,
                  const TensorView& y) override {
    return guard([&] { return cpu_get_rows(spec_, backend, table, ids, y); });
  }

 private:
  // Scratch allocation is the only thing that can throw; it must not cross the plugin boundary.
  template <class F>
  Status guard(F&& body) noexcept {
    try {
      return body();
    } catch (const std::bad_alloc&) {
      return Status(Errc::out_of_memory, std::string(spec_.traits.name) + ": out of memory for activation scratch or prepared weights");
    } catch (const std::exception& e) {
      return Status(Errc::internal, std::string(spec_.traits.name) + ": " + e.what());
    }
  }

  const FormatSpec& spec_;
  SimdLevel level_;
  std::mutex scratch_mu_;
  MatmulScratch scratch_;
};

class BlockFormat final : public WeightFormat {
 public:
  BlockFormat(const FormatSpec& spec, SimdLevel level) : spec_(spec), cpu_(spec, level) {}

  std::span<const TypeTraits> types() const noexcept override { return {&spec_.traits, 1}; }

  Status check_tensor(TypeId type, const std::int64_t* ne, int n_dims, std::uint64_t bytes) const override {
    GRAFT_TRY(check_type(type, "tensor"));
    if (n_dims < 1 || n_dims > kMaxDims || !ne)
      return fail("tensor", "n_dims " + std::to_string(n_dims) + " is outside 1.." + std::to_string(kMaxDims));
    std::uint64_t rows = 1;
    for (int d = 0; d < n_dims; ++d) {
      if (ne[d] < 0) return fail("tensor", "dimension " + std::to_string(d) + " is negative");
      if (d > 0) rows *= static_cast<std::uint64_t>(ne[d]);
    }
    GRAFT_TRY(check_multiple(ne[0], "tensor", "row length"));
    const std::uint64_t expected = rows * row_bytes(spec_.traits, ne[0]);
    if (bytes != expected)
      return fail("tensor", std::to_string(bytes) + " bytes, expected " + std::to_string(expected) + " for its shape");
    return Status::success();
  }

  Status dequantize(TypeId type, const void* src, float* dst, std::int64_t n) const override {
    GRAFT_TRY(check_type(type, "dequantize"));
    GRAFT_TRY(check_multiple(n, "dequantize", "element count"));
    if (n > 0 && (!src || !dst)) return fail("dequantize", "null pointer");
    spec_.dequantize_row(src, dst, n);
    return Status::success();
  }

  Status quantize(TypeId type, const float* src, void* dst, std::int64_t n_rows, std::int64_t row_len,
                  const float*) const override {
    GRAFT_TRY(check_type(type, "quantize"));
    GRAFT_TRY(check_multiple(row_len, "quantize", "row length"));
    if (n_rows < 0) return fail("quantize", "negative row count " + std::to_string(n_rows));
    if (n_rows > 0 && row_len > 0 && (!src || !dst)) return fail("quantize", "null pointer");
    const std::uint64_t bytes = row_bytes(spec_.traits, row_len);
    for (std::int64_t r = 0; r < n_rows; ++r)
      spec_.quantize_row(src + r * row_len, static_cast<std::uint8_t*>(dst) + static_cast<std::uint64_t>(r) * bytes,
                         row_len);
    return Status::success();
  }

  FormatKernels* kernels(std::string_view backend_name) const noexcept override {
    return backend_name == "cpu" ? &cpu_ : nullptr;
  }

 private:
  Status fail(const char* op, const std::string& what) const {
    return Status(Errc::invalid_argument, std::string(spec_.traits.name) + " " + op + ": " + what);
  }
  Status check_type(TypeId type, const char* op) const {
    if (type == spec_.traits.id) return Status::success();
    return fail(op, "type id " + std::to_string(type) + " is not " + std::to_string(spec_.traits.id) + " (" +
                        spec_.traits.name + ")");
  }
  Status check_multiple(std::int64_t n, const char* op, const char* noun) const {
    if (n >= 0 && n % spec_.traits.block_elems == 0) return Status::success();
    return fail(op, std::string(noun) + " " + std::to_string(n) + " is not a multiple of the block size " +
                        std::to_string(spec_.traits.block_elems));
  }

  const FormatSpec& spec_;
  mutable CpuKernels cpu_;  // handed out by the const kernels(); its scratch is internally locked
};

}  // namespace

PluginObject* create_block_format(const FormatSpec& spec, const HostServices& host, const Config& config,
                                  Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    auto level = resolve_simd_level(config);
    // The host prefixes these with the plugin's name and file.
    if (!level) {
      error = level.status();
      return nullptr;
    }
    if (!spec.gemm[kernel_level(spec.gemm, *level)]) {
      error = Status(Errc::unsupported, std::string("no ") + simd_level_name(*level) + " kernels in this build");
      return nullptr;
    }
    host.log(LogLevel::debug, spec.traits.name, std::string("cpu kernels: ") + simd_level_name(*level));
    return new BlockFormat(spec, *level);
  });
}

}  // namespace graft::quant
