// Conveniences for building states by name: used by tests, benchmarks, the demo and the
// simulator's loaders. Everything goes through State's validating calls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/events.h"
#include "model/state.h"

namespace gpupool {

struct NodeTemplate {
  std::string flavor;          // GPU model name
  int gpus = 8;
  int mig_gpus = 0;            // the first mig_gpus GPUs are in MIG mode
  std::string mig_layout;      // for those; empty = all-balanced
  int shared_gpus = 0;         // the next shared_gpus GPUs are time-sliced
  uint8_t max_clients = 0;     // client cap on shared GPUs
  // Every GPU not in MIG mode switches between whole and shared use when idle (Gpu::dynamic);
  // the shared_gpus start shared, the others whole.
  bool dynamic = false;
  std::string nvlink_domain, block;
  int64_t cpu_milli = 0, memory_mib = 0;
  std::vector<std::string> labels;
  std::string dedicated_to;    // tenant name
};
Result<NodeId> AddNode(State& state, const std::string& name, const NodeTemplate& t);

struct QuotaGpus {  // in whole GPUs, for readability in tests and configs
  int64_t guaranteed = 0;
  std::optional<int64_t> borrow_limit;
  std::optional<int64_t> lend_limit;
};
Result<TenantId> AddTenant(State& state, const std::string& name,
                           const std::map<std::string, QuotaGpus>& quotas,
                           int64_t weight_milli = 1000);

// The three typical classes of DESIGN.md §3: inference (1000, never preempted, guarantee only),
// training (500, preemptible, may borrow), batch (100, preemptible, may borrow).
void AddDefaultPriorityClasses(State& state);

Result<ReplicaShape> WholeGpus(const State& state, const std::string& flavor, int gpus);
Result<ReplicaShape> MigShape(const State& state, const std::string& flavor,
                              const std::string& profile);
Result<ReplicaShape> FractionShape(const State& state, const std::string& flavor, int milli,
                                   uint32_t gpu_memory_mib);

struct JobRequest {
  std::string tenant;
  std::string priority_class = "training";
  ReplicaShape shape;
  uint16_t replicas = 1;
  Duration estimated = Duration::Infinite();
  TopologyConstraint topology;
  std::string name;
  ReservationId reservation;
  std::vector<LabelRequirement> node_selector;
};
// Builds, validates and applies JobSubmitted with the next id.
Result<JobId> Submit(State& state, const JobRequest& req, Time at);

}  // namespace gpupool
