// `graft quantize`: converts every tensor of a GGUF model to the type the TypePolicy chooses and
// writes a new GGUF v3, streaming tensor by tensor (the input is mapped, the output written in
// chunks), so a model bigger than RAM can be converted. All metadata is copied;
// general.quantization_version is set to 2 and general.file_type to llama.cpp's number for
// --type (dropped when llama.cpp has none for it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.hpp"
#include "graft/status.hpp"
#include "quantize/type_catalog.hpp"
#include "quantize/type_policy.hpp"

namespace graft::quantize {

struct PlannedTensor {
  const gguf::TensorInfo* input = nullptr;
  TypeId type = type_id::f32;  // output type
  std::string why;             // the policy rule that chose it
  std::uint64_t bytes = 0;     // output bytes
  // Converted from a block-quantized input to another type: precision already lost is lost
  // again (the command warns).
  bool requantized = false;
};

struct Plan {
  std::vector<PlannedTensor> tensors;  // input order
  std::optional<std::uint32_t> file_type;
};

// The output type of every tensor of `in`. Errors: a policy error (naming the tensor), or an input
// type that must be converted but that no loaded plugin reads.
Expected<Plan> plan_model(const gguf::File& in, const TypePolicy& policy, const TypeCatalog& catalog);

struct TypeTotals {
  TypeId type = type_id::f32;
  std::uint64_t tensors = 0, elements = 0, bytes = 0;
};

struct Totals {
  std::vector<TypeTotals> by_type;  // output types in first-use order
  std::uint64_t tensors = 0, elements = 0, bytes_before = 0, bytes_after = 0;
};
Totals totals(const Plan& plan);

using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total, std::string_view tensor)>;

// Writes `plan` for `in` to `out` (atomically: temporary file + rename). threads >= 1 share each
// chunk of rows.
Status write_model(const gguf::File& in, const Plan& plan, const TypeCatalog& catalog, const std::filesystem::path& out,
                   unsigned threads, const ProgressFn& progress = {});

}  // namespace graft::quantize
