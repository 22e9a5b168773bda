// Seeded property tests: random clusters and workloads, thousands of steps, invariants checked
// after every applied plan. A failure prints the seed and the step.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <random>

#include "model/builder.h"
#include "policy/calendar/calendars.h"
#include "policy/quota/quota.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class Sim {
 public:
  explicit Sim(uint64_t seed) : rng_(seed) {}

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  MigLayout RandomLayout(const GpuModel& m) {
    if (Chance(0.5)) return AllBalancedLayout(m);
    MigLayout l;
    for (int tries = 0; tries < 12; ++tries) {
      const int p = Uniform(0, static_cast<int>(m.profiles.size()) - 1);
      const int start = Uniform(0, 7);
      if (!m.profiles[p].ValidStart(start) || l.size() == MigLayout::kMaxInstances) continue;
      MigLayout next = l;
      next.Add({static_cast<uint8_t>(p), static_cast<uint8_t>(start)});
      if (ValidateLayout(m, next).ok()) l = next;
    }
    return l;
  }

  void BuildCluster() {
    AddDefaultPriorityClasses(state_);
    const std::vector<std::string> flavors = {"h100-80gb", "a100-40gb"};
    const int tenants = Uniform(2, 5);
    for (int t = 0; t < tenants; ++t) {
      Tenant ten;
      ten.name = "t" + std::to_string(t);
      ten.weight_milli = Uniform(1, 3) * 1000;
      ten.allow_gpu_cotenancy = Chance(0.5);
      ASSERT_TRUE(state_.AddTenant(ten).ok());
    }
    const int nodes = Uniform(3, 12);
    for (int n = 0; n < nodes; ++n) {
      Node node;
      node.name = "n" + std::to_string(n);
      node.flavor = *state_.catalogue().Find(flavors[Uniform(0, 1)]);
      node.nvlink_domain = "d" + std::to_string(Uniform(0, 2));
      node.block = "b" + std::to_string(Uniform(0, 1));
      if (Chance(0.15)) node.dedicated_to = TenantId(static_cast<uint32_t>(Uniform(0, tenants - 1)));
      if (Chance(0.3)) node.cpu_milli = 64000;
      const GpuModel& m = state_.catalogue().model(node.flavor);
      const int gpus = Uniform(1, 8);
      // A dynamic node: its GPUs not in MIG mode switch between whole and shared use, with one
      // client cap.
      const bool dynamic = Chance(0.3);
      const auto node_clients = static_cast<uint8_t>(Uniform(0, 4));
      for (int g = 0; g < gpus; ++g) {
        Gpu gpu;
        const int mode = Uniform(0, 5);
        if (mode == 0) {
          gpu.mode = GpuMode::kMig;
          gpu.layout = RandomLayout(m);
        } else if (mode == 1) {
          gpu.mode = GpuMode::kShared;
          gpu.max_clients = dynamic ? node_clients : static_cast<uint8_t>(Uniform(0, 4));
        }
        if (dynamic && gpu.mode != GpuMode::kMig) {
          gpu.dynamic = true;
          gpu.max_clients = node_clients;
        }
        node.gpus.push_back(gpu);
      }
      ASSERT_TRUE(state_.AddNode(node).ok());
    }
    // Guarantees: split at most the healthy capacity of each flavor among the tenants.
    QuotaBook book(state_);
    for (uint16_t f = 0; f < 2; ++f) {
      const FlavorId fid = *state_.catalogue().Find(flavors[f]);
      int64_t left = book.capacity(fid).whole_gpus();
      for (int t = 0; t < tenants; ++t) {
        Tenant ten = state_.tenant(TenantId(t));
        FlavorQuota q;
        const int64_t g = left > 0 ? Uniform(0, static_cast<int>(left)) : 0;
        left -= g;
        q.guaranteed = GpuEq::Gpus(g);
        if (Chance(0.5)) q.borrow_limit = GpuEq::Gpus(Uniform(0, 8));
        if (Chance(0.3)) q.lend_limit = GpuEq::Gpus(Uniform(0, 4));
        ten.quotas[fid] = q;
        ASSERT_TRUE(state_.UpdateTenant(ten).ok());
      }
    }
  }

  ReplicaShape RandomShape() {
    const FlavorId f = Chance(0.5) ? *state_.catalogue().Find("h100-80gb")
                                   : *state_.catalogue().Find("a100-40gb");
    const GpuModel& m = state_.catalogue().model(f);
    ReplicaShape s;
    s.flavor = f;
    switch (Uniform(0, 2)) {
      case 0:
        s.kind = ShapeKind::kWholeGpus;
        s.gpus = static_cast<uint8_t>(std::array{1, 1, 2, 4, 8}[Uniform(0, 4)]);
        break;
      case 1:
        s.kind = ShapeKind::kMigProfile;
        s.mig_profile = static_cast<uint8_t>(Uniform(0, static_cast<int>(m.profiles.size()) - 1));
        break;
      default:
        s.kind = ShapeKind::kGpuFraction;
        s.milli = static_cast<uint16_t>(Uniform(1, 10) * 100);
        s.gpu_memory_mib = static_cast<uint32_t>(Uniform(1, 8) * 4096);
        break;
    }
    if (Chance(0.2)) s.cpu_milli = Uniform(1, 32) * 1000;
    if (s.kind == ShapeKind::kWholeGpus && Chance(0.1)) {  // no GPU: CPU (and memory) only
      s.gpus = 0;
      s.cpu_milli = Uniform(1, 32) * 1000;
    }
    return s;
  }

  void SubmitSome(Time now) {
    const int k = Uniform(0, 4);
    for (int i = 0; i < k; ++i) {
      JobSubmitted e;
      e.id = state_.NextJobId();
      e.at = now;
      e.spec.tenant = TenantId(static_cast<uint32_t>(Uniform(0, static_cast<int>(state_.tenants().size()) - 1)));
      e.spec.priority_class = PriorityClassId(static_cast<uint16_t>(Uniform(0, 2)));
      e.spec.shape = RandomShape();
      // Some accept both models, in either order (whole GPUs and fractions that fit both).
      const bool fits_both = e.spec.shape.kind == ShapeKind::kWholeGpus ||
                             (e.spec.shape.kind == ShapeKind::kGpuFraction && e.spec.shape.gpu_memory_mib <= 40960);
      if (fits_both && Chance(0.3)) {
        const FlavorId other = *state_.catalogue().Find(
            state_.catalogue().model(e.spec.shape.flavor).name == "h100-80gb" ? "a100-40gb" : "h100-80gb");
        e.spec.flavors = {e.spec.shape.flavor, other};
      }
      e.spec.replicas = static_cast<uint16_t>(Chance(0.75) ? 1 : Uniform(2, 3));
      e.spec.estimated_duration =
          Chance(0.8) ? Duration::Seconds(Uniform(1, 40) * 60) : Duration::Infinite();
      if (Chance(0.2)) {
        e.spec.topology.level = static_cast<TopologyLevel>(Uniform(1, 3));
        e.spec.topology.required = Chance(0.5);
      }
      e.spec.name = "j" + std::to_string(e.id.value());
      ASSERT_TRUE(Apply(state_, e).ok());
    }
  }

  void FinishSome(Time now) {
    std::vector<JobId> done;
    for (JobId id : state_.active()) {
      const Job& j = *state_.FindJob(id);
      if (j.state == JobState::kRunning && (j.ExpectedEnd() <= now || Chance(0.05))) {
        done.push_back(id);
      }
    }
    for (JobId id : done) {
      ASSERT_TRUE(Apply(state_, JobFinished{id, Chance(0.9) ? JobState::kSucceeded
                                                             : JobState::kFailed, now})
                      .ok());
    }
    if (!state_.pending().empty() && Chance(0.05)) {
      ASSERT_TRUE(Apply(state_, JobFinished{*state_.pending().begin(), JobState::kCancelled, now}).ok());
    }
  }

  void Disturb(Time now) {
    if (Chance(0.05)) {
      const NodeId n(static_cast<uint32_t>(Uniform(0, static_cast<int>(state_.nodes().size()) - 1)));
      const auto c = Chance(0.5) ? NodeCondition::kReady : NodeCondition::kCordoned;
      ASSERT_TRUE(Apply(state_, NodeConditionChanged{n, c, now}).ok());
    }
    if (Chance(0.03)) {
      const NodeId n(static_cast<uint32_t>(Uniform(0, static_cast<int>(state_.nodes().size()) - 1)));
      const auto g = static_cast<uint16_t>(Uniform(0, static_cast<int>(state_.node(n).gpus.size()) - 1));
      ASSERT_TRUE(Apply(state_, GpuHealthChanged{n, g, Chance(0.5), now}).ok());
    }
  }

  // Reservations and maintenance windows, created the way the daemon creates them: booked on
  // the calendar built from the state, applied only if that succeeded. Some start in the past,
  // so they are in force at once; some are cancelled again.
  void Reserve(Time now) {
    if (Chance(0.08)) {
      Reservation r;
      r.id = state_.NextReservationId();
      r.flavor = *state_.catalogue().Find(Chance(0.5) ? "h100-80gb" : "a100-40gb");
      r.maintenance = Chance(0.25);
      if (!r.maintenance) {
        const int last = static_cast<int>(state_.tenants().size()) - 1;
        r.tenant = TenantId(static_cast<uint32_t>(Uniform(0, last)));
      }
      r.amount = GpuEq::Gpus(Uniform(1, 6));
      r.start = now + Duration::Seconds(Uniform(-6, 12) * 300);
      r.end = r.start + Duration::Seconds(Uniform(1, 24) * 600);
      r.created = now;
      if (BuildCalendar(state_, r.flavor).Book(ToBooking(r)).ok()) {
        ASSERT_TRUE(Apply(state_, ReservationCreated{r}).ok());
      }
    }
    if (!state_.reservations().empty() && Chance(0.03)) {
      const ReservationId id = state_.reservations().begin()->first;
      ASSERT_TRUE(Apply(state_, ReservationCancelled{id, now}).ok());
    }
  }

  // Checks what the plan does against the state it was made from, then applies it. Guarantees
  // are those in force at `now`: standing plus reserved (docs/design/reservations.md).
  void CheckAndApply(const Plan& plan, const SchedulerConfig& cfg, Time now) {
    QuotaBook book(state_, now);
    const Catalogue& cat = state_.catalogue();
    int queue_victims = 0;
    for (const PreemptDecision& d : plan.preemptions) {
      const Job& v = *state_.FindJob(d.victim);
      const Job& p = *state_.FindJob(d.preemptor);
      const FlavorId f = v.spec.shape.flavor;
      ASSERT_TRUE(state_.priority_class(v.spec.priority_class).preemptible);
      const Time since = v.state == JobState::kRunning ? v.started : v.admitted;
      ASSERT_GE(now - since, cfg.preemption.min_runtime);
      // Never one's own preemptor, except by las queue preemption, where the preemptor has
      // since attained more (QueueMayPreempt below checks that it is in a higher queue now).
      const bool las_turn = d.kind == PreemptKind::kQueue &&
                            OrderOf(cfg.queue, state_.tenant(p.spec.tenant)) == QueueOrder::kLas;
      if (!las_turn) {
        ASSERT_EQ(std::count(p.preempted_by.begin(), p.preempted_by.end(), v.id), 0)
            << "a job preempted its own preemptor";
      }
      if (v.spec.tenant != p.spec.tenant) {
        // Never preempt another tenant inside its guarantee.
        ASSERT_GT(book.usage(v.spec.tenant, f), book.guaranteed(v.spec.tenant, f))
            << "a tenant within its guarantee and reservations lost work to another: using "
            << ToString(book.usage(v.spec.tenant, f)) << " of "
            << ToString(book.guaranteed(v.spec.tenant, f));
        ASSERT_LE(book.usage(p.spec.tenant, f) + p.Eq(cat), book.guaranteed(p.spec.tenant, f))
            << "reclaim by a tenant that would be above its guarantee";
      } else if (d.kind == PreemptKind::kQueue) {
        // The tenant's queue policy: same class, and the policy ranks the victim after the job.
        ++queue_victims;
        ASSERT_EQ(state_.priority_class(v.spec.priority_class).value,
                  state_.priority_class(p.spec.priority_class).value);
        const QueueOrder order = OrderOf(cfg.queue, state_.tenant(p.spec.tenant));
        ASSERT_TRUE(QueueMayPreempt(cfg.queue, order, p, v, cat, now))
            << "queue preemption the policy does not allow (" << QueueOrderName(order) << ")";
        ASSERT_FALSE(Starved(cfg.queue, v, now)) << "a starved job was preempted by its queue";
      } else {
        ASSERT_LT(state_.priority_class(v.spec.priority_class).value,
                  state_.priority_class(p.spec.priority_class).value);
      }
      if (v.admitted_as != AdmissionKind::kDedicated) book.Remove(v.spec.tenant, f, v.Eq(cat));
    }
    ASSERT_LE(queue_victims, cfg.queue.max_preemptions_per_cycle) << "queue preemptions over the budget";
    // No tenant goes above guaranteed + borrow_limit through this plan.
    std::map<std::pair<uint32_t, uint16_t>, GpuEq> before;
    for (const Tenant& t : state_.tenants()) {
      for (const auto& [f, q] : t.quotas) before[{t.id.value(), f.value()}] = book.usage(t.id, f);
    }
    // Quota is charged to the flavor a job is admitted on: its own, or the one of its accepted
    // flavors the plan chose (and the nodes it is placed on are of that flavor).
    std::map<JobId, FlavorId> admitted_on;
    for (const PlaceDecision& d : plan.placements) {
      const Job& j = *state_.FindJob(d.job);
      const FlavorId f = d.flavor.valid() ? d.flavor : j.spec.shape.flavor;
      if (d.flavor.valid()) {
        ++flavors_chosen;
        ASSERT_NE(d.flavor, j.spec.shape.flavor) << "a chosen flavor that changes nothing";
        ASSERT_NE(std::find(j.spec.flavors.begin(), j.spec.flavors.end(), d.flavor), j.spec.flavors.end())
            << "job " << j.id.value() << " admitted on a flavor it does not accept";
      }
      for (const ReplicaPlacement& rp : d.placement) ASSERT_EQ(state_.node(rp.node).flavor, f);
      admitted_on[d.job] = f;
      if (d.kind != AdmissionKind::kDedicated) book.Add(j.spec.tenant, f, j.Eq(cat));
      if (d.kind == AdmissionKind::kGuaranteed) {
        ASSERT_LE(book.usage(j.spec.tenant, f), book.guaranteed(j.spec.tenant, f));
      }
    }
    for (const Tenant& t : state_.tenants()) {
      for (const auto& [f, q] : t.quotas) {
        if (!q.borrow_limit) continue;
        const GpuEq cap =
            Max(before[{t.id.value(), f.value()}], book.guaranteed(t.id, f) + *q.borrow_limit);
        ASSERT_LE(book.usage(t.id, f), cap) << "tenant " << t.name << " above its borrow limit";
      }
    }
    // A dynamic GPU switches only to the use its placement in this plan asks for, and only when
    // nothing but this plan's victims holds it (Apply refuses a switch of a GPU in use, and a
    // grant in the other mode).
    for (const ModeChangeDecision& m : plan.mode_changes) {
      const Gpu& gpu = state_.node(m.node).gpus[m.gpu];
      ASSERT_TRUE(gpu.dynamic);
      ASSERT_EQ(gpu.mode, m.from);
      std::vector<JobId> on;
      gpu.AppendOccupants(on);
      for (JobId j : on) {
        ASSERT_TRUE(std::any_of(plan.preemptions.begin(), plan.preemptions.end(),
                                [&](const PreemptDecision& d) { return d.victim == j; }))
            << "a switch under job " << j.value() << ", which keeps running";
      }
      bool used = false;
      for (const PlaceDecision& d : plan.placements) {
        const bool whole = state_.FindJob(d.job)->spec.shape.kind == ShapeKind::kWholeGpus;
        for (const ReplicaPlacement& rp : d.placement) {
          for (const GpuGrant& g : rp.grants) {
            used = used || (rp.node == m.node && g.gpu == m.gpu && whole == (m.to == GpuMode::kWhole));
          }
        }
      }
      ASSERT_TRUE(used) << "a switch no placement of the plan uses";
      ++(m.to == GpuMode::kWhole ? switches_to_whole : switches_to_shared);
    }
    for (const Event& e : PlanToEvents(plan, now)) {
      Status s = Apply(state_, e);
      ASSERT_TRUE(s.ok()) << s.error().message << "\n" << Describe(state_, plan);
    }
    std::vector<JobId> admitted;
    for (JobId id : state_.active()) {
      if (state_.FindJob(id)->state == JobState::kAdmitted) admitted.push_back(id);
    }
    for (JobId id : admitted) ASSERT_TRUE(Apply(state_, JobStarted{id, now}).ok());
    for (const auto& [id, f] : admitted_on) {
      ASSERT_EQ(state_.FindJob(id)->spec.shape.flavor, f);
      if (!state_.FindJob(id)->spec.flavors.empty()) ++flavor_lists_admitted;
    }
    // Under maintenance, new work in the shared pool never uses the capacity taken out: each
    // admission checked P + d <= C, and preemptions only lower P afterwards.
    const QuotaBook after(state_, now);
    for (const PlaceDecision& d : plan.placements) {
      const FlavorId f = state_.FindJob(d.job)->spec.shape.flavor;
      if (d.kind == AdmissionKind::kDedicated || after.maintenance(f) == GpuEq()) continue;
      ASSERT_LE(after.usage_on_capacity(f), after.capacity(f))
          << "work placed on capacity under maintenance: " << ToString(after.usage_on_capacity(f))
          << " in use of " << ToString(after.capacity(f));
    }
    Status inv = CheckInvariants(state_);
    ASSERT_TRUE(inv.ok()) << inv.error().message;
    // Node::Jobs (read from the GPUs' occupant index) lists exactly the jobs placed there.
    std::vector<std::vector<JobId>> placed(state_.nodes().size());
    for (JobId id : state_.active()) {
      for (const ReplicaPlacement& rp : state_.FindJob(id)->placement) {
        if (placed[rp.node.value()].empty() || placed[rp.node.value()].back() != id) placed[rp.node.value()].push_back(id);
      }
    }
    for (const Node& n : state_.nodes()) {
      std::vector<JobId>& want = placed[n.id.value()];
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      ASSERT_EQ(n.Jobs(), want) << "node " << n.name;
    }
  }

  State& state() { return state_; }
  bool reservations = false;  // Reserve() on each step
  int switches_to_whole = 0, switches_to_shared = 0;  // dynamic GPUs switched by the plans
  int flavor_lists_admitted = 0;  // admissions of jobs that accept several flavors
  int flavors_chosen = 0;         // of those, on another flavor than the job's last (JobFlavorChosen)

 private:
  std::mt19937_64 rng_;
  State state_;
};

