// GpuKey: the free state of one GPU packed into 64 bits, the unit that placement scores.
//
// Two GPUs with equal keys are interchangeable for placement, so a node's state is the sorted
// multiset of its keys (a "node class") and scores can be computed once per class rather than
// once per node (docs/design/placement.md). Layout of the bits, low to high:
//   [0,2)  mode: 0 whole, 1 MIG, 2 shared, 3 unusable (unhealthy or held)
//   whole:  [2]     used
//   MIG:    [2,51)  MigLayout::Encode(), [51,58) free-instance mask by layout index
//   shared: [2,12)  free milli-GPUs, [12,30) free memory MiB, [30,36) free client slots
//           (63 = uncapped), [36,57) owner (0 none, tenant id + 1, or kMultiOwner),
//           [57] every occupant allows co-tenancy, [58] flex: an idle GPU that switches between
//           whole and shared use (Gpu::dynamic), so it is a free whole GPU too
#pragma once

#include <cstdint>
#include <vector>

#include "core/ids.h"
#include "core/quantity.h"
#include "model/job.h"
#include "model/mig.h"

namespace gpupool {

enum class KeyMode : uint8_t { kWhole = 0, kMig = 1, kShared = 2, kUnusable = 3 };

class GpuKey {
 public:
  static constexpr uint32_t kMultiOwner = (1u << 21) - 1;
  static constexpr uint8_t kUncappedClients = 63;

  constexpr GpuKey() = default;
  static constexpr GpuKey FromBits(uint64_t b) { return GpuKey(b); }
  static GpuKey Unusable() { return GpuKey(3); }
  static GpuKey Whole(bool used) { return GpuKey(used ? 0b100 : 0); }
  static GpuKey Mig(const MigLayout& layout, uint8_t free_mask);
  static GpuKey Shared(uint32_t free_milli, uint32_t free_memory_mib, uint32_t free_clients,
                       uint32_t owner, bool owner_allows);
  // The idle state of a GPU that may be used whole or shared: the empty shared key `empty`
  // (all of its room free, no owner), marked flex.
  static GpuKey Flex(GpuKey empty) { return GpuKey(empty.bits_ | kFlexBit); }

  uint64_t bits() const { return bits_; }
  KeyMode mode() const { return static_cast<KeyMode>(bits_ & 3); }
  // A free whole GPU: one in whole mode, or an idle flex GPU.
  bool whole_free() const { return bits_ == 0 || flex(); }
  bool flex() const { return (bits_ & kFlexBit) != 0; }
  // MIG
  MigLayout layout() const { return MigLayout::Decode((bits_ >> 2) & ((1ull << 49) - 1)); }
  uint8_t free_mask() const { return static_cast<uint8_t>((bits_ >> 51) & 0x7f); }
  // Shared
  uint32_t free_milli() const { return static_cast<uint32_t>((bits_ >> 2) & 0x3ff); }
  uint32_t free_memory_mib() const { return static_cast<uint32_t>((bits_ >> 12) & 0x3ffff); }
  uint32_t free_clients() const { return static_cast<uint32_t>((bits_ >> 30) & 0x3f); }
  uint32_t owner() const { return static_cast<uint32_t>((bits_ >> 36) & kMultiOwner); }
  bool owner_allows() const { return (bits_ >> 57) & 1; }

  friend constexpr auto operator<=>(GpuKey, GpuKey) = default;

 private:
  static constexpr uint64_t kFlexBit = uint64_t{1} << 58;
  constexpr explicit GpuKey(uint64_t b) : bits_(b) {}
  uint64_t bits_ = 0;
};

// A whole-node view: the GPUs' keys of one node class, sorted, and the class's host level: how
// much of the workload's CPU demand the node can still meet (PlacementPolicy::HostLevel;
// kAllFit when the node's CPU is not tracked or the policy does not look at it).
struct NodeClassView {
  static constexpr uint8_t kAllFit = 255;
  FlavorId flavor;
  const GpuModel* model = nullptr;
  const GpuKey* keys = nullptr;
  int n = 0;
  uint8_t level = kAllFit;
};

// What one replica asks for, with the tenant facts the shared-GPU rule needs. An invalid
// tenant means "any tenant" (used when measuring fragmentation).
struct TaskShape {
  ShapeKind kind = ShapeKind::kWholeGpus;
  uint8_t gpus = 1;
  uint8_t mig_profile = 0;
  uint16_t milli = 0;
  uint32_t memory_mib = 0;
  TenantId tenant;
  bool tenant_allows_cotenancy = false;
  friend bool operator==(const TaskShape&, const TaskShape&) = default;
};

GpuEq FreeEq(const GpuModel& model, GpuKey key);
inline bool MigIdle(GpuKey key) { return key.free_mask() == (1u << key.layout().size()) - 1; }

// Whether a fraction fits on a shared GPU (a flex one included), and the key after placing it
// (never flex: the GPU is in shared use).
bool SharedFits(GpuKey key, const TaskShape& t);
GpuKey SharedAfter(GpuKey key, const TaskShape& t);

// Layout index of the lowest-start free instance of `profile`, or -1.
int FreeInstanceOf(GpuKey key, uint8_t profile);
GpuKey MigAfterTake(GpuKey key, int index);

// Re-partitioning an idle MIG GPU for `profile`: for each valid start, the layout that keeps
// every instance not overlapping the new one, adds the new one (taken) and fills what is left
// with more free instances of the same profile. Result keys are ordered by start.
std::vector<GpuKey> ReconfigOptions(const GpuModel& model, GpuKey idle_key, uint8_t profile);

// Free capacity on this GPU that a task of this shape could use (whole-GPU tasks: the GPU if
// free; MIG: free instances of the profile, or the whole GPU if idle and `reconfig`; shared:
// the free fraction if the task fits).
GpuEq UsableBy(const GpuModel& model, GpuKey key, const TaskShape& t, bool reconfig);

}  // namespace gpupool
