// The packing experiment's pairing table: the one the daemon's gpupool policy learns
// (policy/placement/pairing.h), from the fractional pods of a pod list.
#pragma once

#include <vector>

#include "policy/placement/pairing.h"
#include "sim/packing/openb.h"

namespace gpupool::packing {

// Learned from the pods of one GPU under 1000 milli.
GapWaste GapWasteOf(const std::vector<OpenbPod>& pods);

}  // namespace gpupool::packing
