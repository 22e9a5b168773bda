// Synthetic clusters and workloads for benchmarks, the demo and tests. Deterministic for a seed.
#pragma once

#include <cstdint>

#include "model/state.h"

namespace gpupool {

struct SyntheticSpec {
  int nodes = 1000;
  int tenants = 50;
  int pending_jobs = 10000;
  double mig_node_share = 0.1;     // nodes whose 8 GPUs are in MIG mode (all-balanced)
  double shared_node_share = 0.1;  // nodes whose 8 GPUs are time-sliced
  bool dynamic = false;            // the nodes not in MIG mode have dynamic GPUs (whole or shared)
  bool host = false;               // nodes track CPU and memory, and jobs ask for them
  double preload = 0.0;            // fraction of capacity already running before the cycle
  double guarantee_share = 0.8;    // sum of guarantees as a share of capacity
  uint64_t seed = 1;
};

// Nodes of 8 GPUs: 60% h100-80gb, 40% a100-80gb; NVLink domain = node (HGX), blocks of 32
// nodes. Tenants with weights 1..3 and guarantees proportional to random shares. Jobs of mixed
// shapes: whole 1/2/4/8 GPUs, 2x8 gangs, MIG profiles, fractions. `preload` jobs are placed by
// a first cycle and started at t=0; pending jobs are submitted at t=1.
State MakeSyntheticState(const SyntheticSpec& spec);

}  // namespace gpupool