struct Switches {
  int to_whole = 0, to_shared = 0;
  int flavor_lists = 0;  // admissions of jobs with several accepted flavors
  int flavors_chosen = 0;  // of those, with a JobFlavorChosen
};

// `switches`, if given, gains the dynamic GPUs' switches of the run.
void RunSeed(uint64_t seed, int steps, const SchedulerConfig& cfg, bool reservations = false,
             Switches* switches = nullptr) {
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Sim sim(seed);
  struct Count {  // adds the run's switches however it returns
    Sim& sim;
    Switches* out;
    ~Count() {
      if (out != nullptr) {
        out->to_whole += sim.switches_to_whole;
        out->to_shared += sim.switches_to_shared;
        out->flavor_lists += sim.flavor_lists_admitted;
        out->flavors_chosen += sim.flavors_chosen;
      }
    }
  } count{sim, switches};
  sim.reservations = reservations;
  sim.BuildCluster();
  Time now = Time::FromSeconds(0);
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step=" + std::to_string(step));
    now = now + Duration::Seconds(sim.Uniform(30, 600));
    sim.FinishSome(now);
    sim.SubmitSome(now);
    sim.Disturb(now);
    if (sim.reservations) sim.Reserve(now);
    if (::testing::Test::HasFatalFailure()) return;
    const Plan plan = Schedule(sim.state(), cfg, now);
    const Plan again = Schedule(sim.state(), cfg, now);
    ASSERT_TRUE(plan == again) << "same input, different plan";
    ASSERT_EQ(plan.pending.size() + plan.placements.size(), sim.state().pending().size())
        << "every pending job is placed or has a reason";
    for (const PendingNote& n : plan.pending) ASSERT_FALSE(plan.ReasonOf(n).message.empty());
    sim.CheckAndApply(plan, cfg, now);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

class PropertyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PropertyTest, InvariantsHoldOverRandomSteps) {
  SchedulerConfig cfg;
  cfg.placement = GetParam();
  cfg.preemption.min_runtime = Duration::Minutes(2);
  Switches all;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    RunSeed(seed, 250, cfg, false, &all);
    if (HasFatalFailure()) return;
  }
  // The dynamic GPUs of the random clusters did switch, both ways.
  EXPECT_GT(all.to_whole, 0);
  EXPECT_GT(all.to_shared, 0);
  EXPECT_GT(all.flavors_chosen, 0);
  std::printf("%s: %d switches to whole, %d to shared; %d admissions of jobs with two flavors, %d with a flavor change\n",
              GetParam().c_str(), all.to_whole, all.to_shared, all.flavor_lists, all.flavors_chosen);
}

