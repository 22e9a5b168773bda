// A Plan: what one scheduling cycle decided, as values (STYLE.md habit 4). The daemon journals
// it as events and applies them; the simulator applies the same events.
//
// Order of application: preemptions, then reconfigurations and mode changes (a GPU may become
// idle only because its jobs were preempted), then placements. An executor starts a placement that needed
// preemptions once its victims have stopped.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/events.h"

namespace gpupool {

struct ReconfigureDecision {
  NodeId node;
  uint16_t gpu = 0;
  MigLayout from, to;
  friend bool operator==(const ReconfigureDecision&, const ReconfigureDecision&) = default;
};

// A dynamic GPU switches between whole and shared use for a placement of this plan (Gpu::
// dynamic): the GPU is idle when it applies, its jobs (if any) preempted by the same plan.
struct ModeChangeDecision {
  NodeId node;
  uint16_t gpu = 0;
  GpuMode from = GpuMode::kWhole, to = GpuMode::kShared;
  friend bool operator==(const ModeChangeDecision&, const ModeChangeDecision&) = default;
};

struct PreemptDecision {
  JobId victim;
  JobId preemptor;
  PreemptKind kind = PreemptKind::kReclaim;
  friend bool operator==(const PreemptDecision&, const PreemptDecision&) = default;
};

struct PlaceDecision {
  JobId job;
  std::vector<ReplicaPlacement> placement;
  AdmissionKind kind = AdmissionKind::kGuaranteed;
  // Valid when the job is admitted on another of its accepted flavors than its shape's:
  // JobFlavorChosen comes before its JobAdmitted.
  FlavorId flavor;
  friend bool operator==(const PlaceDecision&, const PlaceDecision&) = default;
};

struct PendingNote {
  JobId job;
  uint32_t reason = 0;  // index into Plan::reasons: many waiting jobs share one reason
  // Where it stands in its tenant's queue, for a queue policy other than fifo or a starved job
  // (policy/priority/queue_policy.h DescribePosition); empty otherwise.
  std::string position;
  friend bool operator==(const PendingNote&, const PendingNote&) = default;
};

struct PlanStats {
  int considered = 0;        // pending jobs looked at
  int placement_attempts = 0;
  int preemption_attempts = 0;
  int holds = 0;             // backfill holds taken
  int node_classes = 0;      // distinct node states seen
};

struct Plan {
  std::vector<ReconfigureDecision> reconfigurations;
  std::vector<ModeChangeDecision> mode_changes;
  std::vector<PreemptDecision> preemptions;
  std::vector<PlaceDecision> placements;
  std::vector<PendingNote> pending;  // one per job left waiting, in job-id order
  std::vector<PendingReason> reasons;
  PlanStats stats;

  const PendingReason& ReasonOf(const PendingNote& n) const { return reasons[n.reason]; }
  friend bool operator==(const Plan& a, const Plan& b) {
    return a.reconfigurations == b.reconfigurations && a.mode_changes == b.mode_changes &&
           a.preemptions == b.preemptions &&
           a.placements == b.placements && a.pending == b.pending && a.reasons == b.reasons;
  }
};

// The events that carry out the plan at `now`, in application order. Placements become
// JobAdmitted; starting them is the executor's business (JobStarted).
std::vector<Event> PlanToEvents(const Plan& plan, Time now);

// Stores each waiting job's reason on the job (State::SetPendingReason). Call after applying
// the plan's events; jobs the plan placed are no longer pending and are skipped.
void RecordReasons(State& state, const Plan& plan);

// How a plan is carried out: by the daemon (its executor starts placements later) or by a
// simulator (its executor starts them at once).
struct PlanApplication {
  // Each placement also starts at `now` (JobStarted after all of the plan's events): the
  // simulated executor.
  bool start_placed = false;
  // Waiting jobs get their reasons (RecordReasons); a replay that never shows them skips it.
  bool record_reasons = true;
};

// Where each event of a plan goes: applies it to the state the plan was made from, and may also
// journal and meter it (the daemon: ControlPlane::ApplyAndStage; a simulator: Apply, or
// ApplyMetered with a ledger).
using EventApplier = std::function<Status(const Event&)>;

// The one way a plan is carried out, by the daemon and by every simulator path: PlanToEvents in
// application order through `apply`, then (per `how`) the starts, then the reasons.
// REQUIRES: `plan` was made from `state` as it is now, and `apply` applies to `state`. An event
// that does not apply is a scheduler bug: checked (aborts), never half carried out silently.
void ApplyPlan(const Plan& plan, Time now, State& state, const EventApplier& apply,
               PlanApplication how = {});

// A deterministic, human-readable rendering (one decision per line).
std::string Describe(const State& state, const Plan& plan);

}  // namespace gpupool
