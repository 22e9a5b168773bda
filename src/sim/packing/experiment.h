// The FGD paper's packing experiment (issue 3, part 1), protocol as its simulator runs it
// (docs/research/fgd-simulator-policies.md §1, §5): pods sorted by name and shuffled by seed,
// padded with uniformly re-sampled copies until the GPU request reaches 1.3x capacity, each
// tried once in order, no departures. One record per pod; "unallocated at X% arrived" is the
// mean over the pods whose arrived% rounds (half to even) to X, widened to X±1 if there are none.
//
// The pods go through the daemon's scheduler (issue 21 item 3): each is submitted to a gpupool
// State and given one Schedule() cycle; placed, it stays; not placed, it is cancelled. So what
// the experiment measures is what `gpupool serve` does with the same placement policy.
//
// The cluster: the trace's nodes, added in the seed's node-priority order, so that the core's
// lowest-node-id tie-break is the protocol's; every GPU dynamic (whole or shared, as the paper's
// model); CPU and memory counted; one tenant guaranteed all of it; no preemption, no backfill.
// Pods: whole GPUs, fractions (no GPU memory bound: openb has none), or no GPU (CPU-only pods).
// A list whose pods all accept any model runs on one flavor; one with gpu_spec gets a flavor per
// model and each pod the list of its models, with `flavor_choice: best` (the best node over all
// of them, as the paper). The fgd and gpupool policies weigh the list's typical pods
// (SchedulerConfig::workload); the random policy draws with the run's seed.
#pragma once

#include <array>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/packing/typical.h"

namespace gpupool::packing {

struct PodRecord {
  int64_t arrived_milli = 0, used_milli = 0;
};

struct SeedRun {
  uint64_t seed = 0;
  std::vector<PodRecord> rows;
  int pods = 0, failed = 0;
  int64_t capacity_milli = 0;
};

// The pod order of one seed: the shuffled originals, then the tune copies. `node_priority`
// gets a permutation of the nodes in name order: ties go to the smallest priority.
std::vector<OpenbPod> PodOrder(const OpenbTrace& trace, uint64_t seed, double tune_ratio,
                               std::vector<int>* node_priority);

// One seed of the protocol with a placement policy of Schedule() (PlacementPolicyNames()),
// one cycle per pod through a KeptScheduler (scheduler/schedule.h); `check_every` > 0 checks
// its kept session against a rebuilt one every that many cycles.
Result<SeedRun> RunSeed(const OpenbTrace& trace, const std::string& placement, uint64_t seed,
                        double tune_ratio = 1.3, int check_every = 0);

// Where Schedule() put one pod: its node by index in name order (-1: not placed) and its GPUs.
struct PodPlacement {
  int node = -1;
  int gpus = 0;
  std::array<int8_t, kMaxGpusPerNode> gpu{};
};

// The same protocol on a given order of pods and node priority; fills `placed` (one entry per
// pod of `order`) when given.
Result<SeedRun> RunOrder(const OpenbTrace& trace, const std::vector<OpenbPod>& order,
                         const std::vector<int>& node_priority, const std::string& placement,
                         uint64_t seed, std::vector<PodPlacement>* placed = nullptr,
                         int check_every = 0);

struct Curve {
  std::map<int, double> unallocated_pct;  // by arrived %
};
// Levels 0..130.
Curve Windowed(const SeedRun& run);

// Uniform integer in [0, n) from a 64-bit generator, by rejection (no modulo bias, and the same
// on every platform, unlike std::uniform_int_distribution). REQUIRES: n > 0.
uint64_t Below(std::mt19937_64& rng, uint64_t n);

}  // namespace gpupool::packing
