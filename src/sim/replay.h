// Multi-tenant replay: trace jobs arrive at their submit time, run for their duration, and are
// scheduled by the same Schedule() the daemon runs, at every moment something happens (an
// arrival or a completion). Pooled: all tenants share one pool sized to the sum of their
// guarantees. Partitioned: each tenant alone on nodes of its own (what teams have without
// gpupool). Issue 3, part 2; docs/design/simulator.md.
//
// Assumptions, stated in the report: every VC's clock starts at t=0 (the trace lost the
// alignment); nodes have 8 GPUs of one model; a job of n > 8 GPUs is a gang of 8-GPU replicas
// (or n/r GPUs each for the smallest r that divides n); preempted jobs resume where they left
// off (checkpointing); durations are known to the scheduler as estimates (backfill).
//
// With ReplayOptions::burst the pooled replay also bursts to on-demand nodes (DESIGN.md §6) the
// way the daemon does, through a SimulatedProvider in virtual time; docs/design/simulator.md,
// "Burst replay".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/catalogue.h"
#include "policy/burst/burst.h"
#include "scheduler/config.h"
#include "sim/philly.h"

namespace gpupool {

// The replay's catalogue: the built-in models plus `philly-gpu`, the trace's one generic model
// (8-GPU nodes, not MIG-capable). Burst offers name flavors of this catalogue.
Catalogue ReplayCatalogue();

// Burst to on-demand in the replay: the daemon's `burst:` section (sim/burst_config.h), with
// tenants by their trace names. The provider is always the simulated one.
struct ReplayBurst {
  std::map<FlavorId, OnDemandOffer> offers;    // flavors of ReplayCatalogue()
  std::map<std::string, BurstPolicy> tenants;  // by tenant name
};

struct ReplayOptions {
  SchedulerConfig scheduler;
  bool partitioned = false;
  double capacity_scale = 1.0;
  bool estimates = true;  // pass durations to the scheduler as estimates
  // Estimates off by a seeded factor, log-uniform in [1/estimate_noise, estimate_noise] per job
  // (1: exact). What users' walltime guesses look like to srsf, sjf and backfill.
  double estimate_noise = 1.0;
  uint64_t seed = 1;
  double sample_every_s = 3600;
  std::optional<ReplayBurst> burst;  // pooled only
};

struct TenantReport {
  int jobs = 0, finished = 0, never_started = 0, preempted = 0;
  double avg_jct_s = 0, p50_wait_s = 0, p95_wait_s = 0, p99_wait_s = 0, gpu_hours = 0;
  double mean_slowdown = 0;  // JCT / duration, over finished jobs
  int64_t guaranteed_gpus = 0;
};

struct ReplaySample {
  double t_s = 0;
  double utilization_pct = 0;
  int queued = 0;
};

// What bursting cost, from the fleet once every node is released. Money in micros, exact:
// each node costs CostMicros(gpus, price, released - ready), rounded up per node.
struct BurstTenantReport {
  int nodes = 0;  // on-demand nodes that became ready (and were billed)
  int64_t cost_micros = 0;
  int64_t billed_gpu_ms = 0;  // sum of gpus x (released - ready)
  int64_t used_gpu_ms = 0;    // GPU time its jobs ran on on-demand nodes
  int jobs_on_demand = 0;     // jobs that ran at least once on an on-demand node
  int requeued = 0;           // jobs requeued because their on-demand node was released
  // Of those, requeued before the end their node's budget was charged for (the job's expected
  // end): on-demand nodes take only jobs that end by their deadline, so 0 unless a budget is
  // lowered under what it already pays for.
  int requeued_charged = 0;
};

struct BurstReport {
  bool enabled = false;
  int nodes = 0, requeued = 0, requeued_charged = 0, jobs_on_demand = 0, provision_failures = 0;
  int64_t node_ms = 0, billed_gpu_ms = 0, used_gpu_ms = 0, cost_micros = 0;
  int64_t over_budget_micros = 0;  // the most one tenant spent over its budget in one window
  std::map<std::string, BurstTenantReport> tenants;  // every tenant with a policy
};

struct ReplayReport {
  std::map<std::string, TenantReport> tenants;
  double avg_jct_s = 0, p95_wait_s = 0, utilization_pct = 0, makespan_s = 0, jain_fairness = 0;
  double p50_jct_s = 0, p99_jct_s = 0;
  int preemptions = 0, cycles = 0, reshaped_jobs = 0, capacity_gpus = 0;
  std::vector<ReplaySample> timeline;
  BurstReport burst;  // enabled only with ReplayOptions::burst
};

// `progress` (may be empty) gets the fraction of jobs finished, now and then.
Result<ReplayReport> RunReplay(const std::vector<TraceJob>& jobs,
                               const std::vector<TraceTenant>& tenants, const ReplayOptions& opt,
                               const std::function<void(double)>& progress);

// Percentile by nearest rank over a copy of `v`; 0 for an empty vector.
double Percentile(std::vector<double> v, double pct);
// Jain's index of `x`: (sum x)^2 / (n * sum x^2); 1 means all equal.
double JainIndex(const std::vector<double>& x);

}  // namespace gpupool
