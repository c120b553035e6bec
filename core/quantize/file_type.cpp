#include "quantize/file_type.hpp"

#include <utility>

namespace graft::quantize {

std::optional<std::uint32_t> llama_file_type(std::string_view type_name) {
  // include/llama.h (LLAMA_FTYPE_*) and the type -> ftype guess in llama-model-loader.cpp: the
  // k-quants map to their _M mixes, as llama.cpp reports them.
  static constexpr std::pair<std::string_view, std::uint32_t> kTable[] = {
      {"f32", 0},      {"f16", 1},      {"q4_0", 2},     {"q4_1", 3},     {"q8_0", 7},     {"q5_0", 8},
      {"q5_1", 9},     {"q2_k", 10},    {"q3_k", 12},    {"q4_k", 15},    {"q5_k", 17},    {"q6_k", 18},
      {"iq2_xxs", 19}, {"iq2_xs", 20},  {"iq3_xxs", 23}, {"iq1_s", 24},   {"iq4_nl", 25},  {"iq3_s", 26},
      {"iq2_s", 28},   {"iq4_xs", 30},  {"iq1_m", 31},   {"bf16", 32},    {"tq1_0", 36},   {"tq2_0", 37},
      {"nvfp4", 39},   {"q1_0", 40},    {"q2_0", 41},
  };
  for (const auto& [name, ftype] : kTable)
    if (name == type_name) return ftype;
  return std::nullopt;
}

}  // namespace graft::quantize
