// The FGD paper's packing experiment (issue 3, part 1), protocol as its simulator runs it
// (docs/research/fgd-simulator-policies.md §1, §5): pods sorted by name and shuffled by seed,
// padded with uniformly re-sampled copies until the GPU request reaches 1.3x capacity, each
// tried once in order, no departures. One record per pod; "unallocated at X% arrived" is the
// mean over the pods whose arrived% rounds (half to even) to X, widened to X±1 if there are none.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/packing/policies.h"

namespace gpupool::packing {

struct PodRecord {
  int64_t arrived_milli = 0, used_milli = 0;
  double frag_milli = 0, idle_milli = 0;
};

struct SeedRun {
  uint64_t seed = 0;
  std::vector<PodRecord> rows;
  int pods = 0, failed = 0;
  int64_t capacity_milli = 0;
};

// The pod order of one seed: the shuffled originals, then the tune copies.
std::vector<OpenbPod> PodOrder(const OpenbTrace& trace, uint64_t seed, double tune_ratio,
                               std::vector<int>* node_priority);

Result<SeedRun> RunSeed(const OpenbTrace& trace, const std::string& policy, uint64_t seed,
                        double tune_ratio = 1.3);

struct Curve {
  std::map<int, double> unallocated_pct, frag_pct, frag_ratio_pct;  // by arrived %
};
// Levels 0..130.
Curve Windowed(const SeedRun& run);

}  // namespace gpupool::packing
