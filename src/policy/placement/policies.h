// Placement policies: small scoring hooks over node classes (STYLE.md habit 6). The mechanism
// that enumerates candidates, memoises scores per class and applies the choice lives in
// src/scheduler; a policy only says how good a node state is.
//
//   fgd       fragmentation gradient descent (Weng et al., USENIX ATC'23): minimise the growth
//             of expected fragmentation w.r.t. the current workload mix (default)
//   bestfit   leave the least free capacity on the chosen node
//   spread    leave the most free capacity (worst fit)
//   firstfit  lowest node id that fits
// The math is in docs/design/placement.md.
#pragma once

#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/state.h"
#include "policy/placement/gpu_state.h"

namespace gpupool {

// One kind of task in the workload mix and how popular it is (e.g. its replica count).
struct TaskType {
  TaskShape shape;
  int64_t weight = 0;
};

struct WorkloadMix {
  std::map<FlavorId, std::vector<TaskType>> by_flavor;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // A number per node class; the caller memoises it, so it must depend on `c` alone.
  virtual int64_t Value(const NodeClassView& c) const = 0;
  // Score of moving a node from a class of value `before` to one of value `after`;
  // lower is better.
  virtual int64_t Score(int64_t before, int64_t after) const = 0;
};

// `mig_reconfig`: whether idle MIG GPUs count as usable by any profile.
// An unknown name is an error listing the known ones.
Result<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name,
                                                             WorkloadMix mix, bool mig_reconfig);
const std::vector<std::string_view>& PlacementPolicyNames();

// Fragmentation of one node class w.r.t. one task type, in GPU-equivalents: the free capacity
// that the task cannot use (all of it if the task cannot be placed there at all).
GpuEq Fragmentation(const NodeClassView& c, const TaskShape& t, bool mig_reconfig);

// Builds the mix from the pending and active jobs of a state: one type per distinct
// (flavor, shape), weighted by replicas, at most `max_types` per flavor (most popular first).
WorkloadMix WorkloadMixOf(const State& state, size_t max_types = 64);

}  // namespace gpupool
