// Events: everything that changes the state after configuration. The daemon journals them
// before acknowledging; the simulator applies the same ones (STYLE.md habit 4).
#pragma once

#include <string>
#include <string_view>
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
  // The attempt this admission starts is the job's previous one + 1, and at least this. 0 for
  // every admission made now; a journal record from before attempt counters reads as its
  // admission time in ms, the attempt that version handed to agents, so that numbers stay
  // increasing per job across the upgrade (store/codec.cc).
  int64_t min_attempt = 0;
};
// A pending job that accepts several flavors (JobSpec::flavors) is to be admitted on this one:
// its shape's flavor becomes it. The scheduler emits it just before the JobAdmitted it is for.
struct JobFlavorChosen {
  JobId id;
  FlavorId flavor;
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
  std::string detail;  // for people: "replica 1 exited with code 3", "cancelled by alice"
};
// Why a job was preempted: another tenant takes back its guarantee, or a job of higher
// priority of the same tenant needs the room.
enum class PreemptKind : uint8_t { kReclaim, kPriority, kQueue };  // kQueue: the tenant's queue policy
std::string_view PreemptKindName(PreemptKind k);
struct JobPreempted {
  JobId id;
  JobId by;  // the preemptor; never preempted back by this job
  Time at;
  PreemptKind kind = PreemptKind::kReclaim;
};
// Why a job that held resources went back to pending without a preemption. Every cause but
// kBudget is infrastructure's: the lost time is not billed (accounting/ledger.h).
enum class RequeueCause : uint8_t {
  kNodeLost,       // its node's agent went silent
  kNodeDrained,    // an operator drained the node
  kNodeUnhealthy,  // a health action drained the node (XID, ECC, a lost GPU or MIG device)
  kStartTimeout,   // admitted, but its node did not start it within the start deadline
  kReleased,       // the on-demand node it ran on was given back
  kBudget,         // the tenant's on-demand budget is spent
};
std::string_view RequeueCauseName(RequeueCause c);
struct JobLost {  // back to pending, with the cause
  JobId id;
  Time at;
  RequeueCause cause = RequeueCause::kNodeLost;
  std::string detail;  // for people: "node n-3 has no agent"
};
struct MigReconfigured {
  NodeId node;
  uint16_t gpu = 0;
  MigLayout layout;
  Time at;
};
// A dynamic GPU (Gpu::dynamic) switches to whole or shared use: only while idle, and only
// between those two modes. The scheduler decides it as it decides a MIG layout (Plan::
// mode_changes); nothing on the node changes, as time-slicing is gpupool's bookkeeping.
struct GpuModeChanged {
  NodeId node;
  uint16_t gpu = 0;
  GpuMode mode = GpuMode::kWhole;
  Time at;
};
struct NodeConditionChanged {
  NodeId node;
  NodeCondition condition = NodeCondition::kReady;
  Time at;
  std::string reason;  // why, for people; becomes Node::condition_reason
};
struct GpuHealthChanged {
  NodeId node;
  uint16_t gpu = 0;
  bool healthy = true;
  Time at;
  std::string reason;  // the fault, for people; becomes Gpu::health_reason
};
// A node leaves the cluster for good (DELETE /v1/nodes/{name}): only a node that is drained
// (condition draining) and idle. It stays in the state under its id, retired, for the jobs
// and the ledger that refer to it; its name is free for a new node.
struct NodeRemoved {
  NodeId node;
  Time at;
};
// Labels a node's agent reports about itself (driver and CUDA versions, GPU product): the keys
// under kAgentLabelPrefix are replaced by `labels`, the others are kept. Each must be
// "key=value" with a key under the prefix.
struct NodeLabelsReported {
  NodeId node;
  std::vector<std::string> labels;
  Time at;
};

// A reservation or a maintenance window (model/reservation.h). Apply checks the record itself:
// id == state.NextReservationId() (a taken or skipped id is refused), a known flavor, a known
// tenant for a reservation and none for maintenance, a whole number of GPUs in
// (0, Reservation::kMaxAmount], start < end. The time of the event is reservation.created.
//
// Apply does NOT check that it fits: the model cannot see the availability calendar
// (policy/calendar depends on the model, not the reverse). The caller books it on the calendar
// built from this same state first (BuildCalendar, policy/calendar/calendars.h) and applies the
// event only if that succeeded. The daemon does both in one turn of its event loop, which owns
// the state, so no other change can come between the check and the event: that is what makes
// creation atomic. Replaying a journal applies the event without the check, as it was checked
// when first made.
struct ReservationCreated {
  Reservation reservation;
};
// Removes a reservation or maintenance window, over or not. kNotFound for an unknown id.
struct ReservationCancelled {
  ReservationId id;
  Time at;
};

using Event = std::variant<JobSubmitted, JobAdmitted, JobStarted, JobFinished, JobPreempted,
                           JobLost, MigReconfigured, NodeConditionChanged, GpuHealthChanged,
                           ReservationCreated, ReservationCancelled, NodeRemoved,
                           NodeLabelsReported, GpuModeChanged, JobFlavorChosen>;

// Validates the event against the state and applies it; on error nothing changes.
Status Apply(State& state, const Event& event);

}  // namespace gpupool
