// Scenario tables for the scheduler: a cluster, tenants, running jobs, pending jobs, one cycle,
// and the expected decisions, written with designated initializers and run by RunScenario.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool::testing {

// Shapes as text: "4xh100-80gb" (whole GPUs), "h100-80gb/3g.40gb" (MIG profile),
// "h100-80gb/250m/10240" (250 milli-GPUs with a 10240 MiB memory bound); any of them with
// "+8cpu" asks for 8 CPUs per replica.
Result<ReplicaShape> ParseShape(const State& state, const std::string& text);

struct TenantLine {
  std::string name;
  std::map<std::string, QuotaGpus> quotas;
  int64_t weight_milli = 1000;
  bool cotenancy = false;
  std::vector<std::string> required_labels;
};

// A reservation (tenant set) or a maintenance window (tenant empty) of whole GPUs over
// [start_s, end_s). RunScenario books it on the state's calendar before applying it, as the
// daemon will, so a table cannot hold a double booking.
struct ReservationLine {
  std::string tenant;
  std::string flavor = "h100-80gb";
  int gpus = 0;
  int start_s = 0;
  int end_s = 0;
};

struct JobLine {
  std::string name;
  std::string tenant;
  std::string shape;
  std::string priority = "training";
  int replicas = 1;
  int duration_s = 0;  // 0: no estimate
  TopologyLevel level = TopologyLevel::kNone;
  bool required = true;
  int started_s = 0;   // running jobs: when they started
};

// `n` running 1-GPU H100 batch jobs of `tenant`, named TENANT0..TENANT(n-1), the i-th started
// at i * every_s: the usual borrower in reclaim tables (the newest is the first victim).
std::vector<JobLine> RunningBatchJobs(const std::string& tenant, int n, int every_s);

struct Scenario {
  std::vector<std::pair<std::string, NodeTemplate>> nodes;
  std::vector<TenantLine> tenants;
  std::vector<ReservationLine> reservations;  // made before the setup cycle at t=0
  std::vector<JobLine> running;  // placed by a setup cycle at t=0 and started at started_s
  std::vector<JobLine> pending;  // submitted at t=1
  int now_s = 3600;
  SchedulerConfig config;

  std::vector<std::string> placed;  // exactly the pending jobs placed, any order
  std::map<std::string, std::vector<std::string>> placed_on;  // job -> node per replica
  std::vector<std::string> preempted;  // exactly these running jobs, any order
  std::map<std::string, ReasonCode> waiting;  // these jobs wait for these reasons
  int reconfigurations = -1;  // -1: not checked
};

// Builds the scenario's state (the setup cycle must place every running job), runs one cycle
// at now_s, checks the expectations with gtest, applies the plan and checks invariants.
// Returns the plan for extra assertions.
Plan RunScenario(const Scenario& sc, State* state_out = nullptr,
                 std::map<std::string, JobId>* ids_out = nullptr);

}  // namespace gpupool::testing
