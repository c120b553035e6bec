#include "sysram_options.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "device_store.hpp"

namespace graft::kv {

namespace {

// Sizes in messages (a plugin does not link the host's human_bytes).
std::string mib(std::uint64_t bytes) {
  const double m = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char text[64];
  std::snprintf(text, sizeof(text), m >= 1024 ? "%.2f GiB" : "%.1f MiB", m >= 1024 ? m / 1024 : m);
  return text;
}

}  // namespace

Expected<SysramOptions> parse_sysram_options(const Config& c) {
  SysramOptions o;
  const std::string type = c.get_string("type").value_or("f16");
  if (type != "f16" && type != "f32")
    return Status(Errc::invalid_argument, "type = \"" + type + "\" is not supported; valid types: f16, f32");
  o.type = type == "f32" ? CacheType::f32 : CacheType::f16;
  const std::string mode = c.get_string("mode").value_or("exact");
  if (mode == "retrieval-lossy") o.mode = SysramMode::retrieval_lossy;
  else if (mode != "exact")
    return Status(Errc::invalid_argument, "mode = \"" + mode + "\" is not a mode: \"exact\" (the default: every token "
                                          "attended) or \"retrieval-lossy\" (the sink, the window and the best blocks)");
  o.device_tokens = static_cast<std::uint32_t>(c.get_int("device_tokens").value_or(o.device_tokens));
  o.chunk = static_cast<std::uint32_t>(c.get_int("chunk").value_or(o.chunk));
  o.host_budget = static_cast<std::uint64_t>(c.get_int("host_budget").value_or(0));
  for (const char* key : {"sink", "block", "top_blocks"})
    if (c.has(key) && o.mode != SysramMode::retrieval_lossy)
      return Status(Errc::invalid_argument, std::string(key) + " is a setting of mode = \"retrieval-lossy\", and mode "
                                            "is \"exact\" (every token attended)");
  o.sink = static_cast<std::uint32_t>(c.get_int("sink").value_or(o.sink));
  o.block = static_cast<std::uint32_t>(c.get_int("block").value_or(o.block));
  o.top_blocks = static_cast<std::uint32_t>(c.get_int("top_blocks").value_or(o.top_blocks));
  if (o.mode == SysramMode::retrieval_lossy && o.host_budget == 0)
    return Status(Errc::invalid_argument, "mode = \"retrieval-lossy\" needs host_budget (the system RAM one "
                                          "sequence's K/V may take, e.g. \"32GiB\"): the retrieval mode's memory is "
                                          "bounded");
  return o;
}

Expected<KvMemory> sysram_memory(const SysramOptions& o, const KvGeometry& g) {
  const std::uint64_t per_token = bytes_per_token(g, o.type, o.type);
  const std::uint64_t window = std::uint64_t(o.device_tokens) * per_token;
  if (o.host_budget && o.host_budget < window)
    return Status(Errc::invalid_argument, "host_budget = " + mib(o.host_budget) + " is below the device window's " +
                                              mib(window) + " (device_tokens " + std::to_string(o.device_tokens) +
                                              " x " + std::to_string(per_token) +
                                              " bytes per token): system RAM keeps every token, the window's too");
  KvMemory m;
  m.host_bytes = std::uint64_t(g.capacity) * per_token;
  if (o.mode == SysramMode::retrieval_lossy) {
    // Each block's elementwise min and max of K per KV head and layer (f32), to score it.
    const std::uint64_t blocks = (std::uint64_t(g.capacity) + o.block - 1) / o.block;
    m.host_bytes += blocks * g.n_layers * g.n_kv_heads * 2ull * g.head_dim_k * sizeof(float);
  }
  if (o.host_budget && m.host_bytes > o.host_budget)
    return Status(Errc::out_of_memory, "host_budget = " + mib(o.host_budget) + " holds " +
                                           std::to_string(o.host_budget / std::max<std::uint64_t>(per_token, 1)) +
                                           " tokens of this model's K/V; a context of " + std::to_string(g.capacity) +
                                           " tokens needs " + mib(m.host_bytes) + " (raise host_budget or lower the "
                                           "context)");
  // The window's rows (OffloadWindow::device_rows): the older slots are attended where they are.
  m.device_bytes = std::min<std::uint64_t>(g.capacity, std::uint64_t(o.device_tokens) + o.chunk) * per_token;
  return m;
}

}  // namespace graft::kv
