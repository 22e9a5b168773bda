#include "scheduler/schedule.h"

#include <algorithm>

#include "policy/fair_share/fair_share.h"
#include "policy/priority/ordering.h"
#include "scheduler/cycle.h"

namespace gpupool {
namespace cycle_internal {

Cycle::TenantTurn Cycle::TurnOf(uint32_t t) {
  const Tenant& ten = state_.tenants()[t];
  const Job& head = *queues_[t][next_[t]];
  const FlavorId f = head.spec.shape.flavor;
  const QuotaBook& q = session_.quota();
  const bool within = q.has_quota(ten.id, f) &&
                      q.usage(ten.id, f) + head.Eq(state_.catalogue()) <= q.guaranteed(ten.id, f);
  if (share_dirty_[t]) {
    share_[t] = FairShareKey(cfg_.fair_share,
                             BorrowedDominantShare(q, ten, state_.catalogue().size()), history_[t]);
    share_dirty_[t] = false;
  }
  return {!within, share_[t], t, version_[t]};
}

void Cycle::Refresh(uint32_t t) {
  share_dirty_[t] = true;
  if (next_[t] >= queues_[t].size()) return;
  ++version_[t];
  turns_.push(TurnOf(t));
}

Plan Cycle::Run() {
  preempt_budget_ = cfg_.preemption.max_attempts_per_cycle;
  queue_budget_ = cfg_.queue.max_preemptions_per_cycle;
  holds_left_ = cfg_.backfill.max_holds;
  hold_attempts_left_ = 4 * cfg_.backfill.max_holds;
  const size_t nt = state_.tenants().size();
  queues_.assign(nt, {});
  next_.assign(nt, 0);
  ahead_.assign(nt, {});
  orders_.resize(nt);
  for (uint32_t t = 0; t < nt; ++t) orders_[t] = OrderOf(cfg_.queue, state_.tenants()[t]);
  // Queue order (QueueKey, under each tenant's queue policy), the sort keys computed once per job.
  std::vector<std::vector<std::pair<QueueKey, const Job*>>> entries(nt);
  for (JobId id : state_.pending()) {  // not jobs(): that grows with history
    const Job& j = *state_.FindJob(id);
    const uint32_t t = j.spec.tenant.value();
    entries[t].push_back({QueueKeyOf(state_, j, cfg_.queue, orders_[t], now_), &j});
  }
  for (uint32_t t = 0; t < nt; ++t) {
    std::sort(entries[t].begin(), entries[t].end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    queues_[t].reserve(entries[t].size());
    ahead_[t].reserve(entries[t].size());
    uint32_t in_class = 0;
    for (size_t i = 0; i < entries[t].size(); ++i) {
      const QueueKey& k = entries[t][i].first;
      if (i > 0 && (k.neg_priority != entries[t][i - 1].first.neg_priority ||
                    k.unreserved != entries[t][i - 1].first.unreserved)) {
        in_class = 0;
      }
      ahead_[t].push_back(in_class++);
      queues_[t].push_back(entries[t][i].second);
    }
  }
  history_ = cfg_.fair_share.usage_blend > 0
                 ? HistoryShares(state_, state_.DecayedUsages(now_))
                 : std::vector<double>(nt, 0.0);
  version_.assign(nt, 0);
  share_.assign(nt, 0.0);
  share_dirty_.assign(nt, true);
  for (uint32_t t = 0; t < nt; ++t) {
    if (!queues_[t].empty()) turns_.push(TurnOf(t));
  }
  while (!turns_.empty()) {
    const TenantTurn turn = turns_.top();
    turns_.pop();
    const uint32_t t = turn.tenant;
    if (turn.version != version_[t]) continue;
    current_ahead_ = ahead_[t][next_[t]];
    Consider(*queues_[t][next_[t]]);
    ++version_[t];
    if (++next_[t] < queues_[t].size()) turns_.push(TurnOf(t));
  }
  std::sort(plan_.pending.begin(), plan_.pending.end(),
            [](const PendingNote& a, const PendingNote& b) { return a.job < b.job; });
  plan_.stats.node_classes = static_cast<int>(session_.num_classes());
  return std::move(plan_);
}

}  // namespace cycle_internal

Plan Schedule(const State& state, const SchedulerConfig& config, Time now,
              const NodeDeadlines& deadlines) {
  GP_CHECK(Validate(config).ok()) << "unvalidated scheduler config";
  WorkloadMix mix;
  if (config.workload) {
    mix = *config.workload;
  } else if (config.placement == "fgd" || config.placement == "gpupool") {
    mix = WorkloadMixOf(state, config.max_workload_types);
  }
  if (config.placement == "gpupool" && mix.fractions.empty()) mix.fractions = RecentFractions(state, config.pairing_window);
  Result<std::unique_ptr<PlacementPolicy>> policy =
      MakePlacementPolicy(config.placement, std::move(mix), config.mig_reconfigure, config.placement_seed);
  GP_CHECK(policy.ok());
  cycle_internal::Cycle cycle(state, config, **policy, now, deadlines);
  return cycle.Run();
}

KeptScheduler::KeptScheduler(SchedulerConfig config, int check_every)
    : config_(std::move(config)), check_every_(check_every) {
  GP_CHECK(Validate(config_).ok()) << "unvalidated scheduler config";
  GP_CHECK(config_.workload != nullptr) << "KeptScheduler needs a fixed workload mix";
  GP_CHECK(!config_.preemption.enabled && !config_.backfill.enabled && !config_.mig_reconfigure)
      << "KeptScheduler: preemption, backfill and MIG re-partitioning must be off";
  WorkloadMix mix = *config_.workload;
  GP_CHECK(config_.placement != "gpupool" || !mix.fractions.empty())
      << "KeptScheduler: the gpupool policy needs the mix's fractions (not learned per cycle)";
  Result<std::unique_ptr<PlacementPolicy>> policy =
      MakePlacementPolicy(config_.placement, std::move(mix), config_.mig_reconfigure, config_.placement_seed);
  GP_CHECK(policy.ok());
  policy_ = std::move(*policy);
}

KeptScheduler::~KeptScheduler() = default;

Plan KeptScheduler::Cycle(const State& state, Time now) {
  const bool check = check_every_ > 0 && cycles_ % check_every_ == 0;
  if (session_ == nullptr) {
    state_ = &state;
    session_ = std::make_unique<Session>(state, *policy_, now);
  } else {
    GP_CHECK(state_ == &state) << "KeptScheduler: another state";
    session_->Advance(now);
    if (check) {
      const Session fresh(state, *policy_, now);
      const std::string diff = session_->DifferenceFrom(fresh);
      GP_CHECK(diff.empty()) << "KeptScheduler: the kept session differs from a rebuilt one after "
                             << cycles_ << " cycles: " << diff;
    }
  }
  ++cycles_;
  Plan plan = cycle_internal::Cycle(state, config_, *session_, now).Run();
  if (check) {
    GP_CHECK(plan == Schedule(state, config_, now))
        << "KeptScheduler: cycle " << cycles_ << " planned otherwise than Schedule()";
  }
  return plan;
}

}  // namespace gpupool
