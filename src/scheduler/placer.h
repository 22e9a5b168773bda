// Placer: finds where a job's replicas go, on a Session, all or none.
//
// For each replica it looks at every active node class of the eligible pools that offers the
// shape's kind (plus held nodes, one by one), takes the class's best single-node option from a
// memo keyed by (shape, the class's per-kind index), and picks the lowest (score, node id).
// Options per class: for whole GPUs, the first free ones; for a MIG profile, a free instance of it, or (with a large penalty, so only when no
// instance fits anywhere) re-partitioning an idle MIG GPU; for a fraction, a shared GPU with
// room whose occupants allow this tenant (an idle dynamic GPU offers both: it is switched to the
// use it is given, Outcome::mode_changes). Topology constraints restrict the search to one
// domain at a time, tightest-fitting domain first.
//
// The placements are applied to the session; the caller commits or rolls back to its mark.
// Code: placer.cc (gangs, replicas, applying an option), placer_search.cc (the searches),
// placer_options.cc (options and their scores, memoised).
#pragma once

#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "scheduler/plan.h"
#include "scheduler/session.h"

namespace gpupool {

class Placer {
 public:
  Placer(Session& session, bool mig_reconfigure, bool key_search = true);

  struct Outcome {
    bool ok = false;
    std::vector<ReplicaPlacement> placement;
    std::vector<ReconfigureDecision> reconfigurations;
    std::vector<ModeChangeDecision> mode_changes;  // dynamic GPUs the placement switches
    ReasonCode code = ReasonCode::kNone;
    std::string detail;  // why not, when !ok
    int64_t score = 0;   // the sum of the replicas' scores, when ok
  };

  // Places all replicas of `job` within `pools`; a job ending at `end` may use held GPUs whose
  // hold starts at or after `end`.
  Outcome PlaceGang(const Job& job, const std::vector<uint32_t>& pools, Time end);

  // The GPU indices one replica of this shape would use on a node whose GPU keys are `keys`,
  // or empty if it does not fit (no memo; for timelines).
  std::vector<int> GpusFor(const TaskShape& t, const Session::Keys& keys, int n) const;

  static TaskShape TaskOf(const State& state, const Job& job);
  // A replica that needs no GPU, only CPU and memory on a node of its flavor (gpus: 0).
  static bool HostOnly(const TaskShape& t) { return t.kind == ShapeKind::kWholeGpus && t.gpus == 0; }
  // The milli-GPUs one replica takes (0 for MIG: PlacementPolicy::NodeScore scores it by class).
  static int64_t GpuMilli(const TaskShape& t) {
    return t.kind == ShapeKind::kWholeGpus ? int64_t{1000} * t.gpus
           : t.kind == ShapeKind::kGpuFraction ? t.milli : 0;
  }

 private:
  struct Option {
    bool computed = false, fits = false;
    int64_t score = 0;
    GpuKey before, after;  // for whole GPUs: one of `gpus` identical transitions
    int64_t from = 0, to = 0;  // the class's value before and after (for NodeScore)
    int64_t penalty = 0;       // what `score` adds to the policy's (re-partitioning)
  };
  struct Candidate {
    uint32_t node = Session::kNone;
    Option option;  // by value: memo rows grow while the search goes on
  };
  // Lowest (score, node, before, after): a total order, whatever the iteration order.
  static bool Better(const Option& o, uint32_t node, const Candidate& best);

