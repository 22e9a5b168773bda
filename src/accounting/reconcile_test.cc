// The reconciliation property of DESIGN.md §8: "the sum over tenants equals the integral of
// allocated capacity". Random clusters and workloads go through the real scheduler; every event
// is fed to the Ledger with the state before it. Independently, allocated capacity is integrated
// from the State alone: between consecutive event times, the sum over jobs holding resources of
// Job::Eq x dt. The ledger's total (infrastructure-failure intervals included) must equal that
// integral exactly, per tenant and overall, at every step. A failure prints the seed and step.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>

#include "accounting/ledger.h"
#include "accounting/report.h"
#include "model/builder.h"
#include "policy/quota/quota.h"
#include "scheduler/plan.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class World {
 public:
  explicit World(uint64_t seed) : rng_(seed) {}

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  void Build() {
    AddDefaultPriorityClasses(s_);
    const int tenants = Uniform(2, 4);
    for (int t = 0; t < tenants; ++t) {
      Tenant ten;
      ten.name = "t" + std::to_string(t);
      ten.allow_gpu_cotenancy = Chance(0.5);
      ASSERT_TRUE(s_.AddTenant(ten).ok());
    }
    for (int n = 0, nodes = Uniform(2, 8); n < nodes; ++n) {
      Node node;
      node.name = "n" + std::to_string(n);
      node.flavor = *s_.catalogue().Find(kFlavors[Uniform(0, 1)]);
      if (Chance(0.15))
        node.dedicated_to = TenantId(static_cast<uint32_t>(Uniform(0, tenants - 1)));
      for (int g = 0, gpus = Uniform(1, 8); g < gpus; ++g) {
        Gpu gpu;
        const int mode = Uniform(0, 5);
        if (mode == 0) {
          gpu.mode = GpuMode::kMig;
          gpu.layout = AllBalancedLayout(s_.catalogue().model(node.flavor));
        } else if (mode == 1) {
          gpu.mode = GpuMode::kShared;
        }
        node.gpus.push_back(gpu);
      }
      ASSERT_TRUE(s_.AddNode(node).ok());
    }
    QuotaBook book(s_);
    for (const char* name : kFlavors) {
      const FlavorId f = *s_.catalogue().Find(name);
      int64_t left = book.capacity(f).whole_gpus();
      for (int t = 0; t < tenants; ++t) {
        Tenant ten = s_.tenant(TenantId(t));
        FlavorQuota q;
        const int64_t g = left > 0 ? Uniform(0, static_cast<int>(left)) : 0;
        left -= g;
        q.guaranteed = GpuEq::Gpus(g);
        if (Chance(0.7)) q.borrow_limit = GpuEq::Gpus(Uniform(0, 8));
        ten.quotas[f] = q;
        ASSERT_TRUE(s_.UpdateTenant(ten).ok());
      }
    }
  }

  ReplicaShape RandomShape() {
    ReplicaShape s;
    s.flavor = *s_.catalogue().Find(kFlavors[Uniform(0, 1)]);
    const GpuModel& m = s_.catalogue().model(s.flavor);
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
        s.gpu_memory_mib = static_cast<uint32_t>(Uniform(1, 4) * 4096);
        break;
    }
    return s;
  }

  // Observes with the state before, then applies: both must accept.
  void Feed(const Event& e) {
    ++fed_[e.index()];
    Status o = ledger_.Observe(s_, e);
    ASSERT_TRUE(o.ok()) << o.error().message;
    Status a = Apply(s_, e);
    ASSERT_TRUE(a.ok()) << a.error().message;
  }

  // Advances the independent integral to `now` from the State: jobs holding resources now hold
  // them until the next event time, since every event of a step carries the step's time.
  void Integrate(Time now) {
    const int64_t dt = (now - last_).millis();
    for (JobId id : s_.active()) {
      const Job& j = *s_.FindJob(id);
      ASSERT_TRUE(HoldsResources(j.state));
      const UnitMillis um = static_cast<UnitMillis>(j.Eq(s_.catalogue()).units()) * dt;
      integral_[j.spec.tenant.value()] += um;
    }
    last_ = now;
  }

  void Step(Time now, const SchedulerConfig& cfg) {
    Integrate(now);
    // Finish, cancel and lose some work.
    std::vector<Event> events;
    for (JobId id : s_.active()) {
      const Job& j = *s_.FindJob(id);
      if (j.state == JobState::kRunning && (j.ExpectedEnd() <= now || Chance(0.05))) {
        events.push_back(
            JobFinished{id, Chance(0.9) ? JobState::kSucceeded : JobState::kFailed, now});
      } else if (Chance(0.02)) {
        events.push_back(JobLost{id, now});
      } else if (Chance(0.01)) {
        events.push_back(JobFinished{id, JobState::kCancelled, now});
      }
    }
    if (!s_.pending().empty() && Chance(0.05)) {
      events.push_back(JobFinished{*s_.pending().begin(), JobState::kCancelled, now});
    }
    for (const Event& e : events) {
      Feed(e);
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (int i = 0, k = Uniform(0, 4); i < k; ++i) {
      JobSubmitted e;
      e.id = s_.NextJobId();
      e.at = now;
      e.spec.tenant =
          TenantId(static_cast<uint32_t>(Uniform(0, static_cast<int>(s_.tenants().size()) - 1)));
      e.spec.priority_class = PriorityClassId(static_cast<uint16_t>(Uniform(0, 2)));
      e.spec.shape = RandomShape();
      e.spec.replicas = static_cast<uint16_t>(Chance(0.75) ? 1 : Uniform(2, 3));
      e.spec.estimated_duration = Duration::Seconds(Uniform(1, 40) * 60);
      e.spec.name = "j" + std::to_string(e.id.value());
      Feed(e);
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (const Event& e : PlanToEvents(Schedule(s_, cfg, now), now)) {
      Feed(e);
      if (::testing::Test::HasFatalFailure()) return;
    }
    std::vector<JobId> admitted;
    for (JobId id : s_.active()) {
      if (s_.FindJob(id)->state == JobState::kAdmitted && Chance(0.8)) admitted.push_back(id);
    }
    for (JobId id : admitted) Feed(JobStarted{id, now});
  }

  // Ledger invariant 1 and the reconciliation at `now`.
  void Check(Time now) {
    ASSERT_EQ(ledger_.open().size(), s_.active().size());
    for (JobId id : s_.active()) ASSERT_EQ(ledger_.open().count(id), 1u);
    std::map<uint32_t, UnitMillis> from_ledger;
    for (const UsageInterval& u : ledger_.Snapshot(now))
      from_ledger[u.tenant.value()] += u.unit_millis();
    UnitMillis total_ledger = 0, total_integral = 0;
    for (uint32_t t = 0; t < s_.tenants().size(); ++t) {
      ASSERT_TRUE(from_ledger[t] == integral_[t])
          << "tenant " << t << ": ledger " << UnitMillisToString(from_ledger[t]) << " integral "
          << UnitMillisToString(integral_[t]);
      total_ledger += from_ledger[t];
      total_integral += integral_[t];
    }
    ASSERT_TRUE(total_ledger == total_integral);
  }

  // The report path: the whole period, ungrouped, equals the integral; any split of the period
  // into two windows adds up exactly.
  void CheckReport(Time end) {
    PriceList prices;
    for (const char* name : kFlavors)
      prices.micros_per_gpu_hour[*s_.catalogue().Find(name)] = 2'500'000;
    const std::vector<UsageInterval> snap = ledger_.Snapshot(end);
    auto all =
        Report(snap, {.from = Time(), .to = end, .by_flavor = false, .by_kind = false}, prices);
    ASSERT_TRUE(all.ok()) << all.error().message;
    UnitMillis sum = 0, expected = 0;
    for (const ReportRow& r : all->rows) {
      ASSERT_TRUE(r.unit_millis == integral_[r.tenant.value()]);
      sum += r.unit_millis;
    }
    for (const auto& [t, v] : integral_) expected += v;
    ASSERT_TRUE(sum == expected);
    const Time mid = Time::FromMillis(end.millis() / 3);
    auto left = Report(snap, {.from = Time(), .to = mid}, prices);
    auto right = Report(snap, {.from = mid, .to = end}, prices);
    auto whole = Report(snap, {.from = Time(), .to = end}, prices);
    ASSERT_TRUE(left.ok() && right.ok() && whole.ok());
    std::map<std::tuple<uint32_t, int, int>, UnitMillis> split, joined;
    auto key = [](const ReportRow& r) {
      return std::tuple{r.tenant.value(), int{r.flavor->value()}, static_cast<int>(*r.kind)};
    };
    for (const ReportRow& r : left->rows) split[key(r)] += r.unit_millis;
    for (const ReportRow& r : right->rows) split[key(r)] += r.unit_millis;
    for (const ReportRow& r : whole->rows) joined[key(r)] += r.unit_millis;
    ASSERT_TRUE(split == joined);
  }

  // What a run exercised, so the property is not proved over an empty ledger.
  struct Coverage {
    std::map<size_t, int> events;  // by Event index
    std::map<UsageKind, int> kinds;
  };
  void AddCoverage(Coverage& c) const {
    for (const auto& [i, n] : fed_) c.events[i] += n;
    for (const UsageInterval& u : ledger_.closed()) ++c.kinds[u.kind];
  }

 private:
  static constexpr std::array<const char*, 2> kFlavors = {"h100-80gb", "a100-40gb"};
  std::mt19937_64 rng_;
  State s_;
  Ledger ledger_;
  std::map<uint32_t, UnitMillis> integral_;
  Time last_;
  std::map<size_t, int> fed_;
};

using Coverage = World::Coverage;

void RunSeed(uint64_t seed, int steps, const SchedulerConfig& cfg, Coverage& cov) {
  SCOPED_TRACE("seed=" + std::to_string(seed));
  World w(seed);
  w.Build();
  if (::testing::Test::HasFatalFailure()) return;
  Time now;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step=" + std::to_string(step));
    now = now + Duration::Seconds(w.Uniform(30, 600));
    w.Step(now, cfg);
    if (::testing::Test::HasFatalFailure()) return;
    w.Check(now);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Jobs still holding resources count up to a later cut too.
  now = now + Duration::Seconds(1234);
  w.Integrate(now);
  w.Check(now);
  w.CheckReport(now);
  w.AddCoverage(cov);
}

size_t IndexOf(const Event& e) { return e.index(); }

void ExpectCovered(const Coverage& c) {
  for (const Event& e :
       {Event(JobAdmitted{}), Event(JobPreempted{}), Event(JobLost{}), Event(JobFinished{})}) {
    EXPECT_GT(c.events.count(IndexOf(e)) ? c.events.at(IndexOf(e)) : 0, 0)
        << "event index " << IndexOf(e) << " never fed";
  }
  for (UsageKind k : {UsageKind::kGuaranteed, UsageKind::kBorrowed, UsageKind::kDedicated,
                      UsageKind::kInfrastructureFailure}) {
    EXPECT_GT(c.kinds.count(k) ? c.kinds.at(k) : 0, 0) << UsageKindName(k) << " never closed";
  }
}

TEST(AccountingReconcileTest, LedgerEqualsIntegralOfAllocatedCapacity) {
  Coverage cov;
  SchedulerConfig cfg;
  cfg.preemption.min_runtime = Duration::Minutes(2);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RunSeed(seed, 200, cfg, cov);
    if (HasFatalFailure()) return;
  }
  ExpectCovered(cov);
}

TEST(AccountingReconcileTest, LedgerEqualsIntegralWithFirstFitAndNoBackfill) {
  Coverage cov;
  SchedulerConfig cfg;
  cfg.placement = "firstfit";
  cfg.backfill.enabled = false;
  for (uint64_t seed = 50; seed < 56; ++seed) {
    RunSeed(seed, 200, cfg, cov);
    if (HasFatalFailure()) return;
  }
  ExpectCovered(cov);
}

}  // namespace
}  // namespace gpupool
