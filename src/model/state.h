// The cluster state: catalogue, tenants, priority classes, nodes, jobs and reservations.
//
// Configuration (tenants, classes, nodes) is added through the Add* calls; everything that
// happens afterwards arrives as an Event and goes through Apply (model/events.h), which
// validates first and changes nothing on error. The scheduler reads a State and never writes
// it.
//
// Thread-safety: none; one owner (the daemon's event loop or the simulator) mutates it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "model/catalogue.h"
#include "model/job.h"
#include "model/node.h"
#include "model/reservation.h"
#include "model/tenant.h"

namespace gpupool {

class State {
 public:
  explicit State(Catalogue catalogue = Catalogue::BuiltIn(),
                 Duration usage_half_life = Duration::Hours(24));
  // Copies rebuild the id index (it points into the job map); moves keep it.
  State(const State& other);
  State& operator=(const State& other);
  State(State&&) = default;
  State& operator=(State&&) = default;

  const Catalogue& catalogue() const { return catalogue_; }
  Duration usage_half_life() const { return usage_half_life_; }

  // --- configuration ---------------------------------------------------------------------
  Result<TenantId> AddTenant(Tenant t);
  Result<PriorityClassId> AddPriorityClass(PriorityClass pc);
  // The node's GPUs must be idle; MIG layouts must be valid for the node's model.
  Result<NodeId> AddNode(Node n);
  // Replaces quotas, weight, limits and sharing flags of an existing tenant.
  Status UpdateTenant(const Tenant& t);

  const std::vector<Tenant>& tenants() const { return tenants_; }
  const Tenant& tenant(TenantId id) const;
  Result<TenantId> FindTenant(std::string_view name) const;
  const std::vector<PriorityClass>& priority_classes() const { return classes_; }
  const PriorityClass& priority_class(PriorityClassId id) const;
  Result<PriorityClassId> FindPriorityClass(std::string_view name) const;
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const;
  // By name, among the nodes not removed (NodeRemoved frees the name); O(1).
  Result<NodeId> FindNode(std::string_view name) const;

  // --- jobs --------------------------------------------------------------------------------
  const std::map<JobId, Job>& jobs() const { return jobs_; }
  const Job* FindJob(JobId id) const;
  // Ids of pending jobs, and of jobs holding resources (admitted or running), in id order.
  const std::set<JobId>& pending() const { return pending_; }
  const std::set<JobId>& active() const { return active_; }
  JobId NextJobId() const { return JobId(next_job_id_); }
  // How many of the tenant's jobs are pending now; O(1).
  uint32_t pending_jobs(TenantId t) const {
    return t.value() < pending_by_tenant_.size() ? pending_by_tenant_[t.value()] : 0;
  }

  // Checks a job spec against the catalogue, the tenant's quotas-independent limits and the
  // priority classes; fills the default duration. Used before JobSubmitted.
  Result<JobSpec> ValidateSpec(JobSpec spec) const;

  // Drops a finished job from memory (retention: the daemon keeps it in its store's history).
  // Its id stays used: FindJob returns nullptr for it and NextJobId does not change. Fails, and
  // changes nothing, for an unknown job or one that has not finished.
  Status Forget(JobId id);

  // Records why a pending job waits. A reason is derived data, recomputed every cycle, so it is
  // set directly rather than journaled as an event. Fails for a job that is not pending.
  Status SetPendingReason(JobId id, PendingReason reason);

  // --- reservations and maintenance windows ------------------------------------------------
  // Created and cancelled through Apply (ReservationCreated, ReservationCancelled). A cancelled
  // one is removed; one whose window is over stays until cancelled. Ids are never reused.
  const std::map<ReservationId, Reservation>& reservations() const { return reservations_; }
  const Reservation* FindReservation(ReservationId id) const;
  ReservationId NextReservationId() const { return ReservationId(next_reservation_id_); }

  // Decayed usage (GPU-seconds) of every tenant at `now`, indexed by tenant id, including the
  // running jobs' contribution so far. One pass over the active jobs.
  std::vector<double> DecayedUsages(Time now) const;

 private:
  friend class StateMutator;   // model/apply.cc
  friend struct SnapshotCodec;  // daemon/snapshot_codec.cc: restores a state from a snapshot

  Catalogue catalogue_;
  Duration usage_half_life_;
  std::vector<Tenant> tenants_;
  std::vector<PriorityClass> classes_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, NodeId> node_by_name_;  // nodes not removed
  std::map<JobId, Job> jobs_;
  // Job id -> its entry in jobs_, for the jobs kept in memory: O(1) lookups, and its size follows
  // the jobs in memory, not every id ever issued (finished jobs leave memory: State::Forget).
  std::unordered_map<uint64_t, Job*> by_id_;
  std::set<JobId> pending_, active_;
  std::vector<uint32_t> pending_by_tenant_;  // tenant id -> jobs in pending_
  void CountPending(TenantId t, int delta) {
    if (pending_by_tenant_.size() <= t.value()) pending_by_tenant_.resize(t.value() + 1, 0);
    pending_by_tenant_[t.value()] = static_cast<uint32_t>(static_cast<int64_t>(pending_by_tenant_[t.value()]) + delta);
  }
  uint64_t next_job_id_ = 1;
  std::map<ReservationId, Reservation> reservations_;
  uint64_t next_reservation_id_ = 1;
};

// Rebuilds every index from the jobs' placements and checks it: no GPU slice held twice,
// shared GPUs within milli, memory and client caps, host resources within capacity, every
// MIG layout valid, admitted and running jobs holding exactly `replicas` placements of their
// shape, shared GPUs never mixing tenants that do not both allow it.
Status CheckInvariants(const State& state);

// Integral over [from, to] of gpus * 2^(-(to - t) / half_life) dt, in GPU-seconds.
double DecayedIntegral(double gpus, Time from, Time to, Duration half_life);
// 2^(-dt / half_life); 0 when half_life is 0 (no memory).
double DecayFactor(Duration dt, Duration half_life);

}  // namespace gpupool
