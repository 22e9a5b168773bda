// Events: everything that changes the state after configuration. The daemon journals them
// before acknowledging; the simulator applies the same ones (STYLE.md habit 4).
#pragma once

#include <variant>
#include <vector>

#include "model/state.h"

namespace gpupool {

struct JobSubmitted {
  JobId id;  // must equal state.NextJobId()
  JobSpec spec;
  Time at;
};
struct JobAdmitted {
  JobId id;
  std::vector<ReplicaPlacement> placement;
  AdmissionKind kind = AdmissionKind::kGuaranteed;
  Time at;
};
struct JobStarted {
  JobId id;
  Time at;
};
struct JobFinished {
  JobId id;
  JobState outcome = JobState::kSucceeded;  // kSucceeded, kFailed or kCancelled
  Time at;
};
struct JobPreempted {
  JobId id;
  JobId by;  // the preemptor; never preempted back by this job
  Time at;
};
struct JobLost {  // node failure: back to pending, lost time is infrastructure's
  JobId id;
  Time at;
};
struct MigReconfigured {
  NodeId node;
  uint16_t gpu = 0;
  MigLayout layout;
  Time at;
};
struct NodeConditionChanged {
  NodeId node;
  NodeCondition condition = NodeCondition::kReady;
  Time at;
};
struct GpuHealthChanged {
  NodeId node;
  uint16_t gpu = 0;
  bool healthy = true;
  Time at;
};

using Event = std::variant<JobSubmitted, JobAdmitted, JobStarted, JobFinished, JobPreempted,
                           JobLost, MigReconfigured, NodeConditionChanged, GpuHealthChanged>;

// Validates the event against the state and applies it; on error nothing changes.
Status Apply(State& state, const Event& event);

}  // namespace gpupool
