// JournaledState: everything the daemon's journal determines, and nothing else. The model's
// State, the ledger, the job history, prices, tokens, tombstones, idempotency keys, the burst
// fleet and settings changes, the agents' GPUs, replicas' exits and the finished jobs still in
// memory are all a function of the journal's records (and the snapshot that stands for the
// oldest of them); ControlPlane keeps, beside one of these, only how this process runs and what
// it has heard since it started (agents' liveness, log tails, back-offs, the last plan).
//
// It changes only through Commit: the change is checked against this state, applied (each
// applier checks everything before it mutates anything, as model/apply.cc does for events, so a
// refused change leaves the state as it was) and its record staged for the owner's next flush.
// A start decodes each record back into the same Change and applies it the same way. After a
// failed flush the owner drops this object and loads a fresh one from the store (Load): nothing
// is ever reset by hand, so no member can be forgotten.
//
// Three upkeeps change it outside Commit: ExpireIdempotency (keys older than a day, a function
// of time that a replay reproduces), and what no record holds: the pending jobs' reasons
// (reasons_upkeep) and the burst fleet's idle clocks and dead requests (fleet_upkeep).
//
// Copyable: a copy taken right after a flush is what a snapshot holds (ForSnapshot), encoded
// on any thread (EncodeSnapshot, journaled_state_snapshot.cc).
//
// Thread-safety: none; its owner's thread.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "accounting/ledger.h"
#include "accounting/report.h"
#include "api/auth.h"
#include "burst/settings.h"
#include "daemon/change.h"
#include "daemon/job_history.h"
#include "model/state.h"
#include "policy/burst/burst.h"
#include "store/journal.h"

namespace gpupool {

// The job whose attempt stops holding resources with `e` (JobFinished, JobLost, JobPreempted),
// or an invalid id.
JobId AttemptEnded(const Event& e);

class JournaledState {
 public:
  // The snapshot body's format: a start refuses a snapshot of another, saying so, rather than
  // misread it. Bump it with every change to the body's shape.
  static constexpr int kSnapshotFormat = 1;
  // Idempotency keys are remembered this long after their submit (as payment APIs keep theirs
  // for a day); a retry after that makes a new job.
  static constexpr Duration kIdempotencyWindow = Duration::Hours(24);

  JournaledState() = default;
  // The journal's newest snapshot and the records after it, applied onto an empty state.
  // Errors: a snapshot or record that cannot be read, decoded or applied (saying which).
  static Result<std::unique_ptr<JournaledState>> Load(Journal& journal);

  // A follower's catch-up: `records` (the journal's next ones, in order, as ReadAfter returns
  // them) applied as a start would. An error leaves this state part-way: load a fresh one.
  Status Follow(const std::vector<Record>& records);
  // The last journal record this state holds (a follower reads after it); staged ones excluded.
  int64_t applied_seq() const { return applied_seq_; }

  // Checks `c` against this state, applies it and stages its record; an error changes nothing.
  Status Commit(const Change& c);
  // The records committed since the last call, for the owner to append.
  std::vector<Record> TakeStaged() { return std::exchange(staged_, {}); }
  size_t staged() const { return staged_.size(); }
  // Nothing was ever journaled (a new cluster, to bootstrap).
  bool empty() const { return empty_; }

  const State& state() const { return state_; }
  const Ledger& ledger() const { return ledger_; }
  const JobHistory& history() const { return history_; }
  // Price lists over time, oldest first.
  const PriceHistory& prices() const { return prices_; }
  const TokenStore& tokens() const { return tokens_; }
  // Service accounts by tenant and name (those of deleted tenants are gone with them).
  const std::map<std::pair<TenantId, std::string>, ServiceAccount>& service_accounts() const { return accounts_; }
  // OIDC mappings made through the API, by id.
  const std::map<std::string, OidcMappingPut>& oidc_mappings() const { return oidc_mappings_; }
  // Deleted tenants (tombstones: ids are never reused).
  const std::set<TenantId>& deleted() const { return deleted_; }
  // Every on-demand node requested that became a node, in request order; and how many were
  // ever requested (a restarted simulated provider numbers its requests after these).
  const std::vector<BurstNode>& fleet() const { return fleet_; }
  uint64_t burst_requests_seen() const { return burst_requests_seen_; }
  // Offers and tenants changed through the API, oldest first.
  const std::vector<std::pair<Time, BurstSettings>>& burst_changes() const { return burst_changes_; }
  // Registered agents: their GPUs' and MIG slices' UUIDs and last reported MIG layouts.
  const std::map<NodeId, AgentRecorded>& agents() const { return agents_; }
  const AgentRecorded* agent(NodeId node) const;
  // Replicas that exited 0, of attempts still holding GPUs.
  const std::map<JobId, std::set<int>>& exits() const { return exits_; }
  bool Exited(JobId job, int replica) const;

