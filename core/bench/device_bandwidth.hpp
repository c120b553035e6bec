// A device's memory bandwidth, for `graft bench` on a backend whose memory the host cannot read (a
// GPU): the best of a few device-to-device copies of a buffer far larger than the device's caches,
// counted as the bytes read plus the bytes written. Decode's weight reads are reported as a
// fraction of it, as the CPU's are of read_bandwidth.hpp's figure.
#pragma once

#include <cstddef>

#include "bench/read_bandwidth.hpp"
#include "graft/backend.hpp"
#include "graft/status.hpp"

namespace graft {

Expected<BandwidthResult> measure_device_bandwidth(Backend& backend, std::size_t buffer_bytes, int passes = 5);

}  // namespace graft
