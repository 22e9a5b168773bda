// FGD's model of the workload and of fragmentation, as the paper's simulator defines them
// (docs/research/fgd-simulator-policies.md §2.6).
//
// Typical pods: the original trace's pods grouped by (cpu, per-GPU milli, GPU count, gpu_spec),
// most frequent first (ties: larger cpu, milli, count, spec first), the smallest prefix covering
// 95% of pods, each with probability count / kept.
//
// Fragmentation of a node w.r.t. a type k, in milli-GPUs, with G the node's idle GPU milli:
//   the milli of GPUs too small for k  if k is a GPU type the node can host (model, CPU, enough
//                                      GPUs with room): the "Q3, satisfied" case
//   G                                  otherwise (CPU-only types, other models, lacking CPU or GPU)
// and F(node) = sum over types of p_k times that. Memory plays no part.
#pragma once

#include <vector>

#include "sim/packing/state.h"

namespace gpupool::packing {

struct TypicalPod {
  int64_t cpu_milli = 0;
  int gpu_milli = 0;
  int num_gpu = 0;
  uint32_t models = 0;
  std::string spec;
  int64_t count = 0;
  double p = 0;
};

std::vector<TypicalPod> TypicalPods(const std::vector<OpenbPod>& original, double coverage = 0.95);

double NodeFrag(const NodeState& n, const std::vector<TypicalPod>& types);

// FGD's node score for a pod (§2.6.3): int(100 * sigmoid((F0 - F1) / 1000)), the best over the
// GPUs a fraction could take (first index on ties), with the GPUs in `pick`.
// REQUIRES: Fits(n, p).
int64_t FgdScore(const NodeState& n, double f0, const OpenbPod& p,
                 const std::vector<TypicalPod>& types, GpuPick& pick);

}  // namespace gpupool::packing
