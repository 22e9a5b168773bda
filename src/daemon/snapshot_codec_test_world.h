// Support for snapshot_codec_test.cc: a daemon's journaled state fed as the daemon feeds it,
// the checks that a restored copy equals its original, and a random workload that drives both
// through the real scheduler (as tests/property_test.cc does). Included by that test only.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "daemon/snapshot_codec.h"
#include "model/builder.h"
#include "policy/calendar/calendars.h"
#include "scheduler/plan.h"
#include "scheduler/schedule.h"
#include "store/codec.h"

namespace gpupool::snapshot_test {

// What a snapshot holds, fed as the daemon feeds it: the ledger is prepared on the state before
// the event, the history observes the state after it.
struct Daemon {
  State state{Catalogue::BuiltIn(), Duration::Hours(6)};
  Ledger ledger;
  JobHistory history;

  void Feed(const Event& e) {
    Result<LedgerChange> c = ledger.Prepare(state, e);
    ASSERT_TRUE(c.ok()) << c.error().message;
    Status s = Apply(state, e);
    ASSERT_TRUE(s.ok()) << s.error().message << " in " << EventToJson(e).dump();
    ledger.Commit(std::move(c).value());
    history.Observe(state, e);
  }
};

inline Json Encode(const Daemon& d) {
  return {{"state", SnapshotCodec::EncodeState(d.state)},
          {"ledger", SnapshotCodec::EncodeLedger(d.ledger)},
          {"history", SnapshotCodec::EncodeHistory(d.history)}};
}

// The first differences, for a failure message (the documents themselves are large).
inline std::string Diff(const Json& a, const Json& b) {
  return Json::diff(a, b).dump().substr(0, 3000);
}

// Through text, as a snapshot file is.
inline void Restore(const Json& snap, Daemon& out) {
  const Json j = Json::parse(snap.dump());
  Result<State> s = SnapshotCodec::DecodeState(j.at("state"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  Result<Ledger> l = SnapshotCodec::DecodeLedger(j.at("ledger"));
  ASSERT_TRUE(l.ok()) << l.error().message;
  Result<JobHistory> h = SnapshotCodec::DecodeHistory(j.at("history"));
  ASSERT_TRUE(h.ok()) << h.error().message;
  out.state = std::move(s).value();
  out.ledger = std::move(l).value();
  out.history = std::move(h).value();
  ASSERT_TRUE(Encode(out) == snap) << Diff(snap, Encode(out));
}

// Everything a later event or cycle could see, beyond the encoding: the rebuilt indexes.
inline void ExpectSame(const Daemon& a, const Daemon& b, Time now) {
  ASSERT_TRUE(Encode(a) == Encode(b)) << Diff(Encode(a), Encode(b));
  Status inv = CheckInvariants(b.state);
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  for (const Tenant& t : a.state.tenants()) {
    ASSERT_EQ(a.state.pending_jobs(t.id), b.state.pending_jobs(t.id)) << t.name;
  }
  ASSERT_EQ(a.state.DecayedUsages(now), b.state.DecayedUsages(now));
  for (uint64_t id = 0; id <= a.state.NextJobId().value(); ++id) {
    ASSERT_EQ(a.state.FindJob(JobId(id)) == nullptr, b.state.FindJob(JobId(id)) == nullptr);
  }
  for (const Node& n : a.state.nodes()) {
    const Node& m = b.state.node(n.id);
    ASSERT_EQ(n.cpu_used, m.cpu_used);
    ASSERT_EQ(n.memory_used, m.memory_used);
    ASSERT_EQ(a.state.FindNode(n.name).ok(), b.state.FindNode(n.name).ok());
    if (a.state.FindNode(n.name).ok()) {
      ASSERT_EQ(*a.state.FindNode(n.name), *b.state.FindNode(n.name));
    }
    for (size_t g = 0; g < n.gpus.size(); ++g) {
      ASSERT_EQ(n.gpus[g].occupant, m.gpus[g].occupant);
      ASSERT_EQ(n.gpus[g].instance_occupant, m.gpus[g].instance_occupant);
      std::vector<JobId> x, y;
      n.gpus[g].AppendOccupants(x);
      m.gpus[g].AppendOccupants(y);
      ASSERT_EQ(x, y) << n.name << " GPU " << g;  // the shared clients in order
    }
  }
}

// Random clusters and workloads, made from the state of the first daemon and fed to all.
class World {
 public:
  explicit World(uint64_t seed) : rng_(seed) {
    cfg_.preemption.min_runtime = Duration::Minutes(2);
    cfg_.fair_share.usage_blend = 0.5;  // decayed usage steers the order
  }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  void Build(Daemon& d) {
    State& s = d.state;
    AddDefaultPriorityClasses(s);
    for (int t = 0, n = Uniform(2, 4); t < n; ++t) {
      ASSERT_TRUE(AddTenant(s, "t" + std::to_string(t),
                            {{"h100-80gb", {Uniform(0, 8), 8}}, {"a100-40gb", {Uniform(0, 4)}}})
                      .ok());
      Tenant ten = s.tenant(TenantId(t));
      ten.allow_gpu_cotenancy = Chance(0.5);
      ASSERT_TRUE(s.UpdateTenant(ten).ok());
    }
    for (int n = 0, nodes = Uniform(4, 9); n < nodes; ++n)
      ASSERT_TRUE(s.AddNode(RandomNode(s, "n" + std::to_string(n))).ok());
  }

  Node RandomNode(const State& s, const std::string& name) {
    Node node;
    node.name = name;
    node.flavor = *s.catalogue().Find(Chance(0.6) ? "h100-80gb" : "a100-40gb");
    node.labels = {Chance(0.5) ? "zone=a" : "zone=b"};
    if (Chance(0.15))
      node.dedicated_to =
          TenantId(static_cast<uint32_t>(Uniform(0, static_cast<int>(s.tenants().size()) - 1)));
    if (Chance(0.3)) node.cpu_milli = 64000;
    const bool dynamic = Chance(0.25);  // GPUs not in MIG mode switch between whole and shared
    for (int g = 0, gpus = Uniform(2, 8); g < gpus; ++g) {
      Gpu gpu;
      if (const int mode = Uniform(0, 4); mode == 0) {
        gpu.mode = GpuMode::kMig;
        gpu.layout = AllBalancedLayout(s.catalogue().model(node.flavor));
      } else if (mode == 1) {
        gpu.mode = GpuMode::kShared;
        gpu.max_clients = static_cast<uint8_t>(dynamic ? 2 : Uniform(0, 3));
      }
      if (dynamic && gpu.mode != GpuMode::kMig) {
        gpu.dynamic = true;
        gpu.max_clients = 2;
      }
      node.gpus.push_back(gpu);
    }
    return node;
  }

  // One step at `now`, fed to `a` and (when not null) `b`.
  void Step(Daemon& a, Daemon* b, Time now) {
    a_ = &a;
    b_ = b;
    Settle(now);
    Submit(now);
    Disturb(now);
    Reserve(now);
    Cycle(now);
  }

 private:
  const State& s() const { return a_->state; }
  void Feed(const Event& e) {
    a_->Feed(e);
    if (b_ != nullptr) b_->Feed(e);
  }
  JobId RandomJob() {
    return JobId(static_cast<uint64_t>(Uniform(1, static_cast<int>(s().NextJobId().value()) - 1)));
  }

  // Finishes, fails, cancels, loses and preempts some work.
  void Settle(Time now) {
    std::vector<Event> events;
    for (JobId id : s().active()) {
      const Job& j = *s().FindJob(id);
      if (j.state == JobState::kRunning && (j.ExpectedEnd() <= now || Chance(0.05))) {
        events.push_back(JobFinished{id, Chance(0.9) ? JobState::kSucceeded : JobState::kFailed,
                                     now, Chance(0.3) ? "replica 0 exited with code 3" : ""});
      } else if (j.state == JobState::kAdmitted && Chance(0.1)) {
        events.push_back(JobLost{id, now, RequeueCause::kStartTimeout, "did not start"});
      } else if (Chance(0.02)) {
        events.push_back(JobLost{id, now, static_cast<RequeueCause>(Uniform(0, 5)),
                                 Chance(0.5) ? "node has no agent" : ""});
      } else if (const JobId by = RandomJob(); by != id && Chance(0.02)) {
        events.push_back(JobPreempted{
            id, by, now, Chance(0.5) ? PreemptKind::kReclaim : PreemptKind::kPriority});
      } else if (Chance(0.01)) {
        events.push_back(JobFinished{id, JobState::kCancelled, now, "by alice"});
      }
    }
    if (!s().pending().empty() && Chance(0.05))
      events.push_back(JobFinished{*s().pending().rbegin(), JobState::kCancelled, now});
    for (const Event& e : events) Feed(e);
  }

  ReplicaShape RandomShape(FlavorId f) {
    const GpuModel& m = s().catalogue().model(f);
    ReplicaShape sh;
    sh.flavor = f;
    switch (Uniform(0, 2)) {
      case 0:
        sh.gpus = static_cast<uint8_t>(std::array{1, 1, 2, 4}[Uniform(0, 3)]);
        break;
      case 1:
        sh.kind = ShapeKind::kMigProfile;
        sh.mig_profile = static_cast<uint8_t>(Uniform(0, static_cast<int>(m.profiles.size()) - 1));
        break;
      default:
        sh.kind = ShapeKind::kGpuFraction;
        sh.milli = static_cast<uint16_t>(Uniform(1, 10) * 100);
        sh.gpu_memory_mib = static_cast<uint32_t>(Uniform(1, 4) * 4096);
    }
    if (Chance(0.2)) sh.cpu_milli = Uniform(1, 32) * 1000;
    if (sh.kind == ShapeKind::kWholeGpus && Chance(0.1)) {  // no GPU: CPU only
      sh.gpus = 0;
      sh.cpu_milli = Uniform(1, 32) * 1000;
    }
    return sh;
  }

  void Submit(Time now) {
    for (int i = 0, k = Uniform(0, 4); i < k; ++i) {
      JobSpec spec;
      spec.tenant =
          TenantId(static_cast<uint32_t>(Uniform(0, static_cast<int>(s().tenants().size()) - 1)));
      spec.priority_class = PriorityClassId(static_cast<uint16_t>(Uniform(0, 2)));
      FlavorId f = *s().catalogue().Find(Chance(0.6) ? "h100-80gb" : "a100-40gb");
      for (const auto& [id, r] : s().reservations()) {
        if (!r.maintenance && r.tenant == spec.tenant && Chance(0.3)) {
          spec.reservation = id;
          f = r.flavor;
        }
      }
      spec.shape = RandomShape(f);
      if (!spec.reservation.valid() && spec.shape.kind != ShapeKind::kMigProfile && Chance(0.25)) {
        spec.flavors = {f, *s().catalogue().Find(s().catalogue().model(f).name == "h100-80gb" ? "a100-40gb" : "h100-80gb")};
      }
      spec.replicas = static_cast<uint16_t>(Chance(0.75) ? 1 : Uniform(2, 3));
      spec.estimated_duration =
          Chance(0.9) ? Duration::Seconds(Uniform(1, 40) * 60) : Duration::Hours(20);
      if (Chance(0.2)) spec.topology = {static_cast<TopologyLevel>(Uniform(1, 3)), Chance(0.5)};
      if (Chance(0.2))
        spec.node_selector = {{"zone", Chance(0.5) ? SelectorOp::kIn : SelectorOp::kNotIn, {"a"}}};
      if (Chance(0.05)) spec.node_selector.push_back({"spot", SelectorOp::kDoesNotExist, {}});
      if (Chance(0.3))
        spec.command = {"python", "train.py", "--seed=" + std::to_string(Uniform(0, 99))};
      spec.checkpointable = Chance(0.3);
      spec.name = "j" + std::to_string(s().NextJobId().value());
      if (Result<JobSpec> v = s().ValidateSpec(spec); v.ok())
        Feed(JobSubmitted{s().NextJobId(), *v, now});
    }
  }

  // Node conditions, GPU health, agents' labels, drains and removals (a removed node's name
  // comes back as a new node).
  void Disturb(Time now) {
    const NodeId n(static_cast<uint32_t>(Uniform(0, static_cast<int>(s().nodes().size()) - 1)));
    const Node& node = s().node(n);
    if (node.condition != NodeCondition::kRetired && Chance(0.08)) {
      static constexpr std::array kConditions = {
          NodeCondition::kReady,       NodeCondition::kReady,       NodeCondition::kCordoned,
          NodeCondition::kDraining,    NodeCondition::kMaintenance, NodeCondition::kUnhealthy,
          NodeCondition::kUnreachable, NodeCondition::kNotReady};
      Feed(NodeConditionChanged{n, kConditions[Uniform(0, 7)], now, Chance(0.5) ? "operator" : ""});
    }
    if (Chance(0.05))
      Feed(GpuHealthChanged{
          n, static_cast<uint16_t>(Uniform(0, static_cast<int>(node.gpus.size()) - 1)), Chance(0.5),
          now, "XID 79"});
    if (Chance(0.03))
      Feed(
          NodeLabelsReported{n, {"node.gpupool.io/cuda=12." + std::to_string(Uniform(2, 6))}, now});
    for (const Node& d : s().nodes()) {
      if (d.condition != NodeCondition::kDraining || d.removed) continue;
      const std::vector<JobId> jobs = d.Jobs();
      for (JobId j : jobs) {
        if (Chance(0.5)) Feed(JobLost{j, now, RequeueCause::kNodeDrained, "drained"});
      }
      if (jobs.empty() && Chance(0.3)) {
        const NodeId id = d.id;
        const std::string name = d.name;
        Feed(NodeRemoved{id, now});
        const Node fresh = RandomNode(s(), name);
        for (Daemon* x : {a_, b_}) {
          if (x != nullptr) {
            ASSERT_TRUE(x->state.AddNode(fresh).ok());
          }
        }
        return;  // the node list changed under the loop
      }
    }
  }

  // Created the way the daemon creates them: booked on the calendar first.
  void Reserve(Time now) {
    if (Chance(0.08)) {
      Reservation r;
      r.id = s().NextReservationId();
      r.flavor = *s().catalogue().Find(Chance(0.5) ? "h100-80gb" : "a100-40gb");
      r.maintenance = Chance(0.25);
      if (!r.maintenance)
        r.tenant =
            TenantId(static_cast<uint32_t>(Uniform(0, static_cast<int>(s().tenants().size()) - 1)));
      r.amount = GpuEq::Gpus(Uniform(1, 3));
      r.start = now + Duration::Seconds(Uniform(-6, 12) * 300);
      r.end =
          r.start + (Chance(0.1) ? Duration::Infinite() : Duration::Seconds(Uniform(1, 24) * 600));
      r.created = now;
      if (BuildCalendar(s(), r.flavor).Book(ToBooking(r)).ok()) Feed(ReservationCreated{r});
    }
    if (!s().reservations().empty() && Chance(0.03))
      Feed(ReservationCancelled{s().reservations().begin()->first, now});
  }

  // A scheduling cycle: the copy must plan exactly as the original.
  void Cycle(Time now) {
    const Plan plan = Schedule(s(), cfg_, now);
    if (b_ != nullptr) {
      ASSERT_TRUE(plan == Schedule(b_->state, cfg_, now)) << Describe(s(), plan);
    }
    for (const Event& e : PlanToEvents(plan, now)) Feed(e);
    for (Daemon* x : {a_, b_}) {
      if (x != nullptr) RecordReasons(x->state, plan);
    }
    std::vector<JobId> start;
    for (JobId id : s().active()) {
      if (s().FindJob(id)->state == JobState::kAdmitted && Chance(0.8)) start.push_back(id);
    }
    for (JobId id : start) Feed(JobStarted{id, now});
  }

  std::mt19937_64 rng_;
  SchedulerConfig cfg_;
  Daemon* a_ = nullptr;
  Daemon* b_ = nullptr;
};

// What the snapshots taken in the property test held, summed over seeds: the generator must
// reach every kind of job, grant, node and reservation for the property to mean anything.
struct Coverage {
  std::map<std::string, int> seen;
  void Count(const State& s) {
    for (const auto& [id, j] : s.jobs()) {
      ++seen[std::string(JobStateName(j.state))];
      if (j.state == JobState::kPending && j.preemptions > 0) ++seen["requeued after preemption"];
      if (j.state == JobState::kPending && j.attempt > 0) ++seen["requeued"];
      if (!j.spec.node_selector.empty()) ++seen["node_selector"];
      if (!j.spec.command.empty()) ++seen["command"];
      if (j.spec.reservation.valid()) ++seen["in a reservation"];
      if (!j.placement.empty())
        ++seen["placed " + std::to_string(static_cast<int>(j.spec.shape.kind))];
    }
    for (const Node& n : s.nodes()) {
      ++seen[std::string(NodeConditionName(n.condition))];
      if (n.removed) ++seen["removed"];
      for (const Gpu& g : n.gpus) {
        seen["unhealthy GPU"] += g.healthy ? 0 : 1;
        for (size_t k = 1; k < g.shared.size(); ++k) {
          seen["shared clients out of id order"] += g.shared[k].job < g.shared[k - 1].job ? 1 : 0;
        }
      }
    }
    for (const auto& [id, r] : s.reservations())
      ++seen[r.maintenance ? "maintenance window" : "reservation"];
  }
};

}  // namespace gpupool::snapshot_test
