// Writes a whole file so that readers never see half of it: a unique temporary file in the same
// directory, written, synced, then renamed over the target (GGUF files, the speculative policy
// file). Errors are one line naming the file and the cause.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

#include "graft/status.hpp"

namespace graft {

Status write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

}  // namespace graft
