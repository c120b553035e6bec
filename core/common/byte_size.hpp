// Sizes in bytes as people write them: "16GiB", "512 MiB", "2e9", "1.5G" (`graft plan --memory`,
// profile keys of ConfigType::bytes).
#pragma once

#include <cstdint>
#include <string_view>

#include "graft/status.hpp"

namespace graft {

// Bytes (binary units: K, M, G, T are powers of 1024; a bare number is bytes).
Expected<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace graft
