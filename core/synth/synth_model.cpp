#include "synth/synth_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "synth/streaming_writer.hpp"
#include "synth/synth_values.hpp"

namespace graft::synth {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF data is little-endian; f32 is written as in memory");

// Elements generated (and quantized) per step: small enough for the 8B presets to stream in a
// few MiB, large enough that the per-call overheads vanish.
constexpr std::uint64_t kChunkElements = 1u << 20;

Status write_tensor(StreamingWriter& out, const SynthConfig& cfg, const SynthTypes& types, const TensorPlan& t,
                    std::uint64_t& done, std::uint64_t total, const ProgressFn& progress) {
  auto chosen = types.type_of(cfg, t);
  if (!chosen) return std::move(chosen).status();
  const TypeId type = *chosen;
  const WeightFormat* format = types.format_of(type);
  if (type != type_id::f32 && !format) return Status(Errc::internal, fmt::format("no weight format for type id {}", type));
  const std::uint64_t row_len = t.ne[0];
  std::uint64_t rows = 1;
  for (std::size_t j = 1; j < t.ne.size(); ++j) rows *= t.ne[j];
  const std::uint64_t row_bytes = *types.catalog->table().row_bytes(type, row_len);
  const std::uint64_t chunk_rows = std::max<std::uint64_t>(1, kChunkElements / row_len);

  const ValueStream values(cfg.seed, t.name, t.role, row_len);
  std::vector<float> f(static_cast<std::size_t>(std::min(rows, chunk_rows) * row_len));
  std::vector<std::uint8_t> q(format ? static_cast<std::size_t>(std::min(rows, chunk_rows) * row_bytes) : 0);
  for (std::uint64_t r = 0; r < rows; r += chunk_rows) {
    const std::uint64_t n_rows = std::min(chunk_rows, rows - r);
    const std::span<float> src(f.data(), static_cast<std::size_t>(n_rows * row_len));
    values.fill(r * row_len, src);
    std::span<const std::uint8_t> bytes;
    if (format) {
      GRAFT_TRY(format->quantize(type, src.data(), q.data(), static_cast<std::int64_t>(n_rows),
                                 static_cast<std::int64_t>(row_len), nullptr));
      bytes = {q.data(), static_cast<std::size_t>(n_rows * row_bytes)};
    } else {
      bytes = {reinterpret_cast<const std::uint8_t*>(src.data()), src.size_bytes()};
    }
    GRAFT_TRY(out.append(bytes));
    done += bytes.size();
    if (progress) progress(done, total, t.name);
  }
  return {};
}

}  // namespace

Expected<SynthSummary> write_model(const SynthConfig& cfg, const SynthTypes& types, const std::filesystem::path& path,
                                   const ProgressFn& progress) {
  GRAFT_TRY(validate(cfg));
  GRAFT_TRY(check_geometry(cfg, types));
  StreamingWriter out(types.catalog->table());
  GRAFT_TRY(add_metadata(out.metadata(), cfg, types.quantized(cfg)));
  const auto plan = plan_tensors(cfg);
  SynthSummary summary;
  for (const auto& t : plan) {
    auto type = types.type_of(cfg, t);
    if (!type) return std::move(type).status();
    GRAFT_TRY(out.declare(t.name, t.ne, *type));
    std::uint64_t n = 1;
    for (const auto d : t.ne) n *= d;
    summary.parameters += n;
  }
  summary.tensors = plan.size();
  summary.tensor_bytes = out.total_tensor_bytes();
  GRAFT_TRY(out.open(path));
  std::uint64_t done = 0;
  for (const auto& t : plan) GRAFT_TRY(write_tensor(out, cfg, types, t, done, summary.tensor_bytes, progress));
  GRAFT_TRY(out.finish());
  return summary;
}

}  // namespace graft::synth
