// Why a job waits (docs/design/scheduler.md, "Reasons"), and the failure cache that lets jobs
// asking for the same thing share one answer ("The failure cache").
#include <algorithm>

#include "policy/calendar/calendar.h"
#include "policy/priority/ordering.h"
#include "scheduler/cycle.h"

namespace gpupool::cycle_internal {

FailKey Cycle::KeyOf(const Job& job, Time end) const {
  const ReplicaShape& s = job.spec.shape;
  const bool holds = !session_.held_nodes().empty();
  return {job.spec.tenant.value(),
          s.flavor.value(),
          job.spec.priority_class.value(),
          static_cast<uint8_t>(s.kind),
          s.gpus,
          s.mig_profile,
          static_cast<uint8_t>(static_cast<int>(job.spec.topology.level) * 2 +
                               job.spec.topology.required),
          s.milli,
          job.spec.replicas,
          s.gpu_memory_mib,
          s.cpu_milli,
          s.memory_mib,
          holds ? end.millis() : 0,
          SelectorIndex(job)};
}

uint32_t Cycle::SelectorIndex(const Job& job) const {
  if (job.spec.node_selector.empty()) return 0;
  auto [it, fresh] = selectors_.try_emplace(Describe(job.spec.node_selector), selectors_.size() + 1);
  return it->second;
}

uint32_t Cycle::AddReason(PendingReason reason) {
  plan_.reasons.push_back(std::move(reason));
  return static_cast<uint32_t>(plan_.reasons.size() - 1);
}

const std::string& Cycle::UnschedulableNote(TenantId t, FlavorId f) {
  auto [it, fresh] = unschedulable_notes_.try_emplace({t.value(), f.value()});
  if (!fresh) return it->second;
  const Tenant& ten = state_.tenant(t);
  std::map<NodeCondition, std::pair<int, std::string>> by;  // count, the first node's reason
  for (const Node& n : state_.nodes()) {
    if (n.flavor != f || n.schedulable() || n.condition == NodeCondition::kRetired) continue;
    if (n.dedicated_to.valid() && n.dedicated_to != t) continue;
    if (!std::includes(n.labels.begin(), n.labels.end(), ten.required_labels.begin(), ten.required_labels.end())) {
      continue;
    }
    auto& [count, reason] = by[n.condition];
    if (count++ == 0) reason = n.condition_reason;
  }
  for (const auto& [condition, entry] : by) {
    it->second += (it->second.empty() ? "; " : ", ") + std::to_string(entry.first) +
                  (entry.first == 1 ? " is " : " are ") + std::string(NodeConditionName(condition)) +
                  (entry.second.empty() ? "" : " (" + entry.second + ")");
  }
  return it->second;
}

void Cycle::Wait(const Job& job, PendingReason reason) {
  if (!probing_) WaitWith(job, AddReason(std::move(reason)));
}

void Cycle::WaitWith(const Job& job, uint32_t reason) {
  if (probing_) return;
  if (!flavor_note_.empty()) {
    PendingReason r = plan_.reasons[reason];
    r.message += flavor_note_;
    reason = AddReason(std::move(r));
  }
  PendingNote note{job.id, reason};
  // Under a queue policy other than fifo, or once starved, where the job stands is news: a
  // shorter job may overtake it (or it overtakes others).
  const QueueOrder order = orders_[job.spec.tenant.value()];
  if (order != QueueOrder::kFifo || Starved(cfg_.queue, job, now_)) {
    note.position = "in tenant " + state_.tenant(job.spec.tenant).name + "'s queue, " +
                    DescribePosition(cfg_.queue, order, job, state_.catalogue(), now_, current_ahead_);
  }
  plan_.pending.push_back(std::move(note));
}

PendingReason Cycle::CapacityReason(const Job& job, const Placer::Outcome& o, Time end) {
  const Catalogue& cat = state_.catalogue();
  std::string what = "waiting for " + Describe(cat, job.spec.shape);
  if (job.spec.replicas > 1) what += " x " + std::to_string(job.spec.replicas) + " replicas";
  if (job.spec.topology.level != TopologyLevel::kNone) {
    what += std::string(job.spec.topology.required ? " in one " : " (preferably in one ") +
            std::string(TopologyLevelName(job.spec.topology.level)) +
            (job.spec.topology.required ? "" : ")");
  }
  // Would it fit if nothing were held? Then a hold is what blocks it. Backfill holds only
  // shared pools; a dedicated node held for its deadline is not a backfill reason.
  if (!session_.held_nodes().empty() && end > now_) {
    std::vector<uint32_t> shared;
    for (uint32_t p : session_.EligiblePools(job)) {
      if (!session_.pool(p).dedicated.valid()) shared.push_back(p);
    }
    const size_t mark = session_.Mark();
    Placer::Outcome free = placer_.PlaceGang(job, shared, now_);
    session_.RollbackTo(mark);
    if (free.ok) {
      return {ReasonCode::kHeldForBackfill,
              what + ": capacity is held for a larger job that waits longer; only jobs that "
                     "end before it starts may use it"};
    }
  }
  return {o.code, what + ": " + o.detail};
}

}  // namespace gpupool::cycle_internal
