// JobHistory: what happened to each job and why (DESIGN.md §4: admitted, started, preempted by
// whom for what, requeued because of what, finished), like the events of `kubectl describe`.
//
// It is derived from the journaled events, as the ledger is: the daemon calls Observe after
// each event it applies, live and during replay, so a restart rebuilds the same history and
// nothing extra is journaled. Entries are typed values; View renders them for one caller and
// names another tenant's job only to a caller who may see that tenant.
//
// Bounds: a job keeps its first kKeepFirst entries and its last kMaxEntries - kKeepFirst, with a
// count of the ones dropped between (a job requeued a thousand times does not grow without end).
//
// Thread-safety: none; owned by the daemon's state owner.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/auth.h"
#include "model/events.h"

namespace gpupool {

enum class HistoryType : uint8_t { kSubmitted, kAdmitted, kStarted, kPreempted, kRequeued, kFinished };

struct HistoryEntry {
  Time at;
  HistoryType type = HistoryType::kSubmitted;
  AdmissionKind admitted_as = AdmissionKind::kGuaranteed;  // kAdmitted
  std::vector<NodeId> nodes;                               // kAdmitted: where, each node once
  JobId by;                                                // kPreempted: the preemptor
  TenantId by_tenant;                                      // kPreempted: the preemptor's tenant
  PreemptKind preempt_kind = PreemptKind::kReclaim;        // kPreempted
  RequeueCause cause = RequeueCause::kNodeLost;            // kRequeued
  JobState outcome = JobState::kSucceeded;                 // kFinished
  std::string detail;                                      // kRequeued, kFinished
};

class JobHistory {
 public:
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kKeepFirst = 8;

  // Records what `e` did. REQUIRES: Apply(state, e) has just succeeded on `after`.
  void Observe(const State& after, const Event& e);

  // Drops the job's entries (retention: the daemon archives them with the job).
  void Forget(JobId job) { jobs_.erase(job); }

  // The job's entries, oldest first (empty for an unknown job), and how many were dropped
  // after the first kKeepFirst.
  const std::vector<HistoryEntry>& Of(JobId job) const;
  uint64_t dropped(JobId job) const;

  // The last requeue or preemption of a job that has not been admitted since: what a pending
  // job's reason should lead with. nullopt for a job never sent back.
  std::optional<HistoryEntry> LastSetback(JobId job) const;

  // The entries as the API shows them to `caller` (GET /v1/jobs/{id}: "events"), oldest first:
  // {"at": RFC 3339, "type", "message", and per type "node"s, "by", "reason"}.
  nlohmann::json View(const State& state, const Principal& caller, JobId job) const;

  // One line for people, as View's "message".
  static std::string Message(const State& state, const Principal& caller, const HistoryEntry& e);

 private:
  friend struct SnapshotCodec;  // daemon/snapshot_codec.cc: restores a history from a snapshot

  struct Log {
    std::vector<HistoryEntry> entries;
    uint64_t dropped = 0;
  };
  void Add(JobId job, HistoryEntry e);

  std::map<JobId, Log> jobs_;
};

std::string_view HistoryTypeName(HistoryType t, JobState outcome);

}  // namespace gpupool
