#include "synth/synth_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "quantize/row_chunks.hpp"
#include "synth/streaming_writer.hpp"
#include "synth/synth_values.hpp"

namespace graft::synth {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF data is little-endian; f32 is written as in memory");

Status write_tensor(StreamingWriter& out, const SynthConfig& cfg, const SynthTypes& types, const TensorPlan& t,
                    unsigned threads, std::uint64_t& done, std::uint64_t total, const ProgressFn& progress) {
  auto chosen = types.type_of(cfg, t);
  if (!chosen) return std::move(chosen).status();
  const TypeId type = *chosen;
  const WeightFormat* format = types.format_of(type);
  if (type != type_id::f32 && !format) return Status(Errc::internal, fmt::format("no weight format for type id {}", type));
  const std::uint64_t row_len = t.ne[0];
  std::uint64_t rows = 1;
  for (std::size_t j = 1; j < t.ne.size(); ++j) rows *= t.ne[j];
  const std::uint64_t row_bytes = *types.catalog->table().row_bytes(type, row_len);

  // Generate then quantize each part of a chunk on its own thread; f32 parts are copied as made.
  const ValueStream values(cfg.seed, t.name, t.role, row_len);
  std::vector<std::vector<float>> scratch(std::max(1u, threads));
  return quantize::convert_in_chunks(
      rows, row_len, row_bytes, threads,
      [&](unsigned k, std::uint64_t row, std::uint64_t n_rows, std::uint8_t* dst) -> Status {
        std::vector<float>& f = scratch[k];
        f.resize(static_cast<std::size_t>(n_rows * row_len));
        values.fill(row * row_len, f);
        if (!format) {
          std::memcpy(dst, f.data(), f.size() * sizeof(float));
          return {};
        }
        return format->quantize(type, f.data(), dst, static_cast<std::int64_t>(n_rows), static_cast<std::int64_t>(row_len),
                                nullptr);
      },
      [&](std::span<const std::uint8_t> bytes) {
        GRAFT_TRY(out.append(bytes));
        done += bytes.size();
        if (progress) progress(done, total, t.name);
        return Status{};
      });
}

}  // namespace

Expected<SynthSummary> write_model(const SynthConfig& cfg, const SynthTypes& types, const std::filesystem::path& path,
                                   unsigned threads, const ProgressFn& progress, bool shape_only) {
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
  if (shape_only)
    GRAFT_TRY(out.skip_rest());
  else
    for (const auto& t : plan) GRAFT_TRY(write_tensor(out, cfg, types, t, threads, done, summary.tensor_bytes, progress));
  GRAFT_TRY(out.finish());
  return summary;
}

}  // namespace graft::synth