  using Level = PlacementPolicy::Level;
  uint32_t ShapeId(const TaskShape& t);
  // The class's best option for the shape, its node staying at the class's host level.
  const Option& OptionFor(uint32_t shape, uint32_t cls);
  // The same with the node's CPU left at host level `after` (OptionFor's at or above the
  // class's own level).
  const Option& OptionAt(uint32_t shape, uint32_t cls, Level after);
  // The option on one node of the class: at the level the replica's CPU leaves it at.
  const Option& NodeOption(uint32_t node, uint32_t cls, uint32_t shape_id, const ReplicaShape& rs);
  Level AfterLevel(uint32_t node, const ReplicaShape& rs) const;
  // For a policy that scores nodes: the option as scored on this node of class `cls`.
  Option OnNode(const Option& o, uint32_t node, uint32_t cls, const TaskShape& t, const ReplicaShape& rs) const;
  // The policy's value of the class's keys at another host level (memoised).
  int64_t ValueAt(uint32_t cls, Level level);
  Option Compute(const TaskShape& t, uint32_t cls, Level level);
  // The option on one GPU state, for policies that score differences (KeyIndex search).
  const Option& KeyOptionFor(uint32_t shape, uint32_t key_id);
  // Best option over the indexed GPU states of the pools (MIG and fraction shapes).
  void SearchKeys(const Job& job, uint32_t shape_id, const std::vector<uint32_t>& pools,
                  Candidate& best);
  // Best option over these linked node classes (their first member that fits the host needs).
  void SearchClasses(const std::vector<uint32_t>& classes, uint32_t shape_id, const ReplicaShape& rs,
                     Time end, Candidate& best);
  // The same for a policy that scores nodes (PlacementPolicy::ScoresNodes): every member.
  void SearchNodes(const std::vector<uint32_t>& classes, uint32_t shape_id, const ReplicaShape& rs,
                   Time end, Candidate& best);
  // Evaluates one single-GPU transition and keeps it in `best` if it scores lower.
  void Keep(const Option& o, Option& best) const;
  // Whether the node's CPU and memory take a replica of a job that ends at `end`.
  bool HostFits(const Session::NodeSlot& s, const ReplicaShape& shape, Time end) const;
  void Consider(uint32_t node, uint32_t cls, uint32_t shape_id, const ReplicaShape& rs, Time end,
                Candidate& best);
  // Whether the replica's best option can be found over GPU states (KeyIndex) instead of nodes:
  // a MIG or fraction shape, a policy that scores differences of a key alone, and a flavor
  // whose nodes it scores by class with one host level.
  bool KeySearchable(const ReplicaShape& rs) const;
  bool PlaceReplica(const Job& job, uint32_t shape_id, const std::vector<uint32_t>& pools,
                    const std::vector<uint32_t>* domain, Time end, Outcome& out);
  // Takes the option on the node for a job that ends at `end` (past a hold: the held GPUs offer
  // only their HeldView).
  void Apply(uint32_t node, const Option& opt, const Job& job, const TaskShape& t, Time end,
             Outcome& out);
  // Records a switch of the GPU to `use` if it is an idle dynamic GPU last used otherwise.
  void SwitchIfNeeded(uint32_t node, int gpu, GpuMode use, Outcome& out) const;
  Outcome PlaceInDomains(const Job& job, uint32_t shape_id, const std::vector<uint32_t>& pools,
                         Time end);

  Session& s_;
  bool reconfigure_;
  bool key_search_;
  struct ShapeHash {
    size_t operator()(const TaskShape& t) const;
  };
  std::vector<TaskShape> shapes_;
  std::unordered_map<TaskShape, uint32_t, ShapeHash> shape_ids_;
  std::vector<std::vector<Option>> memo_;  // [shape][class's index for the shape's kind]
  std::vector<std::vector<Option>> key_memo_;  // [shape][key entry's index]
  struct TripleHash {
    size_t operator()(const std::tuple<uint32_t, uint32_t, Level>& k) const {
      return std::hash<uint64_t>()((uint64_t{std::get<0>(k)} << 40) ^ (uint64_t{std::get<1>(k)} << 8) ^ std::get<2>(k));
    }
  };
  struct PairHash {
    size_t operator()(const std::pair<uint32_t, Level>& k) const {
      return std::hash<uint64_t>()((uint64_t{k.first} << 8) | k.second);
    }
  };
  // Options and values at a host level below the class's own (rare: only jobs with CPU).
  std::unordered_map<std::tuple<uint32_t, uint32_t, Level>, Option, TripleHash> level_memo_;
  std::unordered_map<std::pair<uint32_t, Level>, int64_t, PairHash> value_memo_;
  Option host_only_;  // OptionFor's answer for a host-only shape, valid until the next call
  std::vector<std::pair<int64_t, uint32_t>> bound_scratch_;  // SearchNodes' (bound, class)
  // SearchNodes' (free CPU, free memory) of the members of one class already scored.
  static constexpr size_t kMaxHostStates = 16;
  std::vector<std::pair<int64_t, int64_t>> host_scratch_;
  uint64_t salt_ = 0;  // names the replica being placed (HostMove::salt)
};

}  // namespace gpupool
