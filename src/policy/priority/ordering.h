// Total orders used by the scheduler (STYLE.md habit 2: the last tie breaks on an id).
#pragma once

#include "model/state.h"
#include "policy/priority/queue_policy.h"

namespace gpupool {

// Queue order inside a tenant: higher priority first, then jobs naming a reservation (its
// capacity goes to them before the tenant's other jobs), then the tenant's queue policy
// (starved jobs first, then its rank: queue_policy.h), then earlier submission, then lower id.
struct QueueKey {
  int32_t neg_priority;
  bool unreserved;  // within a priority, jobs that name a reservation go first (DESIGN.md §5)
  bool not_starved;
  double rank;  // 0 under fifo
  Time submitted;
  JobId id;
  friend auto operator<=>(const QueueKey&, const QueueKey&) = default;
};
QueueKey QueueKeyOf(const State& state, const Job& job, const QueuePolicyConfig& cfg, QueueOrder order, Time now);
// Under fifo, starvation aside.
QueueKey QueueKeyOf(const State& state, const Job& job);
inline bool QueueBefore(const State& state, const Job& a, const Job& b) {
  return QueueKeyOf(state, a) < QueueKeyOf(state, b);
}

// Victim order for preemption: lower priority first, then the most recently started, then the
// higher id (the newer job).
bool VictimBefore(const State& state, const Job& a, const Job& b);

}  // namespace gpupool
