// The node-scoring policies of the packing experiment: the six of the FGD paper, as its
// simulator computes them (docs/research/fgd-simulator-policies.md §2), and gpupool's own.
// Higher scores win; ties go to the node with the smallest priority (a seeded permutation).
#pragma once

#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/packing/frag.h"

namespace gpupool::packing {

class PackPolicy {
 public:
  virtual ~PackPolicy() = default;
  virtual std::string_view name() const = 0;
  // Called once per pod, with the feasible nodes, before any Score.
  virtual void BeginPod(const OpenbPod&) {}
  // Score of the pod on a feasible node; fills the GPUs it would take.
  virtual int64_t Score(int node, const NodeState& n, const OpenbPod& p, GpuPick& pick) = 0;
  // Random picks a node itself: returns -1 to let scores decide.
  virtual int ChooseNode(const std::vector<int>& feasible) { (void)feasible; return -1; }
  // After the pod is placed on `node` (caches keyed by node state update here).
  virtual void Placed(int node, const NodeState& after) { (void)node; (void)after; }
};

struct PolicyContext {
  const std::vector<NodeState>* nodes = nullptr;  // initial state, indexed like the run
  const std::vector<TypicalPod>* types = nullptr;  // FGD's target workload
  const std::vector<OpenbPod>* originals = nullptr;  // the pod list before tuning, by name
  uint64_t seed = 0;
};

// Names: random, dotprod, clustering, packing, bestfit, fgd, gpupool.
Result<std::unique_ptr<PackPolicy>> MakePackPolicy(std::string_view name, const PolicyContext& ctx);
const std::vector<std::string>& PackPolicyNames();

// The GPU a fraction takes under best fit, or the lowest free GPUs for whole GPUs.
GpuPick BestFitPick(const NodeState& n, const OpenbPod& p);

}  // namespace gpupool::packing
