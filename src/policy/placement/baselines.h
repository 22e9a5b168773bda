// The FGD paper's per-node baselines as placement policies of the core (Weng et al., USENIX
// ATC'23, and its simulator: docs/research/fgd-simulator-policies.md §2), so that the packing
// experiment measures them through Schedule() as it measures fgd and gpupool. They score each
// node on its own (PlacementPolicy::ScoresNodes), ties to the lower node id, and take the
// tightest GPU that fits a fraction (random: see below).
//
//   dotprod       (after Tetris) the node whose free CPU and GPU line up least with the request
//   bestfit_host  the paper's BestFit: the node left with the least free CPU and GPU, as shares
//   random        a node drawn uniformly from those that fit (a hash of seed, replica, node)
//   clustering    GpuClustering: a node that already runs replicas of the same affinity tag
//   packing       GpuPacking: partly used GPUs first, then partly used nodes, then free ones
//
// Shares are of the paper's largest node: 128 CPUs, 8 GPUs. The formulas are in baselines.cc.
#pragma once

#include <memory>
#include <string_view>

#include "policy/placement/policies.h"

namespace gpupool {

// The policy of that name, or null if it is none of the baselines.
std::unique_ptr<PlacementPolicy> MakeBaselinePolicy(std::string_view name, uint64_t seed);

}  // namespace gpupool
