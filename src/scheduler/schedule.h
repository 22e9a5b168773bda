// Schedule(state, config, now) -> Plan: one scheduling cycle, a pure function. The same state,
// config and time give the same plan, byte for byte (STYLE.md habit 1).
//
// The cycle, in the order docs/design/scheduler.md explains:
//  1. Tenants take turns; the next is the one whose head job fits in its guarantee, else the
//     lowest weighted dominant share of borrowed capacity (blended with decayed usage), then
//     the lowest id. Inside a tenant: priority, then submission time, then id.
//  2. For each job: dedicated nodes first (outside quota); then the quota check (guarantee,
//     borrow limit, lendable capacity); then placement as a gang.
//  3. A job that does not fit may preempt (reclaim or in-tenant priority), within a budget.
//  4. A job still blocked by running work holds the capacity it waits for (backfill).
//  5. Every job left waiting gets a reason.
#pragma once

#include <map>
#include <memory>

#include "model/state.h"
#include "scheduler/config.h"
#include "scheduler/plan.h"

namespace gpupool {

class PlacementPolicy;
class Session;

// Nodes that take only jobs expected to end by a time (now + estimate <= deadline; a job without
// an estimate never fits): on-demand nodes, paid for by their tenant's budget until then
// (policy/burst/burst.h, OnDemandDeadlines; docs/design/burst.md). Jobs already on such a node
// are not affected. The node is held whole until its deadline, as a backfill hold holds GPUs.
using NodeDeadlines = std::map<NodeId, Time>;

// REQUIRES: Validate(config).ok().
Plan Schedule(const State& state, const SchedulerConfig& config, Time now,
              const NodeDeadlines& deadlines = {});

// Schedule() with its session kept from one cycle to the next, for a caller that applies each
// plan in full before the next cycle (ApplyPlan with start_placed) and otherwise only submits
// jobs or ends pending ones: the packing experiment, one pod a cycle (sim/packing). The plans
// are Schedule()'s (what each job gets and why it waits; only stats.node_classes counts every
// class seen so far); a cycle no longer rebuilds the session over every node and active job,
// which was most of a one-job cycle's time. `check_every` > 0 compares the kept session with a
// rebuilt one every that many cycles and fails (GP_CHECK) where they differ.
//
// REQUIRES: Validate(config).ok(); config.workload set (the policy is made once); preemption,
// backfill and MIG re-partitioning off; the same State object on every call, and between
// calls no change to nodes, tenants, reservations or active jobs but the last plan's.
class KeptScheduler {
 public:
  explicit KeptScheduler(SchedulerConfig config, int check_every = 0);
  ~KeptScheduler();
  KeptScheduler(const KeptScheduler&) = delete;
  KeptScheduler& operator=(const KeptScheduler&) = delete;

  Plan Cycle(const State& state, Time now);

 private:
  SchedulerConfig config_;
  int check_every_;
  int64_t cycles_ = 0;
  std::unique_ptr<PlacementPolicy> policy_;
  std::unique_ptr<Session> session_;
  const State* state_ = nullptr;
};

}  // namespace gpupool
