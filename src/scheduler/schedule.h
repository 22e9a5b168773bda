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

#include "model/state.h"
#include "scheduler/config.h"
#include "scheduler/plan.h"

namespace gpupool {

// Nodes that take only jobs expected to end by a time (now + estimate <= deadline; a job without
// an estimate never fits): on-demand nodes, paid for by their tenant's budget until then
// (policy/burst/burst.h, OnDemandDeadlines; docs/design/burst.md). Jobs already on such a node
// are not affected. The node is held whole until its deadline, as a backfill hold holds GPUs.
using NodeDeadlines = std::map<NodeId, Time>;

// REQUIRES: Validate(config).ok().
Plan Schedule(const State& state, const SchedulerConfig& config, Time now,
              const NodeDeadlines& deadlines = {});

}  // namespace gpupool
