// The scheduling cycle's working object (Schedule(), scheduler/schedule.h), shared by the files
// that implement it, by responsibility:
//   schedule.cc          Schedule(), the loop over tenant turns (Run, TurnOf, Refresh)
//   schedule_job.cc      one job: flavors, quota, placement, preemption, holds (Consider, Commit)
//   schedule_reasons.cc  why a job waits, and the failure cache (Wait, CapacityReason, KeyOf)
// Internal to the scheduler: nothing outside these files includes it.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "policy/priority/queue_policy.h"
#include "scheduler/backfill.h"
#include "scheduler/placer.h"
#include "scheduler/schedule.h"
#include "scheduler/session.h"

namespace gpupool::cycle_internal {

// What identifies "the same request" within one cycle: if one such job found no room (and no
// victims), the next one will not either until something is freed.
struct FailKey {
  uint32_t tenant;
  uint16_t flavor, priority_class;
  uint8_t kind, gpus, mig_profile, topology;  // topology: level * 2 + required
  uint16_t milli, replicas;
  uint32_t gpu_memory_mib;
  int64_t cpu_milli, memory_mib;
  int64_t end_ms;  // only while holds exist: a shorter job may fit where a longer one did not
  uint32_t selector;  // 0: none; else 1 + the cycle's index of Describe(node_selector)
  friend bool operator==(const FailKey&, const FailKey&) = default;
};
struct FailKeyHash {
  size_t operator()(const FailKey& k) const {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
    mix(k.tenant);
    mix((uint64_t{k.flavor} << 16) | k.priority_class);
    mix((uint64_t{k.kind} << 24) | (uint64_t{k.gpus} << 16) | (uint64_t{k.mig_profile} << 8) |
        k.topology);
    mix((uint64_t{k.milli} << 48) | (uint64_t{k.replicas} << 32) | k.gpu_memory_mib);
    mix(static_cast<uint64_t>(k.cpu_milli));
    mix(static_cast<uint64_t>(k.memory_mib));
    mix(static_cast<uint64_t>(k.end_ms));
    mix(k.selector);
    return static_cast<size_t>(h);
  }
};

class Cycle {
 public:
  Cycle(const State& state, const SchedulerConfig& cfg, const PlacementPolicy& policy, Time now,
        const NodeDeadlines& deadlines)
      : state_(state),
        cfg_(cfg),
        now_(now),
        own_(std::in_place, state, policy, now, deadlines),
        session_(*own_),
        placer_(session_, cfg.mig_reconfigure, cfg.key_search),
        backfill_(session_, placer_) {}
  // Over a session the caller keeps (KeptScheduler): built on `state` at `now`, or advanced to it.
  Cycle(const State& state, const SchedulerConfig& cfg, Session& session, Time now)
      : state_(state),
        cfg_(cfg),
        now_(now),
        session_(session),
        placer_(session_, cfg.mig_reconfigure, cfg.key_search),
        backfill_(session_, placer_) {}

  Plan Run();

 private:
  struct TenantTurn {
    bool borrowing;
    double share;
    uint32_t tenant;
    uint32_t version;  // stale when the tenant's share changed after this entry was pushed
    bool operator>(const TenantTurn& o) const {
      return std::tie(borrowing, share, tenant) > std::tie(o.borrowing, o.share, o.tenant);
    }
  };

  TenantTurn TurnOf(uint32_t tenant);
  // Re-queues a tenant whose share changed (its work was preempted) under its new key.
  void Refresh(uint32_t tenant);
  void Consider(const Job& job);
  // Admits and places `job` (the job or its copy on another flavor, AsFlavor) if it can; else,
  // unless probing_, records why it waits. True when admitted.
  bool ConsiderAs(const Job& job);
  // The job as if its shape were of flavor f: itself, or a copy that lives for the cycle.
  const Job& AsFlavor(const Job& job, FlavorId f);
  // The job's flavors, best placement first (FlavorChoice::kBest): each placed as if alone
  // on the session and rolled back; flavors with no room keep their order, after the others.
  std::vector<FlavorId> ByFit(const Job& job);
  // A job naming a reservation runs only while it is in force and within its amount; otherwise
  // it waits (reason kReservation) and this returns false.
  bool ReservationAdmits(const Job& job, GpuEq eq);
  bool Commit(const Job& job, Placer::Outcome& o, AdmissionKind kind);
  FailKey KeyOf(const Job& job, Time end) const;
  uint32_t SelectorIndex(const Job& job) const;
  PendingReason CapacityReason(const Job& job, const Placer::Outcome& o, Time end);
  uint32_t AddReason(PendingReason reason);
  // "; 3 are not_ready (no node agent has registered for it), 1 is cordoned": the nodes of the
  // flavor the tenant could use but for their condition, counted once per tenant and flavor.
  const std::string& UnschedulableNote(TenantId t, FlavorId f);
  void Wait(const Job& job, PendingReason reason);
  void WaitWith(const Job& job, uint32_t reason);

  const State& state_;
  const SchedulerConfig& cfg_;
  Time now_;
  std::optional<Session> own_;  // the cycle's own session, unless the caller keeps one
  Session& session_;
  Placer placer_;
  Backfill backfill_;
  Plan plan_;
  std::vector<std::vector<const Job*>> queues_;
  std::vector<size_t> next_;
  std::vector<double> history_;
  std::vector<uint32_t> version_;
  std::vector<double> share_;      // fair-share key per tenant, valid unless dirty
  std::vector<bool> share_dirty_;  // usage changed since share_ was computed
  std::priority_queue<TenantTurn, std::vector<TenantTurn>, std::greater<TenantTurn>> turns_;
  std::unordered_map<FailKey, uint32_t, FailKeyHash> failed_;  // -> reason index
  std::map<std::tuple<uint32_t, uint16_t, int64_t, int, int64_t, int64_t, int64_t>, uint32_t>
      quota_reasons_;
  std::vector<JobId> released_;
  std::map<std::pair<uint32_t, uint16_t>, std::string> unschedulable_notes_;
  mutable std::map<std::string, uint32_t> selectors_;  // node selectors seen, for FailKey
  // GPU-equivalents held by the jobs naming each reservation; built on first use.
  std::optional<std::map<ReservationId, GpuEq>> reserved_used_;
  int preempt_budget_ = 0;
  int queue_budget_ = 0;      // queue preemptions left this cycle (QueuePolicyConfig)
  std::vector<QueueOrder> orders_;              // each tenant's queue policy
  std::vector<std::vector<uint32_t>> ahead_;    // per queue entry: jobs before it in its class
  uint32_t current_ahead_ = 0;                  // of the job being considered
  std::deque<Job> variants_;  // AsFlavor's copies: the backfill timeline points at them
  bool probing_ = false;      // trying a flavor of several: no preemption, hold or reason
  FlavorId home_flavor_;      // the flavor of the job being considered, in the state
  std::string flavor_note_;   // appended to the reason of a job none of whose flavors fits
  int holds_left_ = 0;
  int hold_attempts_left_ = 0;  // a failed attempt also costs a timeline walk
};

}  // namespace gpupool::cycle_internal
