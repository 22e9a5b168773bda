#include "policy/priority/ordering.h"

namespace gpupool {

QueueKey QueueKeyOf(const State& state, const Job& job, const QueuePolicyConfig& cfg, QueueOrder order, Time now) {
  const QueueRank r = RankOf(cfg, order, job, state.catalogue(), now);
  return {-state.priority_class(job.spec.priority_class).value, !job.spec.reservation.valid(), !r.starved, r.rank,
          job.submitted, job.id};
}

QueueKey QueueKeyOf(const State& state, const Job& job) {
  return {-state.priority_class(job.spec.priority_class).value, !job.spec.reservation.valid(), true, 0, job.submitted,
          job.id};
}

bool VictimBefore(const State& state, const Job& a, const Job& b) {
  const int32_t pa = state.priority_class(a.spec.priority_class).value;
  const int32_t pb = state.priority_class(b.spec.priority_class).value;
  if (pa != pb) return pa < pb;
  const Time sa = a.state == JobState::kRunning ? a.started : a.admitted;
  const Time sb = b.state == JobState::kRunning ? b.started : b.admitted;
  if (sa != sb) return sa > sb;
  return a.id > b.id;
}

}  // namespace gpupool
