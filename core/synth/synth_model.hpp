// Writes a complete synthetic model GGUF: architecture metadata, the synthetic tokenizer and every
// tensor, streamed one row chunk at a time so even the 8B presets need only a few MiB per thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>

#include "graft/status.hpp"
#include "gguf/gguf_writer.hpp"
#include "synth/synth_config.hpp"
#include "synth/synth_types.hpp"

namespace graft::synth {

// done/total: tensor data bytes; called after each written chunk.
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total, std::string_view tensor)>;

struct SynthSummary {
  std::uint64_t parameters = 0;
  std::uint64_t tensors = 0;
  std::uint64_t tensor_bytes = 0;
};

// general.*, <arch>.* and tokenizer.ggml.* keys.
Status add_metadata(gguf::Writer& w, const SynthConfig& cfg, bool quantized);

// cfg must pass validate() and check_geometry(); same arguments give a byte-identical file, whatever
// `threads` (generation and quantization of each chunk of rows is shared by max(1, threads)).
// shape_only: the header as it would be, every tensor's data a sparse hole of zeros (a file to
// plan memory with, `graft plan`, in no time and no disk; its outputs mean nothing).
Expected<SynthSummary> write_model(const SynthConfig& cfg, const SynthTypes& types, const std::filesystem::path& path,
                                   unsigned threads = 1, const ProgressFn& progress = {}, bool shape_only = false);

}  // namespace graft::synth
