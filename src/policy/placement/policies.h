// Placement policies: small scoring hooks over node classes (STYLE.md habit 6). The mechanism
// that enumerates candidates, memoises scores per class and applies the choice lives in
// src/scheduler; a policy only says how good a node state is.
//
//   fgd       fragmentation gradient descent (Weng et al., USENIX ATC'23): minimise the growth
//             of expected fragmentation w.r.t. the current workload mix
//   bestfit   leave the least free capacity on the chosen node
//   spread    leave the most free capacity (worst fit)
//   firstfit  lowest node id that fits
//   gpupool   the default: FGD plus a pairing term (a fraction goes where its GPU is then least
//             likely to waste milli-GPUs for good, as learned from recent submissions, pairing.h)
//             and, when the mix asks CPU or memory, a stranding term scored per node
// and the FGD paper's per-node baselines, for comparison (baselines.h): dotprod, bestfit_host,
// random, clustering, packing. The math is in docs/design/placement.md.
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
// A type of no GPU (shape.kind whole, gpus 0) stands for the CPU-only tasks: all free GPU
// capacity is fragment for them.
struct TaskType {
  TaskShape shape;
  int64_t weight = 0;
  int64_t cpu_milli = 0;   // what each replica asks of its node's CPU
  int64_t memory_mib = 0;  // and of its memory
};

// What one replica does to its node beyond the node's class, for policies that score nodes
// (PlacementPolicy::ScoresNodes): the node's free GPU capacity, CPU and memory before, and what
// the replica takes of each. Session::kUntracked CPU or memory counts as unlimited.
// The node itself comes too, for the baselines whose score depends on more than that: its id,
// the affinity tags of what runs there (AffinityTag), its GPU keys (the class's, sorted), and a
// number that names the replica being placed (the random policy's draw).
struct HostMove {
  int64_t idle_milli = 0, cpu_free = 0, mem_free = 0;
  int64_t gpu_milli = 0, cpu_milli = 0, memory_mib = 0;
  uint32_t node = 0;
  uint16_t tags = 0;
  uint64_t salt = 0;
  const GpuModel* model = nullptr;
  const GpuKey* keys = nullptr;
  int gpus = 0;
};

// GpuClustering's affinity tag of a replica, as a bit: bit 0 for one that shares a GPU (a
// fraction or a MIG instance), bit k for one of k whole GPUs (k above 15 counts as 15), none
// for one of no GPU. A node's tags are the union over its replicas (Session::NodeSlot::tags).
inline uint16_t AffinityTag(const TaskShape& t) {
  if (t.kind != ShapeKind::kWholeGpus) return 1;
  if (t.gpus == 0) return 0;
  return static_cast<uint16_t>(1u << (t.gpus > 15 ? 15 : t.gpus));
}

struct WorkloadMix {
  std::map<FlavorId, std::vector<TaskType>> by_flavor;
  // The gpupool policy's pairing input: milli-GPUs of the fractions among recent submissions,
  // by flavor (RecentFractions).
  std::map<FlavorId, std::vector<int>> fractions;
};

