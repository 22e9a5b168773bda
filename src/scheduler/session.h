// Session: the scheduler's working copy of one snapshot, with undo (KAI's Statement;
// STYLE.md habit 5).
//
// Each node's free state is its GPUs' keys (policy/placement/gpu_state.h). Nodes with equal
// sorted keys in the same pool form a node class; classes are interned, and every schedulable,
// unheld node sits in its class's member set. Placement scores classes, not nodes, so a cycle
// over 10,000 nodes evaluates a few hundred states per job (docs/design/placement.md).
//
// A pool is (flavor, dedicated tenant, labels): the unit of eligibility. A held node (backfill)
// is kept out of the class sets and evaluated on its own: as if unheld for jobs that end before
// the hold; for the rest, each held GPU offers only what the hold leaves of it (HeldView).
//
// Invariants:
//  1. slot(n).cls is the interned class of (slot(n).pool, sorted keys of n, slot(n).level), and
//     slot(n).level is the policy's host level of slot(n).cpu_free (PlacementPolicy::HostLevel).
//  2. n is in members(slot(n).cls) iff slot(n).pool != kNone and !slot(n).held.
//  3. active(p, k) lists exactly the classes of pool p with non-empty member sets whose kinds
//     include k; flex_active(p) those with an idle dynamic GPU; linked(p) all of them.
//  4. Rolling back to a mark restores slots, shared occupants and quota exactly.
//
// Thread-safety: none; one cycle, one thread.
#pragma once

#include <array>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "policy/placement/policies.h"
#include "policy/quota/quota.h"
#include "scheduler/key_index.h"

namespace gpupool {

class Session {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr int kMaxGpus = 16;
  static constexpr int64_t kUntracked = INT64_MAX;
  using Keys = std::array<GpuKey, kMaxGpus>;

  struct NodeSlot {
    uint32_t pool = kNone;      // kNone: not schedulable
    uint32_t cls = kNone;
    uint32_t held_cls = kNone;  // class with held GPUs unusable; kNone without a hold
    uint16_t hold_mask = 0;     // the held GPUs (a held node may hold none: only CPU and memory)
    bool held = false;
    uint8_t n = 0;
    PlacementPolicy::Level level = PlacementPolicy::kAllFit;  // of cpu_free
    // The affinity tags of the replicas on the node (AffinityTag), for a policy that reads
    // them (PlacementPolicy::UsesTags; 0 otherwise). A replica released within the cycle
    // (preempted) keeps its tag there until the next cycle's session.
    uint16_t tags = 0;
    Time hold_until;
    int64_t cpu_free = kUntracked, mem_free = kUntracked;
    Keys keys{};
    // Per held GPU, what the hold keeps for its job (read by HeldView): Unusable, the whole
    // GPU; a MIG key whose free mask is the instances kept; a shared key, the room the GPU has
    // left at the hold's start once the held job is on it, and the owner it will then have.
    Keys hold_caps{};
    // CPU and memory a job ending after the hold may still take there: what the node will have
    // left at the hold's start once the held job's replicas are on it.
    int64_t hold_cpu = kUntracked, hold_mem = kUntracked;
  };
  // What a held GPU offers a job that ends after the hold starts: none of it under an
  // Unusable cap; a MIG GPU less the kept instances (none if its layout has changed); a shared
  // GPU's free room, no more than the cap's, owned as the cap says.
  static GpuKey HeldView(GpuKey key, GpuKey cap);
  // What a class can offer, as a bit per kind: a free whole GPU, a MIG GPU, a shared GPU; and
  // the lists it is on besides: an idle dynamic GPU (flex), and every linked class (any).
  enum KindBit : uint8_t { kWholeBit = 1, kMigBit = 2, kSharedBit = 4, kFlexBit = 8, kAnyBit = 16 };
  static constexpr int kKinds = 3;  // the shape kinds, which number memo rows
  static constexpr int kLists = 5;  // kinds, then flex, then any
  static int KindIndex(ShapeKind k) { return static_cast<int>(k); }

