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
  int64_t memory_mib = 0;  // mean of the group (FGD itself ignores memory)
  int gpu_milli = 0;
  int num_gpu = 0;
  uint32_t models = 0;
  std::string spec;
  int64_t count = 0;
  double p = 0;
};

// `by_demand`: weight each type by its GPU demand (count x milli x GPUs) instead of its count
// (gpupool's policy: the experiment scores allocated GPU, and one failed 8-GPU pod costs eight
// single-GPU ones). The paper's FGD weighs by count.
std::vector<TypicalPod> TypicalPods(const std::vector<OpenbPod>& original, double coverage = 0.95,
                                    bool by_demand = false);

// `memory`: also count a type as unable to use the node when its memory does not fit (gpupool's
// policy; the paper's FGD leaves memory out).
double NodeFrag(const NodeState& n, const std::vector<TypicalPod>& types, bool memory = false);

// The same sum, faster for many types: types are grouped by their GPU request (milli, count),
// whose per-GPU part is computed once per group. Equal to NodeFrag up to floating-point order.
class FragModel {
 public:
  FragModel(std::vector<TypicalPod> types, bool memory);
  double Frag(const NodeState& n) const;
  const std::vector<TypicalPod>& types() const { return types_; }

 private:
  struct Group {
    int gpu_milli = 0, num_gpu = 0;
    std::vector<size_t> members;  // indices into types_
  };
  std::vector<TypicalPod> types_;
  std::vector<Group> groups_;
  double cpu_only_p_ = 0;  // CPU-only types: all idle GPU is fragment for them
  bool memory_;
};

// FGD's node score for a pod (§2.6.3): int(100 * sigmoid((F0 - F1) / 1000)), the best over the
// GPUs a fraction could take (first index on ties), with the GPUs in `pick`.
// REQUIRES: Fits(n, p).
int64_t FgdScore(const NodeState& n, double f0, const OpenbPod& p,
                 const std::vector<TypicalPod>& types, GpuPick& pick);

}  // namespace gpupool::packing