// Every policy's value of a node class is additive over the class's GPUs plus one term in the
// number of whole GPUs that are free, at the class's host level L:
//   Value(c) = sum over GPUs g of KeyValue(key_g, L) + WholeTerm(free whole GPUs of c, L)
// so the value after one GPU changes is Value(before) - KeyValue(old) + KeyValue(new) (and the
// whole term adjusted), without materialising the after-state. docs/design/placement.md.
//
// The host level is how a policy sees a node's free CPU: FGD counts a task type as unable to use
// a node that lacks its CPU (Weng et al.), so its level is the number of the mix's distinct CPU
// requests that the free CPU meets. A policy that ignores CPU has one level. REQUIRES of a
// policy with several: the value is non-increasing in the level (more CPU never makes a node
// worse), so a class's score at its own level bounds its members' scores from below.
//
// Thread-safety: none; implementations may memoise per key.
class PlacementPolicy {
 public:
  using Level = uint8_t;
  static constexpr Level kAllFit = NodeClassView::kAllFit;
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual int64_t KeyValue(FlavorId flavor, const GpuModel& model, GpuKey key, Level level) const = 0;
  virtual int64_t WholeTerm(FlavorId flavor, int free_whole, Level level) const = 0;
  // The number of host levels the policy distinguishes for a flavor (1: it ignores CPU), and the
  // level of a node with `cpu_free` milli-CPUs free (Session::kUntracked: the top one).
  virtual int HostLevels(FlavorId) const { return 1; }
  virtual Level HostLevel(FlavorId, int64_t /*cpu_free*/) const { return kAllFit; }
  // Whether the score of a flavor's node depends on more than its class: then the scheduler
  // scores every member of a class with NodeScore (and does not search GPU keys).
  virtual bool ScoresNodes(FlavorId) const { return false; }
  // For such a policy: whether NodeScore depends on the node's class and free CPU and memory
  // alone, so that of a class's members with the same of those only the first needs scoring.
  virtual bool ScoresHostOnly(FlavorId) const { return true; }
  // Whether NodeScore reads HostMove::tags (the scheduler gathers them only then).
  virtual bool UsesTags() const { return false; }
  // For such a policy: whether it draws the GPU a fraction takes on a node instead of taking
  // the class's best option, and the draw of GPU `g` (an index into HostMove::keys): of the
  // GPUs that fit, the lowest draw is taken.
  virtual bool DrawsGpus() const { return false; }
  virtual uint64_t GpuDraw(const HostMove&, int /*g*/) const { return 0; }
  // The score of an option that moves the node's class value from `before` to `after` and
  // does `move` to the node, for a replica of shape `t` (gpus 0: no GPU).
  virtual int64_t NodeScore(FlavorId f, const TaskShape& /*t*/, int64_t before, int64_t after,
                            const HostMove& /*move*/) const {
    return Score(f, before, after);
  }
  // The lowest NodeScore the option can have on any node of its class, for a replica of
  // `gpu_milli` milli-GPUs (lets the scheduler skip classes that cannot beat the best so far).
  virtual int64_t NodeScoreBound(FlavorId f, const TaskShape& /*t*/, int64_t before, int64_t after,
                                 int64_t /*gpu_milli*/) const {
    return Score(f, before, after);
  }
  // Score of moving a node of this flavor from value `before` to value `after`; lower is better.
  virtual int64_t Score(FlavorId flavor, int64_t before, int64_t after) const = 0;
  // True when Score(f, b, a) == Score(f, 0, a - b): a MIG or fraction option's score then depends on
  // its GPU's key alone, which lets the scheduler search GPU states instead of node states.
  virtual bool ScoresDifferences() const { return false; }

  int64_t Value(const NodeClassView& c) const;
};

// `mig_reconfig`: whether idle MIG GPUs count as usable by any profile. `seed`: the random
// policy's. An unknown name is an error listing the known ones.
Result<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name, WorkloadMix mix,
                                                             bool mig_reconfig, uint64_t seed = 0);
const std::vector<std::string_view>& PlacementPolicyNames();

// Fragmentation of one node class w.r.t. one task type, in GPU-equivalents: the free capacity
// that the task cannot use (all of it if the task cannot be placed there at all).
GpuEq Fragmentation(const NodeClassView& c, const TaskShape& t, bool mig_reconfig);

// Builds the mix from the pending and active jobs of a state: one type per distinct
// (flavor, shape, CPU per replica), jobs of no GPU included, weighted by replicas, with the
// memory per replica of the first such job, at most `max_types` per flavor (most popular first).
WorkloadMix WorkloadMixOf(const State& state, size_t max_types = 64);

// The fractions among the last `window` jobs submitted (finished ones included, as long as the
// state keeps them), one entry per replica, by flavor: what the gpupool policy pairs for.
std::map<FlavorId, std::vector<int>> RecentFractions(const State& state, size_t window);

// The weight of the gpupool policy's pairing term against FGD's gradient: 4 against FGD's 1/4
// in the packing experiment's units (2 while the table came from best fit decreasing;
// docs/design/simulator.md, "Our policy").
inline constexpr int64_t kPairingWeight = 16;

}  // namespace gpupool
