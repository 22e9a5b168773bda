// SimLoop: drives the scheduler with a virtual clock, the way the daemon will with a real one.
// Each tick: jobs whose run time is over finish, new jobs arrive, Schedule() runs, its plan is
// applied as events, and admitted jobs start (a simulated executor that starts at once and runs
// each job for its actual duration). What the loop measures is what the daemon would do.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "scheduler/schedule.h"

namespace gpupool {

struct Arrival {
  Time at;
  JobSpec spec;
  Duration actual;  // how long it really runs once started (may differ from the estimate)
};

struct TickReport {
  Time now;
  int arrived = 0, finished = 0, placed = 0, preempted = 0, reconfigured = 0, pending = 0;
  GpuEq allocated;  // GPU-equivalents held after the tick
};

struct TenantTotals {
  int finished = 0, preempted = 0;
  double gpu_seconds = 0, wait_seconds = 0;  // wait: submission (or requeue) to start
  int started = 0;
};

class SimLoop {
 public:
  SimLoop(State state, SchedulerConfig config);

  // Arrivals must be added in time order.
  void Add(Arrival a);
  // Runs ticks of `step` until `until`; calls `on_tick` after each.
  void Run(Time until, Duration step, const std::function<void(const TickReport&)>& on_tick);

  const State& state() const { return state_; }
  const std::map<TenantId, TenantTotals>& totals() const { return totals_; }
  const Plan& last_plan() const { return last_plan_; }

 private:
  TickReport Tick(Time now);

  State state_;
  SchedulerConfig config_;
  std::vector<Arrival> arrivals_;
  size_t next_arrival_ = 0;
  std::map<JobId, Duration> actual_;     // by job: true run time
  std::map<JobId, Time> waiting_since_;  // by job: submitted or requeued
  std::map<TenantId, TenantTotals> totals_;
  Plan last_plan_;
};

// Total GPU-equivalents held by admitted and running jobs.
GpuEq Allocated(const State& state);
// Healthy GPUs on ready nodes, as GPU-equivalents.
GpuEq Capacity(const State& state);

}  // namespace gpupool
