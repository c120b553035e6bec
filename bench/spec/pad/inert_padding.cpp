#include "inert_padding.hpp"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_file.hpp"
#include "gguf/gguf_writer.hpp"

namespace graft::bench {

namespace {

// "blk.12.attn_q.weight" -> (12, "attn_q.weight").
std::optional<std::pair<std::uint32_t, std::string>> block_tensor(const std::string& name) {
  if (!name.starts_with("blk.")) return std::nullopt;
  const std::size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return std::nullopt;
  std::uint32_t i = 0;
  const auto [p, ec] = std::from_chars(name.data() + 4, name.data() + dot, i);
  if (ec != std::errc() || p != name.data() + dot) return std::nullopt;
  return std::pair{i, name.substr(dot + 1)};
}

// The two projections that write into the residual stream: zeroed, the layer adds nothing.
bool writes_residual(const std::string& suffix) {
  return suffix.starts_with("attn_output.") || suffix.starts_with("ffn_down.");
}

}  // namespace

Expected<PaddingReport> pad_with_inert_layers(const std::filesystem::path& in, const std::filesystem::path& out,
                                             std::uint32_t n_inert) {
  auto opened = gguf::File::open(in);
  if (!opened) return std::move(opened).status();
  const gguf::File& f = **opened;
  const auto arch = f.get_string("general.architecture");
  if (!arch) return Status(Errc::invalid_argument, fmt::format("{}: no general.architecture", f.name()));
  const std::string block_key = *arch + ".block_count", nextn_key = *arch + ".nextn_predict_layers";
  const auto blocks = f.get_int(block_key);
  if (!blocks || *blocks < 1) return Status(Errc::invalid_argument, fmt::format("{}: no {}", f.name(), block_key));
  const std::int64_t nextn = f.get_int(nextn_key).value_or(0);
  if (nextn < 0 || nextn >= *blocks)
    return Status(Errc::invalid_argument, fmt::format("{}: {} = {} with {} blocks", f.name(), nextn_key, nextn, *blocks));
  PaddingReport report;
  report.main_layers = static_cast<std::uint32_t>(*blocks - nextn);
  report.nextn_layers = static_cast<std::uint32_t>(nextn);
  const std::uint32_t last = report.main_layers - 1;

  gguf::Writer w;
  w.set_alignment(static_cast<std::uint32_t>(f.alignment()));
  for (const gguf::KeyValue& kv : f.metadata()) {
    if (kv.key == "general.alignment") continue;
    // A per-layer array would need entries for the new layers: refused rather than guessed.
    if (kv.key.starts_with(*arch + ".") && kv.value.type == gguf::ValueType::array &&
        kv.value.items.size() == static_cast<std::size_t>(*blocks))
      return Status(Errc::invalid_argument,
                    fmt::format("{}: {} is a per-layer array; padding such a model is not implemented", f.name(), kv.key));
    w.add(kv.key, kv.value);
  }
  w.add_u32(block_key, static_cast<std::uint32_t>(*blocks) + n_inert);
  const std::string name = f.get_string("general.name").value_or(in.stem().string());
  w.add_string("general.name", fmt::format("{} + {} inert layers (a benchmark harness, not a model)", name, n_inert));
  w.add_u32("graft.bench.inert_layers", n_inert);
  w.add_u32("graft.bench.inert_after_layer", last);

  const auto add = [&](const std::string& to, const gguf::TensorInfo& t, bool zero) -> Status {
    const std::vector<std::uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (!zero) return w.add_tensor(to, ne, t.type, std::span(t.data, t.bytes));
    // All-zero bytes are exact zeros in every GGUF type (zero scales, zero values).
    const std::vector<std::uint8_t> zeros(t.bytes, 0);
    return w.add_tensor(to, ne, t.type, zeros);
  };
  bool found_last = false;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const auto b = block_tensor(t.name);
    if (!b) {
      GRAFT_TRY(add(t.name, t, false));
      continue;
    }
    const auto [i, suffix] = *b;
    // Main layers keep their names; nextn blocks move behind the inert layers.
    GRAFT_TRY(add(i < report.main_layers ? t.name : fmt::format("blk.{}.{}", i + n_inert, suffix), t, false));
    found_last = found_last || i == last;
  }
  if (!found_last) return Status(Errc::invalid_argument, fmt::format("{}: no tensors of layer {}", f.name(), last));
  for (std::uint32_t k = 0; k < n_inert; ++k)
    for (const gguf::TensorInfo& t : f.tensors()) {
      const auto b = block_tensor(t.name);
      if (!b || b->first != last) continue;
      GRAFT_TRY(add(fmt::format("blk.{}.{}", report.main_layers + k, b->second), t, writes_residual(b->second)));
      report.bytes_added += t.bytes;
    }
  GRAFT_TRY(w.write(out));
  return report;
}

}  // namespace graft::bench
