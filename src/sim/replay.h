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
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scheduler/config.h"
#include "sim/philly.h"

namespace gpupool {

struct ReplayOptions {
  SchedulerConfig scheduler;
  bool partitioned = false;
  double capacity_scale = 1.0;
  bool estimates = true;  // pass durations to the scheduler as estimates
  double sample_every_s = 3600;
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

struct ReplayReport {
  std::map<std::string, TenantReport> tenants;
  double avg_jct_s = 0, p95_wait_s = 0, utilization_pct = 0, makespan_s = 0, jain_fairness = 0;
  int preemptions = 0, cycles = 0, reshaped_jobs = 0, capacity_gpus = 0;
  std::vector<ReplaySample> timeline;
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
