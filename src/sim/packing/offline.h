// An offline reference for the packing experiment: how much of the pods that arrived by 100%
// could have been placed by someone who knew them all in advance. Not a proven optimum: the
// best of several greedy packings of the multiset (arrival order, largest GPU request first,
// largest memory first, "paired"), each the protocol through Schedule() with the gpupool policy,
// then a repair pass that places failed pods by moving one placed pod to another node. It shows
// how close the online policy gets. Four runs a seed through Schedule()'s cycle (KeptScheduler):
// about 2 s on this machine.
#pragma once

#include "sim/packing/experiment.h"

namespace gpupool::packing {

struct OfflineResult {
  double unallocated_pct = 0;  // at 100% arrived, % of GPU capacity
  double lower_bound_pct = 0;  // StrandedLowerBound of the same pods, % of capacity
  std::string best_order;      // which greedy start won
  int repaired = 0;            // failed pods placed by the repair pass
};

Result<OfflineResult> OfflineReference(const OpenbTrace& trace, uint64_t seed);

// A lower bound on the unallocated GPU milli of any packing of `pods` (one GPU each for
// fractions above 500 milli strands a gap only smaller pods can fill).
int64_t StrandedLowerBound(const std::vector<OpenbPod>& pods);

}  // namespace gpupool::packing
