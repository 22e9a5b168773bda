// Jobs: a gang of identical replicas, all placed or none (DESIGN.md §4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/quantity.h"
#include "core/time.h"
#include "model/catalogue.h"
#include "model/node.h"

namespace gpupool {

enum class ShapeKind : uint8_t { kWholeGpus, kMigProfile, kGpuFraction };

// What one replica needs on one node.
struct ReplicaShape {
  ShapeKind kind = ShapeKind::kWholeGpus;
  FlavorId flavor;
  uint8_t gpus = 1;            // kWholeGpus: GPUs on one node
  uint8_t mig_profile = 0;     // kMigProfile: index into GpuModel::profiles
  uint16_t milli = 0;          // kGpuFraction: 1..1000 milli-GPUs
  uint32_t gpu_memory_mib = 0; // kGpuFraction: memory bound on the shared GPU
  int64_t cpu_milli = 0;       // host resources on the node
  int64_t memory_mib = 0;

  // No GPU at all, only CPU and memory on a node of the flavor (gpus: 0).
  bool gpuless() const { return kind == ShapeKind::kWholeGpus && gpus == 0; }
  // GPU-equivalents of one replica. REQUIRES: flavor valid in catalogue.
  GpuEq Eq(const Catalogue& catalogue) const;
  friend bool operator==(const ReplicaShape&, const ReplicaShape&) = default;
};

std::string Describe(const Catalogue& catalogue, const ReplicaShape& shape);

struct TopologyConstraint {
  TopologyLevel level = TopologyLevel::kNone;
  bool required = true;  // false: preferred, fall back to anywhere
};

enum class JobState : uint8_t { kPending, kAdmitted, kRunning, kSucceeded, kFailed, kCancelled };
std::string_view JobStateName(JobState s);
inline bool IsTerminal(JobState s) { return s >= JobState::kSucceeded; }
inline bool HoldsResources(JobState s) {
  return s == JobState::kAdmitted || s == JobState::kRunning;
}

// How an admitted job counts against quota: inside the tenant's guarantee, on capacity
// borrowed from others, or on nodes dedicated to the tenant (outside the shared pool).
enum class AdmissionKind : uint8_t { kGuaranteed, kBorrowed, kDedicated };
std::string_view AdmissionKindName(AdmissionKind k);

// One grant on one GPU: the whole GPU, one MIG instance (by its start slice), or a fraction.
struct GpuGrant {
  uint16_t gpu = 0;
  int8_t mig_start = -1;
  uint16_t milli = 0;
  uint32_t memory_mib = 0;
  friend bool operator==(const GpuGrant&, const GpuGrant&) = default;
};

struct ReplicaPlacement {
  NodeId node;
  std::vector<GpuGrant> grants;
  friend bool operator==(const ReplicaPlacement&, const ReplicaPlacement&) = default;
};

enum class ReasonCode : uint8_t {
  kNone,
  kNotYetConsidered,
  kMayNotBorrow,       // priority class limited to the guarantee
  kBorrowLimit,        // tenant at guaranteed + borrow_limit
  kNoLendableCapacity, // others' unused guarantees are not lendable
  kNoQuota,            // tenant has no quota for the flavor
  kInsufficientCapacity,
  kTopology,
  kNoEligibleNodes,    // nothing matches flavor, mode, labels or pool
  kHeldForBackfill,    // capacity is held for an earlier job
  kNeverFits,          // shape larger than any node
  kPreemptionBudget,   // would need preemption, but the cycle's budget is spent
  kMaintenance,        // within the guarantee, but maintenance leaves the pool no room
  kReservation,        // names a reservation that is not in force, or is fully used
};
std::string_view ReasonCodeName(ReasonCode c);

struct PendingReason {
  ReasonCode code = ReasonCode::kNone;
  std::string message;
  friend bool operator==(const PendingReason&, const PendingReason&) = default;
};

// One requirement of a node selector, as Kubernetes' matchExpressions: the node's label `key`
// has one of `values` (In), none of them or no such key (NotIn), exists (Exists) or does not
// (DoesNotExist). Node labels are "key=value" (model/node.h).
enum class SelectorOp : uint8_t { kIn, kNotIn, kExists, kDoesNotExist };
std::string_view SelectorOpName(SelectorOp op);
struct LabelRequirement {
  std::string key;
  SelectorOp op = SelectorOp::kIn;
  std::vector<std::string> values;  // sorted, unique; In and NotIn only
  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};
// Whether sorted "key=value" labels meet every requirement (an empty selector: always).
bool Matches(const std::vector<LabelRequirement>& selector, const std::vector<std::string>& labels);
// "cuda in (12.4,12.6), !spot": kubectl's notation.
std::string Describe(const std::vector<LabelRequirement>& selector);

struct JobSpec {
  TenantId tenant;
  std::string name;
  PriorityClassId priority_class;
  uint16_t replicas = 1;
  // shape.flavor is the GPU model the job runs on (or will be tried on first); an admission may
  // move it to another of `flavors` (JobFlavorChosen).
  ReplicaShape shape;
  // The GPU models the job accepts, in order of preference (Kueue's flavor fungibility), with
  // shape.flavor among them; empty: shape.flavor alone. Whole GPUs and fractions only (a MIG
  // profile belongs to one model). Quota is charged to the flavor it is admitted on.
  std::vector<FlavorId> flavors;
  TopologyConstraint topology;
  Duration estimated_duration = Duration::Infinite();
  std::vector<std::string> command;
  bool checkpointable = false;
  // Runs in this reservation of its tenant (DESIGN.md §5): admitted only while the reservation
  // is in force and its named jobs fit its amount; billed as reserved inside the window.
  ReservationId reservation;
  // Only nodes whose labels meet all of these (and the tenant's required_labels).
  std::vector<LabelRequirement> node_selector;
};

inline constexpr size_t kMaxFlavorsPerJob = 8;

struct Job {
  JobId id;
  JobSpec spec;
  JobState state = JobState::kPending;
  Time submitted, admitted, started;
  std::vector<ReplicaPlacement> placement;  // replicas entries while HoldsResources(state)
  AdmissionKind admitted_as = AdmissionKind::kGuaranteed;
  std::vector<JobId> preempted_by;          // never preempt these back (no cycles)
  uint32_t preemptions = 0;
  // The current (or last) placement's attempt: each JobAdmitted bumps it (1 for the first), so
  // it is journaled with the events, increases per job, and never depends on a clock.
  int64_t attempt = 0;
  // Run time of its earlier attempts (preempted or requeued while running): with the current
  // run, the service it has attained, which queue policies order by (policy/priority/queue_policy.h).
  Duration ran;
  PendingReason reason;

  GpuEq Eq(const Catalogue& c) const { return spec.shape.Eq(c) * spec.replicas; }
  // Expected end: start (or admission, before the start) plus the estimate; Never() without an
  // estimate.
  Time ExpectedEnd() const {
    return (state == JobState::kRunning ? started : admitted) + spec.estimated_duration;
  }
};

}  // namespace gpupool