  struct ClassInfo {
    uint32_t pool = kNone;
    uint8_t n = 0;
    PlacementPolicy::Level level = PlacementPolicy::kAllFit;
    uint8_t kinds = 0;  // KindBit set
    std::array<int32_t, kKinds> kind_index{-1, -1, -1};  // dense per kind: memo row index
    Keys keys{};  // sorted
    GpuEq free;
    int64_t value = 0;
    bool value_ready = false;
  };
  struct Pool {
    FlavorId flavor;
    TenantId dedicated;
    std::vector<std::string> labels;
  };
  struct SharedOcc {
    uint16_t gpu = 0;
    JobId job;
    TenantId tenant;
    uint16_t milli = 0;
    uint32_t memory_mib = 0;
  };

  // `deadlines`: nodes held whole until then (schedule.h, NodeDeadlines).
  Session(const State& state, const PlacementPolicy& policy, Time now,
          const std::map<NodeId, Time>& deadlines = {});

  const State& state() const { return state_; }
  const GpuModel& model(FlavorId f) const { return state_.catalogue().model(f); }
  Time now() const { return now_; }
  // The quota book at now(): reservations in force raise guarantees, maintenance in force
  // lowers capacity (policy/quota/quota.h).
  const QuotaBook& quota() const { return quota_; }
  // Usage of the jobs that were running when the cycle began, less those released since:
  // what decides whether a tenant is borrowing and so may lose work to a reclaim.
  const QuotaBook& running_quota() const { return running_; }
  const PlacementPolicy& policy() const { return policy_; }

  // Pools a tenant's job of this flavor may use: the tenant's dedicated pools first, then the
  // shared ones, each in pool-id order.
  const std::vector<uint32_t>& EligiblePools(TenantId t, FlavorId f);
  // Those of them whose labels meet the job's node_selector (the same list without one).
  const std::vector<uint32_t>& EligiblePools(const Job& job);
  const Pool& pool(uint32_t p) const { return pools_[p]; }

  size_t num_nodes() const { return slots_.size(); }
  const NodeSlot& slot(uint32_t node) const { return slots_[node]; }
  // The class a job ending at `end` sees for this node (held GPUs as HeldView shows them if
  // end > hold).
  uint32_t EffectiveClass(uint32_t node, Time end) const;
  size_t num_classes() const { return classes_.size(); }
  const ClassInfo& cls(uint32_t c) const { return classes_[c]; }
  NodeClassView View(uint32_t c) const;
  int64_t Value(uint32_t c);  // the policy's value, memoised
  uint32_t Intern(uint32_t pool, Keys keys, int n, PlacementPolicy::Level level);
  // The host level of a node of this pool with `cpu_free` milli-CPUs free.
  PlacementPolicy::Level LevelOf(uint32_t pool, int64_t cpu_free) const {
    return policy_.HostLevel(pools_[pool].flavor, cpu_free);
  }
  const std::set<uint32_t>& members(uint32_t c) const { return members_[c]; }
  // Classes of a pool with members that can offer this kind of shape.
  const std::vector<uint32_t>& active(uint32_t pool, ShapeKind kind) const {
    return active_[pool * kLists + KindIndex(kind)];
  }
  // Classes of a pool with members that have an idle dynamic GPU (the key index leaves those
  // GPUs out).
  const std::vector<uint32_t>& flex_active(uint32_t pool) const { return active_[pool * kLists + 3]; }
  // Every class of a pool with members, whatever its GPUs offer (for jobs that need no GPU).
  const std::vector<uint32_t>& linked(uint32_t pool) const { return active_[pool * kLists + 4]; }
  const std::vector<uint32_t>& held_nodes() const { return held_; }
  // Distinct MIG and shared GPU states of the linked nodes (scheduler/key_index.h).
  const KeyIndex& keys() const { return key_index_; }
  // Whether one replica of `job` (all replicas, for a node-level constraint) would fit on some
  // node of the pool if that node were idle: false means waiting cannot help.
  bool CouldEverFit(uint32_t pool, const Job& job);

