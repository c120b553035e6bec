// Byte counts for people: "1.50 GiB", "12.3 MiB", "4.0 KiB". One format for every command.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace graft {

inline std::string human_bytes(std::uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

}  // namespace graft
