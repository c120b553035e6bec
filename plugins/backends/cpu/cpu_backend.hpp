// The CPU backend as an object: the plugin (plugin.cpp) makes one per profile; the emulated
// device of the tests (tests/emulated_device) computes on one inside.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "graft/backend.hpp"

namespace graft::cpu {

// threads: workers, 0 = one per logical core. The kernel level is the CPU's best unless
// GRAFT_CPU_SIMD forces one (an unknown or unsupported level is the error). device_bytes, when
// given, follows the bytes of device and pinned-host buffers alive (the emulated device's count
// of what a GPU run holds: tests compare the memory plan with it); it must outlive the backend's
// buffers.
Expected<std::unique_ptr<Backend>> make_cpu_backend(unsigned threads, std::atomic<std::int64_t>* device_bytes = nullptr);

}  // namespace graft::cpu