  // Jobs holding resources when the cycle began, of one flavor, in id order.
  const std::vector<const Job*>& ActiveJobs(FlavorId f);
  // Of those, the ones that may be preemption victims at all this cycle: preemptible class,
  // past their class's minimum runtime (`min_runtime` for a class without its own), not on
  // dedicated nodes; in victim order (policy/priority/ordering.h).
  // REQUIRES: the same min_runtime on every call of a session.
  const std::vector<const Job*>& PreemptibleJobs(FlavorId f, Duration min_runtime);
  // The others of preemptible class not on dedicated nodes: those that become victims after
  // this cycle's `now`, with when (PreemptibleFrom), ordered by (from, tenant).
  // REQUIRES: the same min_runtime on every call of a session.
  struct YoungJob {
    const Job* job = nullptr;
    Time from;
  };
  const std::vector<YoungJob>& YoungJobs(FlavorId f, Duration min_runtime);
  // When a job holding resources has run its minimum runtime: from its start (its admission
  // while not yet started).
  static Time PreemptibleFrom(const Job& j, Duration min_runtime) {
    return (j.state == JobState::kRunning ? j.started : j.admitted) + min_runtime;
  }
  // Schedulable nodes grouped by their domain at a level, domain names in order.
  const std::map<std::string, std::vector<uint32_t>>& Domains(TopologyLevel level);

  // Makes this the session a new cycle at `now` would build, once the caller has applied the
  // last cycle's plan to the state in full (ApplyPlan with start_placed) and changed nothing
  // else but pending jobs: the cycle's placements are then the state's. Forgets the undo
  // history and what was built from the jobs active when the cycle began; re-reads the quota
  // book only if the state has reservations. A cycle then costs what placing its jobs costs,
  // not a pass over every node and job (KeptScheduler, schedule.h).
  // REQUIRES: no mark held, no hold, nothing released (no preemption) since construction or
  // the last Advance.
  void Advance(Time now);
  // Where this session differs from `fresh` (one built on the same state): nodes' free state,
  // classes, shared occupants, quota books. Empty when they agree (the check of Advance).
  std::string DifferenceFrom(const Session& fresh) const;

  // --- undoable mutation -------------------------------------------------------------------
  size_t Mark() const { return undo_.size(); }
  void RollbackTo(size_t mark);
  // Forgets undo history. REQUIRES: no caller holds a mark.
  void Commit() { undo_.clear(); }

  void SetKey(uint32_t node, int gpu, GpuKey key);
  // Sets the same key on several GPUs of one node, re-indexing once.
  void SetKeys(uint32_t node, const std::vector<GpuGrant>& gpus, GpuKey key);
  // `past_hold`: the job ends after the node's hold starts, so it takes from the hold's room too.
  void TakeHost(uint32_t node, int64_t cpu_milli, int64_t memory_mib, bool past_hold = false);
  void AddShared(uint32_t node, const SharedOcc& occ);
  // Adds a placed replica's affinity tag to the node's (only for a policy that reads them).
  void AddTag(uint32_t node, uint16_t tag);
  void QuotaAdd(TenantId t, FlavorId f, GpuEq amount, GpuEq on_capacity);
  void QuotaAdd(TenantId t, FlavorId f, GpuEq amount) { QuotaAdd(t, f, amount, amount); }
  // Frees everything `job` holds under `placement` (a running job being preempted).
  void Release(const Job& job, const std::vector<ReplicaPlacement>& placement);
  // Holds the GPUs in `mask` until `until` for a blocked job (backfill), GPU g keeping what
  // caps[g] says (see NodeSlot::hold_caps); without caps, the GPUs are held whole.
  void Hold(uint32_t node, uint16_t mask, Time until);
  void Hold(uint32_t node, uint16_t mask, const Keys& caps, Time until, int64_t cpu_room = kUntracked,
            int64_t mem_room = kUntracked);
  // A job that ends after the hold took `t` from held shared GPU `gpu`: its cap shrinks by as
  // much, so the held job still fits when the hold starts.
  void TakeFromHold(uint32_t node, int gpu, const TaskShape& t);

