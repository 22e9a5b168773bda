// The packing experiment's cluster: nodes as the FGD paper's simulator sees them (CPU, memory,
// a pod count, and per-GPU free milli-GPUs of one model). Any GPU takes whole-GPU pods when fully
// free and fractions while it has room; this is the paper's model, not gpupool's explicit GPU
// modes (docs/design/simulator.md says why the experiment has its own engine).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/packing/openb.h"

namespace gpupool::packing {

constexpr int kMaxPodsPerNode = 1001;  // the simulator's node `pods` capacity

struct NodeState {
  int model = 0;
  int gpus = 0;
  int64_t cpu_left = 0, mem_left = 0;
  int pods = 0;
  std::array<int32_t, kMaxGpusPerNode> idle{};  // free milli per GPU
  // GpuClustering's affinity tags of the GPU pods on the node: [0] share-gpu, [k] k-gpu.
  std::array<int32_t, kMaxGpusPerNode + 1> tags{};

  int64_t IdleTotal() const;
  int FullyFree() const;
};

// Where a pod goes on its node: the GPUs and how much of each.
struct GpuPick {
  int count = 0;
  std::array<int8_t, kMaxGpusPerNode> gpu{};
};

// Filters of §1.6 of docs/research/fgd-simulator-policies.md: CPU, memory, pod count, GPU model,
// and GPU room (a fraction needs one GPU with room; whole GPUs must be fully free).
bool Fits(const NodeState& n, const OpenbPod& p);
// The lowest-index fully free GPUs (whole-GPU pods; §1.7).
GpuPick LowestFreeGpus(const NodeState& n, int count);
// Best fit for a fraction: the GPU with the least idle milli that still fits, lowest index on
// ties (§1.7).
int BestFitGpu(const NodeState& n, int milli);
void Place(NodeState& n, const OpenbPod& p, const GpuPick& pick);
int AffinityTag(const OpenbPod& p);  // -1 for CPU-only pods

// The trace's nodes, empty, in name order (the order every policy's ties are broken in).
std::vector<NodeState> EmptyNodes(const OpenbTrace& trace);

// Uniform integer in [0, n) from a 64-bit generator, by rejection (no modulo bias, and the same
// on every platform, unlike std::uniform_int_distribution). REQUIRES: n > 0.
uint64_t Below(std::mt19937_64& rng, uint64_t n);

}  // namespace gpupool::packing
