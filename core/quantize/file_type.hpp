// general.file_type: llama.cpp's llama_ftype number for a file whose matrices are mostly of one
// ggml type, as llama.cpp's loader derives it from the most common tensor type.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace graft::quantize {

// By ggml type name (f16 -> 1, q4_0 -> 2, q8_0 -> 7, q4_k -> 15 (Q4_K_M), ...). nullopt for a
// type llama.cpp has no file type for (a plugin's own type, mxfp4 whose 38 means "MoE experts only").
std::optional<std::uint32_t> llama_file_type(std::string_view type_name);

}  // namespace graft::quantize
