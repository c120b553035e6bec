#include "quantize/quantizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "quantize/file_type.hpp"
#include "quantize/row_chunks.hpp"
#include "synth/streaming_writer.hpp"

namespace graft::quantize {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF data is little-endian; f32 is copied as in memory");

std::uint64_t row_count(const gguf::TensorInfo& t) { return t.elements() / t.ne[0]; }

// Rows [0, n) of one chunk: dequantize (unless f32) then quantize (unless f32).
Status convert_rows(const gguf::TensorInfo& in, const WeightFormat* reader, TypeId out_type, const WeightFormat* writer,
                    const std::uint8_t* src, std::uint8_t* dst, std::uint64_t n_rows, std::vector<float>& scratch) {
  const std::uint64_t row_len = in.ne[0];
  const auto n = static_cast<std::int64_t>(n_rows * row_len);
  const float* f = nullptr;
  if (in.type == type_id::f32) {
    f = reinterpret_cast<const float*>(src);
  } else {
    scratch.resize(static_cast<std::size_t>(n));
    GRAFT_TRY(reader->dequantize(in.type, src, scratch.data(), n));
    f = scratch.data();
  }
  if (out_type == type_id::f32) {
    std::memcpy(dst, f, static_cast<std::size_t>(n) * sizeof(float));
    return {};
  }
  return writer->quantize(out_type, f, dst, static_cast<std::int64_t>(n_rows), static_cast<std::int64_t>(row_len), nullptr);
}

Status write_tensor(synth::StreamingWriter& out, const PlannedTensor& p, const TypeCatalog& catalog, unsigned threads,
                    std::uint64_t& done, std::uint64_t total, const ProgressFn& progress) {
  const gguf::TensorInfo& in = *p.input;
  const std::uint64_t rows = row_count(in);
  const std::uint64_t in_row = in.bytes / rows;
  const std::uint64_t out_row = p.bytes / rows;
  auto report = [&](std::uint64_t n) {
    done += n;
    if (progress) progress(done, total, in.name);
  };
  if (p.type == in.type) {  // same bytes: copy, never requantize
    constexpr std::uint64_t kCopyBytes = 16u << 20;
    for (std::uint64_t at = 0; at < in.bytes; at += kCopyBytes) {
      const auto n = static_cast<std::size_t>(std::min(kCopyBytes, in.bytes - at));
      GRAFT_TRY(out.append({in.data + at, n}));
      report(n);
    }
    return {};
  }
  const WeightFormat* reader = catalog.format(in.type);
  const WeightFormat* writer = catalog.format(p.type);
  if ((in.type != type_id::f32 && !reader) || (p.type != type_id::f32 && !writer))
    return Status(Errc::internal, fmt::format("{}: no converter for {} -> {}", in.name, catalog.name(in.type),
                                              catalog.name(p.type)));
  std::vector<std::vector<float>> scratch(std::max(1u, threads));
  bool write_failed = false;
  Status s = convert_in_chunks(
      rows, in.ne[0], out_row, threads,
      [&](unsigned k, std::uint64_t row, std::uint64_t n, std::uint8_t* dst) {
        return convert_rows(in, reader, p.type, writer, in.data + row * in_row, dst, n, scratch[k]);
      },
      [&](std::span<const std::uint8_t> bytes) {
        Status st = out.append(bytes);
        write_failed = !st.ok();
        if (!write_failed) report(bytes.size());
        return st;
      });
  if (s.ok() || write_failed) return s;  // the writer's errors name the file already
  return Status(s.code(), fmt::format("{}: {}", in.name, s.message()));
}

}  // namespace

Expected<Plan> plan_model(const gguf::File& in, const TypePolicy& policy, const TypeCatalog& catalog) {
  Plan plan;
  const bool has_output = in.tensor("output.weight") != nullptr;
  for (const gguf::TensorInfo& t : in.tensors()) {
    auto choice = policy.choose(t.name, std::span(t.ne.data(), t.n_dims), has_output);
    if (!choice) return std::move(choice).status();
    PlannedTensor p{&t, choice->type, std::move(choice->why)};
    p.bytes = *catalog.table().row_bytes(p.type, t.ne[0]) * row_count(t);
    if (p.type != t.type) {
      if (t.type != type_id::f32 && !catalog.format(t.type))
        return Status(Errc::not_found,
                      fmt::format("{}: cannot read its type {}: no weight-format plugin provides it (expected "
                                  "libgraft_quant_{}.so; add --plugin-dir DIR)",
                                  t.name, catalog.name(t.type), catalog.name(t.type)));
      p.requantized = catalog.block_elems(t.type) > 1;
    }
    plan.tensors.push_back(std::move(p));
  }
  plan.file_type = llama_file_type(catalog.name(policy.type()));
  return plan;
}

Totals totals(const Plan& plan) {
  Totals out;
  for (const auto& p : plan.tensors) {
    auto it = std::find_if(out.by_type.begin(), out.by_type.end(), [&](const TypeTotals& x) { return x.type == p.type; });
    if (it == out.by_type.end()) it = out.by_type.insert(out.by_type.end(), TypeTotals{p.type});
    ++it->tensors;
    it->elements += p.input->elements();
    it->bytes += p.bytes;
    ++out.tensors;
    out.elements += p.input->elements();
    out.bytes_before += p.input->bytes;
    out.bytes_after += p.bytes;
  }
  return out;
}

Status write_model(const gguf::File& in, const Plan& plan, const TypeCatalog& catalog, const std::filesystem::path& out,
                   unsigned threads, const ProgressFn& progress) {
  threads = std::max(1u, threads);
  synth::StreamingWriter w(catalog.table());
  for (const auto& kv : in.metadata()) {
    // Rewritten below (or dropped: a file type llama.cpp does not have must not stay wrong).
    if (kv.key == "general.file_type" || kv.key == "general.quantization_version") continue;
    w.metadata().add(kv.key, kv.value);
  }
  w.metadata().add_u32("general.quantization_version", 2);
  if (plan.file_type) w.metadata().add_u32("general.file_type", *plan.file_type);
  for (const auto& p : plan.tensors) {
    const auto& t = *p.input;
    GRAFT_TRY(w.declare(t.name, std::vector<std::uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), p.type));
  }
  const std::uint64_t total = w.total_tensor_bytes();
  GRAFT_TRY(w.open(out));
  std::uint64_t done = 0;
  for (const auto& p : plan.tensors) GRAFT_TRY(write_tensor(w, p, catalog, threads, done, total, progress));
  return w.finish();
}

}  // namespace graft::quantize
