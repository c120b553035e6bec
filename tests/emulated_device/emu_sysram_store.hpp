// The `sysram` KV store on the emulated device: every token's K/V in pinned host memory, the
// newest in a device window (plugins/kvstores/sysram/offload_window.hpp keeps the rules), attention
// over the window on the device merged with attention over the older slots where they live, each
// piece with its log-sum-exp (exact), or over the sink and the best-scoring blocks only
// (retrieval-lossy). All work is queued on the device's stream; the host keeps the sizes. It tests
// the host side of the offload (the window's moves, the write-through, the refills, the pieces and
// their merge, the memory held) on a machine without a GPU; no GPU store exists yet.
#pragma once

#include <memory>

#include "emu_device.hpp"
#include "graft/kv_store.hpp"
#include "sysram_options.hpp"

namespace graft::emu {

Expected<std::unique_ptr<KvStore>> make_sysram_store(Device& dev, Backend& backend, const KvGeometry& g,
                                                     const kv::SysramOptions& options);

}  // namespace graft::emu
