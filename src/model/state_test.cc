#include <gtest/gtest.h>

#include "model/builder.h"
#include "model/events.h"
#include "model/state.h"

namespace gpupool {
namespace {

class StateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    ASSERT_TRUE(AddTenant(s_, "a", {{"h100-80gb", {8}}}).ok());
    ASSERT_TRUE(AddTenant(s_, "b", {{"h100-80gb", {8}}}).ok());
    NodeTemplate t;
    t.flavor = "h100-80gb";
    t.gpus = 4;
    t.mig_gpus = 1;
    t.shared_gpus = 1;
    t.cpu_milli = 8000;
    ASSERT_TRUE(AddNode(s_, "n0", t).ok());
  }
  JobId SubmitWhole(const std::string& tenant, int gpus) {
    JobRequest r{.tenant = tenant, .shape = *WholeGpus(s_, "h100-80gb", gpus)};
    return *Submit(s_, r, Time::FromSeconds(1));
  }
  JobAdmitted Admit(JobId id, std::vector<GpuGrant> grants) {
    return JobAdmitted{id, {ReplicaPlacement{NodeId(0), std::move(grants)}},
                       AdmissionKind::kGuaranteed, Time::FromSeconds(2)};
  }
  State s_;
};

TEST_F(StateTest, AdmitStartFinishReleasesTheGpus) {
  const JobId j = SubmitWhole("a", 2);
  ASSERT_TRUE(Apply(s_, Admit(j, {{.gpu = 2}, {.gpu = 3}})).ok());
  EXPECT_EQ(s_.node(NodeId(0)).gpus[2].occupant, j);
  ASSERT_TRUE(Apply(s_, JobStarted{j, Time::FromSeconds(3)}).ok());
  ASSERT_TRUE(Apply(s_, JobFinished{j, JobState::kSucceeded, Time::FromSeconds(9)}).ok());
  EXPECT_FALSE(s_.node(NodeId(0)).gpus[2].occupant.valid());
  EXPECT_EQ(s_.FindJob(j)->state, JobState::kSucceeded);
  EXPECT_TRUE(CheckInvariants(s_).ok());
}

TEST_F(StateTest, DoubleGrantFailsAndChangesNothing) {
  const JobId j1 = SubmitWhole("a", 1), j2 = SubmitWhole("b", 2);
  ASSERT_TRUE(Apply(s_, Admit(j1, {{.gpu = 3}})).ok());
  // j2 asks for GPU 2 (free) and GPU 3 (held): rejected as a whole, GPU 2 stays free.
  Status s = Apply(s_, Admit(j2, {{.gpu = 2}, {.gpu = 3}}));
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(s_.node(NodeId(0)).gpus[2].occupant.valid());
  EXPECT_EQ(s_.FindJob(j2)->state, JobState::kPending);
  EXPECT_TRUE(CheckInvariants(s_).ok());
}

TEST_F(StateTest, WholeGrantOnMigGpuIsRejected) {
  const JobId j = SubmitWhole("a", 1);
  EXPECT_FALSE(Apply(s_, Admit(j, {{.gpu = 0}})).ok());
}