TEST(PropertyTest, KeySearchGivesTheSamePlansAsClassSearch) {
  // The GPU-state search is an optimisation of the node-class search: over random states and
  // steps, both must produce identical plans (docs/design/placement.md explains why).
  for (const char* policy : {"fgd", "firstfit", "gpupool"}) {
    SchedulerConfig keyed, classed;
    keyed.placement = classed.placement = policy;
    classed.key_search = false;
    for (uint64_t seed = 200; seed < 206; ++seed) {
      SCOPED_TRACE(std::string(policy) + " seed=" + std::to_string(seed));
      Sim sim(seed);
      sim.BuildCluster();
      Time now;
      for (int step = 0; step < 150; ++step) {
        now = now + Duration::Seconds(sim.Uniform(30, 600));
        sim.FinishSome(now);
        sim.SubmitSome(now);
        if (HasFatalFailure()) return;
        const Plan a = Schedule(sim.state(), keyed, now);
        const Plan b = Schedule(sim.state(), classed, now);
        ASSERT_TRUE(a == b) << "step " << step << "\nkey search:\n"
                            << Describe(sim.state(), a) << "class search:\n"
                            << Describe(sim.state(), b);
        sim.CheckAndApply(a, keyed, now);
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, PropertyTest,
                         ::testing::Values("fgd", "bestfit", "spread", "firstfit", "gpupool"));

TEST(PropertyTest, InvariantsHoldWithUsageBlendAndNoBackfill) {
  SchedulerConfig cfg;
  cfg.fair_share.usage_blend = 0.5;
  cfg.backfill.enabled = false;
  cfg.mig_reconfigure = false;
  for (uint64_t seed = 100; seed < 106; ++seed) {
    RunSeed(seed, 250, cfg);
    if (HasFatalFailure()) return;
  }
}

TEST(PropertyTest, InvariantsHoldUnderEveryQueuePolicy) {
  // Queue preemption only within a class, only where the policy ranks the victim after the
  // preemptor, never of a starved job, within the budget; plus every check above. Jobs starve
  // after 2 h, so the starved path runs too.
  for (QueueOrder order : {QueueOrder::kLas, QueueOrder::kSrsf, QueueOrder::kSjf}) {
    SchedulerConfig cfg;
    cfg.queue.order = order;
    cfg.queue.starvation_after = Duration::Hours(2);
    cfg.queue.max_preemptions_per_cycle = 3;
    cfg.queue.las_thresholds_gpu_s = {600, 6000};
    cfg.preemption.min_runtime = Duration::Minutes(2);
    for (uint64_t seed = 400; seed < 406; ++seed) {
      SCOPED_TRACE(QueueOrderName(order));
      RunSeed(seed, 250, cfg);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(PropertyTest, InvariantsHoldWithReservationsAndMaintenance) {
  // The checks of CheckAndApply with reservations and maintenance windows coming and going:
  // no tenant within its standing plus reserved guarantee loses work to another, reclaim only
  // by a tenant within it, borrow caps on the guarantee in force, no new work on capacity under
  // maintenance.
  for (const char* policy : {"fgd", "firstfit"}) {
    SchedulerConfig cfg;
    cfg.placement = policy;
    cfg.preemption.min_runtime = Duration::Minutes(2);
    for (uint64_t seed = 300; seed < 310; ++seed) {
      SCOPED_TRACE(policy);
      RunSeed(seed, 250, cfg, true);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace gpupool
