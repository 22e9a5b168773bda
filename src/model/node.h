// Nodes and their GPUs.
//
// Each GPU is used in one mode: whole (one job owns it), MIG (hardware partitions; each GPU
// instance holds at most one job) or shared (time-sliced fractions bounded by milli-GPUs,
// GPU memory and a client count). A dynamic GPU switches between whole and shared use whenever
// it is idle: which of the two it is in is the scheduler's decision (GpuModeChanged), as a MIG
// layout is. The occupant fields are an index over the jobs' placements,
// kept consistent by Apply (model/apply.cc) and checked by CheckInvariants.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "model/mig.h"

namespace gpupool {

enum class GpuMode : uint8_t { kWhole, kMig, kShared };
std::string_view GpuModeName(GpuMode m);

struct SharedOccupant {
  JobId job;
  TenantId tenant;
  uint16_t milli = 0;
  uint32_t memory_mib = 0;
};

struct Gpu {
  GpuMode mode = GpuMode::kWhole;
  bool healthy = true;
  JobId occupant;                                         // kWhole
  MigLayout layout;                                       // kMig
  std::array<JobId, MigLayout::kMaxInstances> instance_occupant{};  // kMig, by layout index
  uint8_t max_clients = 0;                                // kShared; 0 = no client cap
  // Switches between kWhole and kShared when idle (never kMig). On a node, every GPU not in MIG
  // mode is dynamic or none is, and the dynamic ones have one max_clients (State::AddNode).
  bool dynamic = false;
  std::vector<SharedOccupant> shared;                     // kShared
  std::string health_reason;  // why it is unhealthy (the fault), empty when healthy

  // True when no job holds any part of this GPU.
  bool idle() const;
  // Appends the jobs that hold a part of this GPU (from the occupant index).
  void AppendOccupants(std::vector<JobId>& out) const;
};

enum class NodeCondition : uint8_t {
  kReady,        // schedulable
  kCordoned,     // no new work; running work stays
  kDraining,     // no new work; running work is being moved off
  kMaintenance,  // out of service by plan
  kUnhealthy,    // failed a health check
  kUnreachable,  // lost heartbeats
  kRetired,      // gone for good (an on-demand node given back): terminal, only when idle
  kNotReady,     // no node agent has registered for it (yet): nothing can start there
};
std::string_view NodeConditionName(NodeCondition c);

enum class TopologyLevel : uint8_t { kNone, kNode, kNvlinkDomain, kBlock };
std::string_view TopologyLevelName(TopologyLevel l);

// The label of a node bought on demand for a burst (DESIGN.md §6); such a node is also
// dedicated to the tenant it was bought for.
inline constexpr std::string_view kOnDemandLabel = "gpupool.io/on-demand=true";
// Labels under this prefix are the node agent's to report (NodeLabelsReported): driver and
// CUDA versions and the GPU product.
inline constexpr std::string_view kAgentLabelPrefix = "node.gpupool.io/";
// The label of a node that an executor runs instead of a node agent (Slurm, ...): its value is
// the executor's name (docs/design/executors.md).
inline constexpr std::string_view kExecutorLabel = "gpupool.io/executor";

struct Node {
  NodeId id;
  std::string name;
  FlavorId flavor;  // every GPU of a node is of one model
  std::vector<Gpu> gpus;
  // Topology: an NVLink domain may span nodes (GB200 NVL72); empty means the node alone.
  std::string nvlink_domain;
  std::string block;
  NodeCondition condition = NodeCondition::kReady;
  std::string condition_reason;  // why it is in that condition, for people; may be empty
  bool removed = false;          // deleted (NodeRemoved): retired, and its name is free
  TenantId dedicated_to;            // valid: a node pool bound to that tenant
  std::vector<std::string> labels;  // sorted "key=value"
  // Host resources. A capacity of 0 means "not tracked": any demand fits.
  int64_t cpu_milli = 0, memory_mib = 0;
  int64_t cpu_used = 0, memory_used = 0;
  // Jobs here that hold no GPU, only CPU and memory (gpus: 0), one entry per replica: the
  // occupant index of what the GPUs' indexes cannot see.
  std::vector<JobId> host_only;

  bool schedulable() const { return condition == NodeCondition::kReady; }
  // True when no job holds any part of the node, its GPUs or its host.
  bool idle() const;
  bool on_demand() const;
  // The jobs holding a part of this node, ascending, each once: read from the GPUs' occupant
  // index and host_only, so O(GPUs), not a scan of every active job.
  std::vector<JobId> Jobs() const;
  // The domain key at a level: the node name, its NVLink domain or its block.
  std::string_view DomainAt(TopologyLevel level) const;
};

}  // namespace gpupool
