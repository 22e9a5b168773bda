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
                           ReservationCreated, ReservationCancelled>;

// Validates the event against the state and applies it; on error nothing changes.
Status Apply(State& state, const Event& event);

}  // namespace gpupool
