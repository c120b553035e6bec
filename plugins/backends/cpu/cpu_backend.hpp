// The CPU backend as an object: the plugin (plugin.cpp) makes one per profile; the emulated
// device of the tests (tests/emulated_device) computes on one inside.
#pragma once

#include <memory>

#include "graft/backend.hpp"

namespace graft::cpu {

// threads: workers, 0 = one per logical core. The kernel level is the CPU's best unless
// GRAFT_CPU_SIMD forces one (an unknown or unsupported level is the error).
Expected<std::unique_ptr<Backend>> make_cpu_backend(unsigned threads);

}  // namespace graft::cpu
