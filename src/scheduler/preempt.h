// Preemption: reclaim (a tenant within its guarantee takes back capacity from tenants above
// theirs) and priority (a job preempts lower-priority, preemptible jobs of its own tenant).
//
// Candidates: running jobs of the flavor on nodes the preemptor may use, preemptible, past the
// minimum runtime, and not a job that once preempted this one (no cycles: a job preempted to
// make room never preempts its preemptor). Reclaim candidates come first, and a job of another
// tenant is taken only while that tenant is still above its guarantee, so a tenant within its
// guarantee is never preempted by another. Within each group: lowest priority, then most
// recently started. Greedy until the preemptor fits, then each victim is given back if the
// preemptor still fits without it: the smallest set this search finds.
#pragma once

#include <optional>
#include <vector>

#include "scheduler/config.h"
#include "scheduler/placer.h"

namespace gpupool {

// Queue preemption: the tenant's queue policy lets a pending job take the place of running jobs
// of its tenant and priority class that the policy ranks after it (queue_policy.h), at most
// `budget` of them.
struct QueueVictims {
  const QueuePolicyConfig* cfg = nullptr;  // null: none
  QueueOrder order = QueueOrder::kFifo;
  int budget = 0;
};

struct PreemptOutcome {
  bool ok = false;
  std::vector<PreemptDecision> victims;
  Placer::Outcome placement;
  AdmissionKind kind = AdmissionKind::kGuaranteed;
};

// A reclaim that waits for its victims' minimum runtime: the job is within its tenant's
// guarantee, and borrowed work of other tenants that is still too young to preempt would make
// room once it is old enough.
struct ReclaimWait {
  GpuEq amount;                 // what must be taken back beyond the free capacity
  std::vector<TenantId> from;   // whose borrowed work, in tenant-id order
  Time earliest;                // when enough of it may be preempted
};
// Nothing when the job is not within its guarantee, or no young borrowed work would do. Counts
// capacity, not fit: a shape that fragmentation blocks may still wait longer.
std::optional<ReclaimWait> PendingReclaim(Session& session, const Job& job,
                                          const std::vector<uint32_t>& pools,
                                          const PreemptionConfig& cfg);

// On success the session holds the victims' release and the preemptor's placement.
// A job naming a reservation (the scheduler tries it only in force and within the reserved
// amount) counts as within its guarantee, takes no quota check, and may also preempt its
// tenant's preemptible jobs that name no reservation, whatever their priority: the reserved
// capacity is its first.
// With `queue`, also the tenant's running jobs that its queue policy ranks after this one (kind
// kQueue), after its lower-priority ones.
PreemptOutcome TryPreempt(Session& session, Placer& placer, const Job& job,
                          const std::vector<uint32_t>& pools, const PreemptionConfig& cfg,
                          const std::vector<JobId>& released_before, const QueueVictims& queue = {});

}  // namespace gpupool
