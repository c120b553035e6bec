// The `sysram` KV store's profile table, checked, and the memory a store of it holds: every token's
// K/V in pinned system RAM, the newest `device_tokens` of them on the device too, older ones
// streamed to the device in chunks for attention (exact), or, in the lossy retrieval mode, only
// the sink, the window and the best-scoring blocks attended. docs/kvstores.md, "The sysram store".
#pragma once

#include <cstdint>

#include "attention.hpp"
#include "graft/config.hpp"
#include "graft/kv_store.hpp"
#include "graft/status.hpp"

namespace graft::kv {

enum class SysramMode { exact, retrieval_lossy };

struct SysramOptions {
  CacheType type = CacheType::f16;
  SysramMode mode = SysramMode::exact;
  std::uint32_t device_tokens = 4096;  // the newest tokens of a sequence kept on the device
  std::uint32_t chunk = 1024;          // tokens per copy from host memory; two in flight
  std::uint64_t host_budget = 0;       // system RAM one sequence's K/V may take; 0: unbounded
  // retrieval-lossy: attended beyond the window are the first `sink` tokens and the `top_blocks`
  // blocks of `block` tokens whose keys score highest for the query.
  std::uint32_t sink = 4;
  std::uint32_t block = 64;
  std::uint32_t top_blocks = 32;
};

// The table's keys (the host checked their types and ranges), with the rules between them: one
// line naming the key, e.g. `mode = "retrieval-lossy" needs host_budget (...)`.
Expected<SysramOptions> parse_sysram_options(const Config& config);

// What a store of these options holds for g.capacity tokens: system RAM for every token (and, in
// retrieval mode, each block's key bounds); device memory for the window and the staging chunks.
// Refused: a host budget below the window, or one the context exceeds (Errc::out_of_memory).
Expected<KvMemory> sysram_memory(const SysramOptions& o, const KvGeometry& g);

}  // namespace graft::kv