TEST_F(StateTest, MigInstanceMustMatchTheProfile) {
  JobRequest r{.tenant = "a", .shape = *MigShape(s_, "h100-80gb", "3g.40gb")};
  const JobId j = *Submit(s_, r, Time());
  // All-balanced: 1g@0, 1g@1, 2g@2, 3g@4.
  EXPECT_FALSE(Apply(s_, Admit(j, {{.gpu = 0, .mig_start = 2}})).ok());
  ASSERT_TRUE(Apply(s_, Admit(j, {{.gpu = 0, .mig_start = 4}})).ok());
  EXPECT_TRUE(CheckInvariants(s_).ok());
  // A busy GPU may not be re-partitioned.
  const GpuModel& m = s_.catalogue().model(s_.node(NodeId(0)).flavor);
  MigReconfigured rc{NodeId(0), 0, *ParseLayout(m, "7g.80gb@0"), Time()};
  EXPECT_EQ(Apply(s_, rc).error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(StateTest, SharedGpuNeverMixesTenantsWithoutConsent) {
  JobRequest ra{.tenant = "a", .shape = *FractionShape(s_, "h100-80gb", 250, 10240)};
  JobRequest rb{.tenant = "b", .shape = *FractionShape(s_, "h100-80gb", 250, 10240)};
  const JobId ja = *Submit(s_, ra, Time()), jb = *Submit(s_, rb, Time());
  ASSERT_TRUE(Apply(s_, Admit(ja, {{.gpu = 1, .milli = 250, .memory_mib = 10240}})).ok());
  EXPECT_FALSE(Apply(s_, Admit(jb, {{.gpu = 1, .milli = 250, .memory_mib = 10240}})).ok());
  // With consent from both tenants the GPU may be shared.
  for (const char* name : {"a", "b"}) {
    Tenant t = s_.tenant(*s_.FindTenant(name));
    t.allow_gpu_cotenancy = true;
    ASSERT_TRUE(s_.UpdateTenant(t).ok());
  }
  EXPECT_TRUE(Apply(s_, Admit(jb, {{.gpu = 1, .milli = 250, .memory_mib = 10240}})).ok());
  EXPECT_TRUE(CheckInvariants(s_).ok());
}

TEST_F(StateTest, PreemptionRequeuesAndRemembersThePreemptor) {
  const JobId victim = SubmitWhole("b", 1), preemptor = SubmitWhole("a", 1);
  ASSERT_TRUE(Apply(s_, Admit(victim, {{.gpu = 3}})).ok());
  ASSERT_TRUE(Apply(s_, JobPreempted{victim, preemptor, Time::FromSeconds(5)}).ok());
  const Job* v = s_.FindJob(victim);
  EXPECT_EQ(v->state, JobState::kPending);
  ASSERT_EQ(v->preempted_by.size(), 1u);
  EXPECT_EQ(v->preempted_by[0], preemptor);
  EXPECT_TRUE(s_.pending().count(victim));
  EXPECT_TRUE(CheckInvariants(s_).ok());
}

TEST_F(StateTest, EachAdmissionStartsTheNextAttempt) {
  // Admitted, lost, admitted again at the very same millisecond: attempts 1 and 2, where the
  // admission time (the old attempt number) would have repeated. A refused admission counts
  // nothing.
  const JobId j = SubmitWhole("a", 1), other = SubmitWhole("b", 1);
  EXPECT_EQ(s_.FindJob(j)->attempt, 0) << "never placed";
  ASSERT_TRUE(Apply(s_, Admit(j, {{.gpu = 3}})).ok());
  EXPECT_EQ(s_.FindJob(j)->attempt, 1);
  ASSERT_TRUE(Apply(s_, JobLost{j, Time::FromSeconds(2)}).ok());
  EXPECT_EQ(s_.FindJob(j)->attempt, 1) << "a requeue keeps the last attempt's number";
  ASSERT_TRUE(Apply(s_, Admit(other, {{.gpu = 3}})).ok());
  EXPECT_FALSE(Apply(s_, Admit(j, {{.gpu = 3}})).ok()) << "GPU 3 is taken";
  EXPECT_EQ(s_.FindJob(j)->attempt, 1);
  ASSERT_TRUE(Apply(s_, Admit(j, {{.gpu = 2}})).ok());
  EXPECT_EQ(s_.FindJob(j)->attempt, 2);
  // A record from before counters carries its admission time in ms as the floor: 1,795,995,814,000
  // there, and the next admission goes on from it (+1), never back to a small number an agent
  // would refuse as older.
  ASSERT_TRUE(Apply(s_, JobPreempted{j, other, Time::FromSeconds(3)}).ok());
  JobAdmitted legacy = Admit(j, {{.gpu = 2}});
  legacy.min_attempt = 1'795'995'814'000;
  ASSERT_TRUE(Apply(s_, legacy).ok());
  EXPECT_EQ(s_.FindJob(j)->attempt, 1'795'995'814'000);
  ASSERT_TRUE(Apply(s_, JobLost{j, Time::FromSeconds(4)}).ok());
  ASSERT_TRUE(Apply(s_, Admit(j, {{.gpu = 2}})).ok());
  EXPECT_EQ(s_.FindJob(j)->attempt, 1'795'995'814'001);
}

TEST_F(StateTest, SpecValidationAppliesTenantLimits) {
  Tenant a = s_.tenant(*s_.FindTenant("a"));
  a.limits.max_replicas = 2;
  a.limits.default_duration = Duration::Hours(1);
  a.limits.max_duration = Duration::Hours(4);
  ASSERT_TRUE(s_.UpdateTenant(a).ok());
  JobRequest r{.tenant = "a", .shape = *WholeGpus(s_, "h100-80gb", 1)};
  const JobId j = *Submit(s_, r, Time());
  EXPECT_EQ(s_.FindJob(j)->spec.estimated_duration, Duration::Hours(1));  // the default
  r.replicas = 3;
  EXPECT_FALSE(Submit(s_, r, Time()).ok());
  r.replicas = 1;
  r.estimated = Duration::Hours(5);
  EXPECT_FALSE(Submit(s_, r, Time()).ok());
}

TEST_F(StateTest, DecayedUsageHalvesAfterOneHalfLife) {
  const JobId j = SubmitWhole("a", 2);
  ASSERT_TRUE(Apply(s_, Admit(j, {{.gpu = 2}, {.gpu = 3}})).ok());
  ASSERT_TRUE(Apply(s_, JobStarted{j, Time::FromSeconds(0)}).ok());
  ASSERT_TRUE(Apply(s_, JobFinished{j, JobState::kSucceeded, Time::FromSeconds(10)}).ok());
  const TenantId a = *s_.FindTenant("a");
  const double at_end = s_.DecayedUsages(Time::FromSeconds(10))[a.value()];
  EXPECT_NEAR(at_end, 20.0, 0.01);  // 2 GPUs x 10 s, barely decayed over 10 s of a 24 h half-life
  const double later = s_.DecayedUsages(Time::FromSeconds(10) + Duration::Hours(24))[a.value()];
  EXPECT_NEAR(later, at_end / 2, 1e-9);
}

// --- reservations ---------------------------------------------------------------------------

Reservation Res(const State& s, const std::string& tenant, int gpus, int start_s, int end_s) {
  Reservation r;
  r.id = s.NextReservationId();
  if (!tenant.empty()) r.tenant = *s.FindTenant(tenant);
  r.maintenance = tenant.empty();
  r.flavor = *s.catalogue().Find("h100-80gb");
  r.amount = GpuEq::Gpus(gpus);
  r.start = Time::FromSeconds(start_s);
  r.end = Time::FromSeconds(end_s);
  r.created = Time::FromSeconds(1);
  return r;
}

TEST_F(StateTest, ReservationsAreCreatedAndCancelledById) {
  const Reservation r = Res(s_, "a", 4, 100, 200);
  EXPECT_EQ(r.id, ReservationId(1));
  ASSERT_TRUE(Apply(s_, ReservationCreated{r}).ok());
  const Reservation m = Res(s_, "", 2, 150, 300);
  EXPECT_EQ(m.id, ReservationId(2));
  ASSERT_TRUE(Apply(s_, ReservationCreated{m}).ok());
  ASSERT_NE(s_.FindReservation(r.id), nullptr);
  EXPECT_EQ(*s_.FindReservation(r.id), r);
  EXPECT_TRUE(s_.FindReservation(m.id)->maintenance);
  EXPECT_TRUE(r.Holds(Time::FromSeconds(100)));
  EXPECT_FALSE(r.Holds(Time::FromSeconds(200)));  // [start, end)

  ASSERT_TRUE(Apply(s_, ReservationCancelled{r.id, Time::FromSeconds(5)}).ok());
  EXPECT_EQ(s_.FindReservation(r.id), nullptr);
  EXPECT_EQ(s_.reservations().size(), 1u);
  const Status again = Apply(s_, ReservationCancelled{r.id, Time::FromSeconds(6)});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
  // Ids are never reused, even after a cancel.
  EXPECT_EQ(s_.NextReservationId(), ReservationId(3));
  const State copy = s_;  // copies carry the reservations and the next id
  EXPECT_EQ(copy.reservations(), s_.reservations());
  EXPECT_EQ(copy.NextReservationId(), ReservationId(3));
}

TEST_F(StateTest, BadReservationsAreRejectedAndChangeNothing) {
  ASSERT_TRUE(Apply(s_, ReservationCreated{Res(s_, "a", 4, 100, 200)}).ok());
  const auto before = s_.reservations();
  struct Case {
    const char* what;
    Reservation r;
    ErrorCode code;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, ErrorCode code, auto&& change) {
    Reservation r = Res(s_, "b", 2, 100, 200);
    change(r);
    cases.push_back({what, r, code});
  };
  add("taken id", ErrorCode::kAlreadyExists, [](Reservation& r) { r.id = ReservationId(1); });
  add("skipped id", ErrorCode::kFailedPrecondition,
      [](Reservation& r) { r.id = ReservationId(7); });
  add("no id", ErrorCode::kInvalidArgument, [](Reservation& r) { r.id = ReservationId(); });
  add("id 0", ErrorCode::kInvalidArgument, [](Reservation& r) { r.id = ReservationId(0); });
  add("unknown tenant", ErrorCode::kInvalidArgument,
      [](Reservation& r) { r.tenant = TenantId(9); });
  add("no tenant", ErrorCode::kInvalidArgument, [](Reservation& r) { r.tenant = TenantId(); });
  add("maintenance with a tenant", ErrorCode::kInvalidArgument,
      [](Reservation& r) { r.maintenance = true; });
  add("unknown flavor", ErrorCode::kInvalidArgument,
      [](Reservation& r) { r.flavor = FlavorId(999); });
  add("no flavor", ErrorCode::kInvalidArgument, [](Reservation& r) { r.flavor = FlavorId(); });
  add("zero amount", ErrorCode::kInvalidArgument, [](Reservation& r) { r.amount = GpuEq(); });
  add("negative amount", ErrorCode::kInvalidArgument,
      [](Reservation& r) { r.amount = GpuEq::Gpus(-2); });
  add("part of a GPU", ErrorCode::kInvalidArgument,
      [](Reservation& r) { r.amount = GpuEq::MigSlices(3); });
  add("absurd amount", ErrorCode::kInvalidArgument,
      [](Reservation& r) { r.amount = Reservation::kMaxAmount + GpuEq::Gpus(1); });
  add("empty window", ErrorCode::kInvalidArgument, [](Reservation& r) { r.end = r.start; });
  add("reversed window", ErrorCode::kInvalidArgument,
      [](Reservation& r) { r.end = Time::FromSeconds(50); });
  for (const Case& c : cases) {
    const Status st = Apply(s_, ReservationCreated{c.r});
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_EQ(st.error().code, c.code) << c.what << ": " << st.error().message;
    EXPECT_EQ(s_.reservations(), before) << c.what;
    EXPECT_EQ(s_.NextReservationId(), ReservationId(2)) << c.what;
  }
  // The largest amount and an open end are fine.
  Reservation big = Res(s_, "", 0, 100, 200);
  big.amount = Reservation::kMaxAmount;
  big.end = Time::Never();
  EXPECT_TRUE(Apply(s_, ReservationCreated{big}).ok());
}

}  // namespace
}  // namespace gpupool
