// KeyIndex: for each pool, which schedulable, unheld nodes hold a MIG or shared GPU in a given
// state (GpuKey), with the keys bucketed by who may use them.
//
// Why: for a policy whose score is a difference of per-GPU values (FGD, firstfit), the score of
// putting a MIG instance or a fraction on a GPU depends on that GPU's key alone, not on the rest
// of its node. So the best option is found over the distinct keys, not over node classes, and
// the owner buckets let a fraction job look only at GPUs it may share: empty ones, its own
// tenant's, and (if it consents) those whose occupants all consent. docs/design/placement.md.
//
// Indexed keys: MIG GPUs with a free instance or idle; shared GPUs with free milli and a free
// client slot, but not idle dynamic ones (flex keys: their options change the node's count of
// free whole GPUs, so they are searched by node class). Buckets: kMig; kOpen (shared, no owner); kAllows (shared, owned, every occupant
// consents); kOwnerBase + tenant id (shared, owned by that tenant alone or among others).
//
// Invariant: node n is in entry(k).nodes iff n is linked in its session class (schedulable,
// unheld) and one of its GPUs has key k.
#pragma once

#include <array>
#include <set>
#include <unordered_map>
#include <vector>

#include "policy/placement/gpu_state.h"

namespace gpupool {

class KeyIndex {
 public:
  static constexpr uint32_t kMig = 0, kOpen = 1, kAllows = 2, kOwnerBase = 3;

  struct Entry {
    GpuKey key;
    uint32_t pool = 0;
    int32_t index = -1;  // dense among entries of the same mode: a memo row index
    std::set<uint32_t> nodes;
    std::array<uint32_t, 2> bucket{};
    std::array<int32_t, 2> pos{-1, -1};
    int buckets = 0;
  };

  void Add(uint32_t pool, uint32_t node, const GpuKey* keys, int n);
  void Remove(uint32_t pool, uint32_t node, const GpuKey* keys, int n);

  const Entry& entry(uint32_t id) const { return entries_[id]; }
  // Ids of the keys of (pool, bucket) that some node holds.
  const std::vector<uint32_t>& active(uint32_t pool, uint32_t bucket) const;

 private:
  static bool Indexed(GpuKey k);
  uint32_t Intern(uint32_t pool, GpuKey k);
  void Activate(uint32_t id);
  void Deactivate(uint32_t id);
  static uint64_t Slot(uint32_t pool, uint32_t bucket) { return (uint64_t{pool} << 32) | bucket; }

  std::vector<Entry> entries_;
  std::vector<std::unordered_map<uint64_t, uint32_t>> intern_;  // by pool: key bits -> id
  std::unordered_map<uint64_t, std::vector<uint32_t>> lists_;  // Slot(pool, bucket) -> ids
  std::array<int32_t, 2> per_mode_{};  // next dense index: [0] MIG, [1] shared
};

}  // namespace gpupool