  // The job a submit with `key` (token id + key) made, if that submit is younger than a day.
  std::optional<JobId> IdempotentJob(const std::string& key, Time now) const;
  size_t idempotency_keys() const { return idempotency_.size(); }
  void ExpireIdempotency(Time now);
  // The burst tick's upkeep of the fleet, which is not journaled: on-demand nodes' idle clocks
  // (TrackBurstUse) and requests in flight that died (a start drops every request in flight,
  // and counts idleness from the join, or from the snapshot's clocks).
  std::vector<BurstNode>& fleet_upkeep() { return fleet_; }
  // The scheduler's upkeep of the state, which is not journaled either: pending jobs' reasons
  // (ApplyPlan's RecordReasons, the burst tick's errors). A snapshot resets them (ForSnapshot).
  State& reasons_upkeep() { return state_; }

  // Retention: the finished jobs to archive now, oldest first, at most `batch`: those finished
  // at least `retention` ago, and the oldest beyond `max_in_memory`.
  std::vector<JobId> DueForArchive(Time now, Duration retention, size_t max_in_memory, size_t batch) const;
  // The closed usage intervals of jobs archived since the last call leave the ledger (one pass
  // over it, so callers archive a batch first).
  void ForgetArchivedUsage();
  // How many finished jobs were archived by the records applied to this state.
  int64_t archived() const { return archived_; }

  // --- snapshots (journaled_state_snapshot.cc; docs/design/daemon.md, "Snapshots") ---
  // A copy for a snapshot. REQUIRES: nothing staged (right after a flush), so that the copy is
  // the state after the journal's last record.
  JournaledState ForSnapshot() const;
  // Thread-safe: reads only this object. `seq`: the journal record the copy stands for.
  Snapshot EncodeSnapshot(int64_t seq) const;
  // The journal record that the snapshot this state was loaded from stands for (0: none).
  int64_t snapshot_seq() const { return snapshot_seq_; }

 private:
  Status ApplyRecord(const Record& r);
  Status Replay(const std::vector<Record>& records);
  Status LoadSnapshot(const Snapshot& snapshot);
  Status ApplyChange(const Change& c);
  // ApplyMetered(state, ledger, e) and what follows from the event here.
  Status ApplyEvent(const Event& e);
  Status ApplyOne(const EventChange& c);
  Status ApplyOne(const TenantPut& c);
  Status ApplyOne(const TenantDeleted& c);
  Status ApplyOne(const PriorityClassAdded& c);
  Status ApplyOne(const NodeAdded& c);
  Status ApplyOne(const TokenIssued& c);
  Status ApplyOne(const TokenRevoked& c);
  Status ApplyOne(const PricesSet& c);
  Status ApplyOne(const BurstRequested& c);
  Status ApplyOne(const BurstNodeJoined& c);
  Status ApplyOne(const BurstSettingsChanged& c);
  Status ApplyOne(const AgentRecorded& c);
  Status ApplyOne(const ReplicaExited& c);
  Status ApplyOne(const AuditEntry& c);
  Status ApplyOne(const JobArchived& c);
  Status ApplyOne(const ServiceAccountPut& c);
  Status ApplyOne(const OidcMappingPut& c);
  // A "prices" record: a list in force from `from` on (one with the same start is replaced,
  // later ones stay scheduled), or, without `from`, for all time.
  void ApplyPrices(PriceList list, std::optional<Time> from);
  void RememberIdempotency(const std::string& key, JobId job, Time at);
  // The finish order of the jobs in memory, from a snapshot's jobs and their histories.
  void RebuildFinished();

  struct IdempotentSubmit {
    JobId job;
    Time at;  // the job's submit time (the job may have left memory since)
  };
  static bool IdempotencyLive(const IdempotentSubmit& s, Time now) { return now < s.at + kIdempotencyWindow; }

  State state_;
  Ledger ledger_;
  JobHistory history_;
  PriceHistory prices_;
  TokenStore tokens_;
  std::map<std::pair<TenantId, std::string>, ServiceAccount> accounts_;
  std::map<std::string, OidcMappingPut> oidc_mappings_;
  std::set<TenantId> deleted_;
  // Idempotency keys (token id + key -> job), in submit order in idempotency_order_.
  std::map<std::string, IdempotentSubmit> idempotency_;
  std::deque<std::pair<Time, std::string>> idempotency_order_;
  std::vector<BurstNode> fleet_;
  uint64_t burst_requests_seen_ = 0;
  std::vector<std::pair<Time, BurstSettings>> burst_changes_;
  std::map<NodeId, AgentRecorded> agents_;
  std::map<JobId, std::set<int>> exits_;
  std::deque<std::pair<Time, JobId>> finished_;  // finished jobs in memory, in finish order
  std::set<JobId> forget_usage_;                 // archived; their closed intervals still in the ledger
  int64_t archived_ = 0;
  int64_t snapshot_seq_ = 0;
  int64_t applied_seq_ = 0;  // as loaded or followed; a leader's appends do not move it
  std::vector<Record> staged_;
  bool empty_ = true;
};

}  // namespace gpupool
