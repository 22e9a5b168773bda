// BurstSim: the burst side of one pooled replay (sim/replay.h, ReplayOptions::burst). It carries
// out the planner's decisions through the same code as the daemon's burst tick
// (burst/carry_out.h; daemon/control_plane_burst.cc) over a SimulatedProvider in virtual time,
// and says at which instants it must run again so that nodes join and leave on time (ready,
// idle timeout, budget spent) and waiting jobs burst as soon as they pass their max_wait.
// docs/design/simulator.md, "Burst replay".
//
// Thread-safety: none; one replay, one thread.
#pragma once

#include <functional>
#include <map>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include "burst/sim_provider.h"
#include "policy/burst/burst.h"
#include "scheduler/schedule.h"
#include "sim/replay.h"

namespace gpupool {

class BurstSim {
 public:
  BurstSim(const Catalogue& catalogue, const ReplayBurst& cfg,
           std::map<TenantId, BurstPolicy> policies)
      : offers_(cfg.offers), policies_(std::move(policies)), provider_(catalogue, cfg.offers) {}

  // TrackBurstUse: before the instant's completions, a node whose last job ends now was busy
  // until now (the daemon's Tick does the same).
  void Track(const State& s, Time now) { TrackBurstUse(s, fleet_, now); }

  // A job that may burst once it waited past its tenant's max_wait: wake up then.
  void Watch(const Job& j, Time now);

  // Nodes the provider has ready join the state as on-demand nodes dedicated to their tenant
  // (MakeBurstNode, as built). Called before the instant's cycle, so that they are in it.
  int Join(State& s, Time now);

  // The cycle's deadlines for on-demand nodes (OnDemandDeadlines): what their budgets pay for.
  NodeDeadlines Deadlines(const State& s, Time now) {
    return scheduled_ = OnDemandDeadlines(s, policies_, offers_, fleet_, now);
  }

  // After the cycle: PlanBurst and its decision, releases first (their jobs go back to the queue
  // with JobLost; `on_lost` sees each such job before), then provisions. Returns the number of
  // jobs requeued.
  int Step(State& s, Time now, const std::function<void(JobId)>& on_lost);
  int provisioned() const { return provisioned_; }
  // Whether the last Step's budget paid for a waiting job on a live node for longer than the
  // last cycle's deadlines allowed: a cycle now can place it (the daemon's next tick would).
  bool extended() const { return extended_; }

  // The next instant the burst step must run (Time::Never() if none): a node becomes ready (may
  // be `now` itself, for a provisioning delay of 0), an idle node reaches its idle timeout, a
  // tenant's spend reaches its budget, a waiting job passes its max_wait.
  Time NextWake(const State& s, Time now);

  // The next budget window of a tenant whose jobs were refused on the last step: its budget is
  // back then. Weak: the loop does not wait for it once nothing else can happen (see RunOne).
  Time NextRollover(Time now) const;

  // Every node, released or not, in request order.
  std::vector<BurstNode> Fleet() const;
  // The most any tenant spent over its budget in one budget window up to `end` (0 if none did):
  // what waiting for the jobs a budget paid for may cost beyond it.
  int64_t MostOverBudget(Time end) const;
  int provision_failures() const { return provision_failures_; }

 private:
  class Steps;  // its BurstSteps (burst/carry_out.h)

  // Released nodes whose release is at or before their tenant's budget window no longer count
  // (SpentMicros clips them to nothing) and the planner skips released nodes: they leave the
  // working fleet, which keeps each step's cost bounded. Order among the rest is kept (the
  // planner's decision does not depend on it anyway).
  void Archive(Time now);

  // The first instant after `now`, in the current window, at which the tenant's spend reaches its
  // budget (Never if it does not). The planner then releases its priced idle nodes at once. Spend
  // only grows while the tenant's fleet is unchanged, so the answer is cached until it changes.
  Time BudgetSpentAt(TenantId tenant, const BurstPolicy& p, Time now);

  struct Crossing {
    uint64_t version = 0;
    Time window;
    bool computed = false;
    Time at = Time::Never();
  };
  using Expiry = std::pair<Time, JobId>;

  std::map<FlavorId, OnDemandOffer> offers_;
  std::map<TenantId, BurstPolicy> policies_;
  SimulatedProvider provider_;
  std::vector<BurstNode> fleet_, archive_;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> expiries_;
  std::set<TenantId> refused_;
  std::map<TenantId, uint64_t> version_;  // bumps when the tenant's fleet changes
  std::map<TenantId, Crossing> crossing_;
  NodeDeadlines scheduled_;  // what the last cycle was given
  bool extended_ = false;
  int provisioned_ = 0, provision_failures_ = 0;
};

}  // namespace gpupool
