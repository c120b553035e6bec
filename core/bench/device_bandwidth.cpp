#include "bench/device_bandwidth.hpp"

#include <chrono>

namespace graft {

Expected<BandwidthResult> measure_device_bandwidth(Backend& backend, std::size_t buffer_bytes, int passes) {
  auto a = backend.allocate(buffer_bytes, MemoryKind::device);
  if (!a) return a.status();
  auto b = backend.allocate(buffer_bytes, MemoryKind::device);
  if (!b) return b.status();
  BandwidthResult r;
  r.buffer_bytes = buffer_bytes;
  r.threads = backend.n_threads();
  r.loads = "device-to-device copy";
  // One copy first: it touches both buffers (first-use costs) and waits for earlier work.
  GRAFT_TRY(backend.copy((*b)->data(), MemoryKind::device, (*a)->data(), MemoryKind::device, buffer_bytes));
  for (int i = 0; i < passes; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    GRAFT_TRY(backend.copy_async((*b)->data(), MemoryKind::device, (*a)->data(), MemoryKind::device, buffer_bytes));
    GRAFT_TRY(backend.synchronize());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) r.bytes_per_second = std::max(r.bytes_per_second, 2.0 * double(buffer_bytes) / s);
    ++r.passes;
  }
  return r;
}

}  // namespace graft