  // Recomputes a shared GPU's key from its occupants (a dynamic GPU without any: its IdleKey).
  GpuKey SharedKey(uint32_t node, int gpu) const;
  // The key of the GPU when nothing holds it: a free whole GPU, or for a dynamic GPU the flex
  // key (GpuKey::Flex), which offers it whole or shared. REQUIRES: not a MIG GPU.
  GpuKey IdleKey(uint32_t node, int gpu) const;

 private:
  struct Undo {
    enum Kind : uint8_t { kNode, kQuota, kRunningQuota } kind = kNode;
    uint32_t node = 0;
    NodeSlot slot;
    std::vector<SharedOcc> shared;
    TenantId tenant;
    FlavorId flavor;
    GpuEq amount, on_capacity;
  };
  struct ClassKey {
    uint32_t pool = kNone;
    uint32_t n = 0;  // needed: a free whole GPU's key is 0, like the padding after n
    PlacementPolicy::Level level = PlacementPolicy::kAllFit;
    Keys keys{};     // sorted; entries past n stay zero
    friend bool operator==(const ClassKey&, const ClassKey&) = default;
  };
  struct ClassKeyHash {
    size_t operator()(const ClassKey& k) const;
  };

  void SaveNode(uint32_t node);
  void Reindex(uint32_t node, const NodeSlot& before);
  void Unlink(uint32_t node, const NodeSlot& s);
  void Link(uint32_t node, const NodeSlot& s);
  uint32_t PoolOf(const Node& n);

  const State& state_;
  const PlacementPolicy& policy_;
  Time now_;
  QuotaBook quota_;
  QuotaBook running_;
  std::vector<NodeSlot> slots_;
  std::vector<std::vector<SharedOcc>> shared_;  // by node
  std::vector<Pool> pools_;
  std::vector<ClassInfo> classes_;
  std::vector<std::set<uint32_t>> members_;
  std::vector<std::vector<uint32_t>> active_;  // by pool * kLists + list (KindBit order)
  std::vector<std::array<int32_t, kLists>> active_pos_;  // by class, list; -1 when not on it
  std::vector<uint32_t> held_;
  KeyIndex key_index_;
  std::array<int32_t, kKinds> kind_count_{};
  std::unordered_map<ClassKey, uint32_t, ClassKeyHash> intern_;
  std::vector<std::vector<uint32_t>> eligible_;  // by tenant * flavors + flavor
  std::vector<bool> eligible_ready_;
  // By (tenant, flavor, Describe(selector)): the pools of jobs with a node_selector.
  std::map<std::tuple<uint32_t, uint16_t, std::string>, std::vector<uint32_t>> selected_;
  std::map<TopologyLevel, std::map<std::string, std::vector<uint32_t>>> domains_;
  std::vector<std::vector<const Job*>> active_by_flavor_;  // built on first use
  // By flavor, built together on first use (SplitPreemptible): PreemptibleJobs, YoungJobs.
  void SplitPreemptible(FlavorId f, Duration min_runtime);
  std::vector<std::vector<const Job*>> preemptible_;
  std::vector<std::vector<YoungJob>> young_;
  std::vector<bool> victims_ready_;
  struct PoolCaps {
    int max_whole = 0;  // most healthy whole-mode GPUs on one node
    bool mig = false, shared = false;
    int64_t max_cpu = 0, max_mem = 0;  // kUntracked if some node does not track them
  };
  std::vector<PoolCaps> caps_;  // by pool, built on first use
  std::vector<Undo> undo_;
  bool released_ = false;  // Release was called (Advance cannot follow)
};

}  // namespace gpupool
