// The emulated device: a backend ("emu") whose device memory the host cannot read, computing on the
// CPU backend's code behind a stream that runs work only when something waits for it. It is how
// the host side of a GPU backend is tested on a machine without one (docs/backends.md, "The
// emulated device"): weights must be uploaded, index arrays staged, results read back after a
// synchronize, and no host code may touch device memory, all of which a real GPU needs and the
// CPU backend cannot check.
//
// - Device pointers carry a tag (bit 62): an address no process maps, so a host read or write of
//   device memory faults at once instead of passing silently. Views say where their bytes are
//   (TensorView::memory); the emulator checks every view's label against its pointer.
// - Work (ops, copy_async, KV writes and attention) is queued and runs at synchronize(), at an
//   event's synchronize(), or before a blocking copy: a result read before the pass's
//   synchronize, or staging memory reused before its copy ran, gives wrong values.
// - Graphs: a capture records the queued work; launch queues it again. While capturing, a
//   synchronize, an event or a copy to or from pageable host memory is an error, as in CUDA.
//
// Shared by the backend plugin (emu_backend.cpp) and its kernel library (emu_kernels.cpp), which
// reach it through Backend::native_stream(), as a CUDA kernel library reaches its cudaStream_t.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "graft/backend.hpp"

namespace graft::emu {

inline constexpr std::uintptr_t kDeviceTag = std::uintptr_t{1} << 62;

inline bool tagged(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & kDeviceTag) != 0; }
inline void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) | kDeviceTag); }
inline void* untag(const void* p) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) & ~kDeviceTag);
}

class Device {
 public:
  // The CPU backend the work runs on.
  virtual Backend& cpu() noexcept = 0;
  // Queues fn (or records it, while capturing); `what` names it in the error fn returns.
  virtual Status enqueue(std::string what, std::function<Status()> fn) = 0;
  // The view as the CPU code reads it: device pointers untagged. Errc::invalid_argument when its
  // label and its pointer disagree, or when `device_only` and it is in pageable host memory
  // (what a GPU kernel cannot read). A view with null data is "none" and passes as it is.
  virtual Status to_cpu(const TensorView& view, const char* op, const char* name, bool device_only,
                        TensorView& out) const = 0;
  // Bytes of device and pinned host memory held now: every such buffer of the emulator and of the
  // CPU code behind it (the KV store's, the kernels' layouts), as a GPU's allocators count them.
  virtual std::int64_t device_bytes() const noexcept = 0;

 protected:
  ~Device() = default;
};

}  // namespace graft::emu
