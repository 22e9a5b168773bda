// Helpers the burst planner (burst.cc) and its arithmetic (fleet.cc) share. Not an API.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "model/catalogue.h"
#include "model/node.h"

namespace gpupool::burst_internal {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

inline constexpr int64_t kMillisPerHour = 3'600'000;
inline constexpr int64_t kMaxMicros = std::numeric_limits<int64_t>::max();
inline constexpr Int128 kMaxInt128 = static_cast<Int128>((UInt128{1} << 127) - 1);

inline int64_t Saturate(Int128 v) { return v > kMaxMicros ? kMaxMicros : static_cast<int64_t>(v); }

inline bool KnownFlavor(FlavorId f, const Catalogue& c) { return f.valid() && f.value() < c.size(); }

inline bool Idle(const Node& n) {
  return std::all_of(n.gpus.begin(), n.gpus.end(), [](const Gpu& g) { return g.idle(); });
}

}  // namespace gpupool::burst_internal
