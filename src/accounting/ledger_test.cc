// Ledger: intervals open at admission and close at finish, preemption or loss. Jobs are placed
// by the real scheduler so every event fed to the ledger is one Apply accepts.
#include "accounting/ledger.h"

#include <gtest/gtest.h>

#include "model/builder.h"
#include "scheduler/plan.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

constexpr int64_t kHourMs = 3'600'000;

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    ASSERT_TRUE(AddTenant(s_, "a", {{"h100-80gb", {.guaranteed = 8}}}).ok());
    ASSERT_TRUE(AddTenant(s_, "b", {{"h100-80gb", {.guaranteed = 0, .borrow_limit = 8}}}).ok());
    ASSERT_TRUE(AddNode(s_, "n1", {.flavor = "h100-80gb", .gpus = 8}).ok());
    ASSERT_TRUE(
        AddNode(s_, "n2", {.flavor = "h100-80gb", .gpus = 4, .mig_gpus = 2, .shared_gpus = 2})
            .ok());
  }

  // Observes, then applies: the order the daemon will use (state before the event).
  void Feed(const Event& e) {
    Status o = ledger_.Observe(s_, e);
    ASSERT_TRUE(o.ok()) << o.error().message;
    Status a = Apply(s_, e);
    ASSERT_TRUE(a.ok()) << a.error().message;
  }
  void Cycle(Time now) {
    const Plan plan = Schedule(s_, SchedulerConfig{}, now);
    for (const Event& e : PlanToEvents(plan, now)) Feed(e);
    RecordReasons(s_, plan);
  }
  JobId SubmitJob(const std::string& tenant, ReplicaShape shape, uint16_t replicas, Time at) {
    Result<JobId> id = Submit(s_, {.tenant = tenant, .shape = shape, .replicas = replicas}, at);
    GP_CHECK(id.ok()) << id.error().message;
    return *id;
  }

  State s_;
  Ledger ledger_;
};

TEST_F(LedgerTest, AdmissionToFinishIsOneInterval) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 2), 1, Time::FromSeconds(0));
  Cycle(Time::FromSeconds(10));  // admitted at 10 s: billing starts, GPUs are held
  ASSERT_EQ(ledger_.open().size(), 1u);
  Feed(JobStarted{j, Time::FromSeconds(20)});  // starting changes nothing
  EXPECT_TRUE(ledger_.closed().empty());
  Feed(JobFinished{j, JobState::kSucceeded, Time::FromSeconds(10 + 3600)});
  ASSERT_EQ(ledger_.closed().size(), 1u);
  EXPECT_TRUE(ledger_.open().empty());
  const UsageInterval& u = ledger_.closed()[0];
  EXPECT_EQ(u.tenant, TenantId(0));
  EXPECT_EQ(u.job, j);
  EXPECT_EQ(u.flavor, *s_.catalogue().Find("h100-80gb"));
  EXPECT_EQ(u.shape, "2 h100-80gb");
  EXPECT_EQ(u.eq, GpuEq::Gpus(2));
  EXPECT_EQ(u.start, Time::FromSeconds(10));
  EXPECT_EQ(u.end, Time::FromSeconds(3610));
  EXPECT_EQ(u.kind, UsageKind::kGuaranteed);
  EXPECT_FALSE(u.open);
  // Two GPU-hours: 2 x 7000 units x 3.6e6 ms.
  EXPECT_TRUE(u.unit_millis() == static_cast<UnitMillis>(2 * kUnitMillisPerGpuHour));
}

TEST_F(LedgerTest, PreemptionClosesAndReadmissionOpensAnother) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 1), 1, Time::FromSeconds(0));
  const JobId other = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 1), 1, Time::FromSeconds(0));
  Cycle(Time::FromSeconds(0));
  Feed(JobPreempted{j, other, Time::FromSeconds(600)});
  ASSERT_EQ(ledger_.closed().size(), 1u);
  EXPECT_EQ(ledger_.closed()[0].job, j);
  EXPECT_EQ(ledger_.closed()[0].end, Time::FromSeconds(600));
  EXPECT_EQ(ledger_.closed()[0].kind, UsageKind::kGuaranteed);  // the holder pays what it held
  Cycle(Time::FromSeconds(700));  // requeued and admitted again: a new interval
  ASSERT_EQ(ledger_.open().count(j), 1u);
  EXPECT_EQ(ledger_.open().at(j).start, Time::FromSeconds(700));
}

TEST_F(LedgerTest, LostTimeIsInfrastructureFailure) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 4), 1, Time::FromSeconds(0));
  Cycle(Time::FromSeconds(0));
  Feed(JobStarted{j, Time::FromSeconds(1)});
  Feed(JobLost{j, Time::FromSeconds(1800)});
  ASSERT_EQ(ledger_.closed().size(), 1u);
  EXPECT_EQ(ledger_.closed()[0].kind, UsageKind::kInfrastructureFailure);
  EXPECT_EQ(ledger_.closed()[0].end, Time::FromSeconds(1800));
  EXPECT_EQ(ledger_.closed()[0].eq, GpuEq::Gpus(4));
}

// Issue 14, item 9: a job cut short because its tenant's on-demand budget is spent ran on
// capacity the tenant paid for; its interval closes as it was admitted, billed. Any other cause
// of a requeue is still infrastructure's.
TEST_F(LedgerTest, ABudgetStopIsBilledUseNotInfrastructureFailure) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 4), 1, Time::FromSeconds(0));
  Cycle(Time::FromSeconds(0));
  Feed(JobLost{j, Time::FromSeconds(1800), RequeueCause::kBudget, "the on-demand budget is spent"});
  ASSERT_EQ(ledger_.closed().size(), 1u);
  EXPECT_EQ(ledger_.closed()[0].kind, UsageKind::kGuaranteed);
  EXPECT_EQ(ledger_.closed()[0].end, Time::FromSeconds(1800));
  Cycle(Time::FromSeconds(1900));
  Feed(JobLost{j, Time::FromSeconds(2000), RequeueCause::kReleased, ""});
  ASSERT_EQ(ledger_.closed().size(), 2u);
  EXPECT_EQ(ledger_.closed()[1].kind, UsageKind::kInfrastructureFailure);
}

TEST_F(LedgerTest, MigAndFractionsCountByGpuEquivalents) {
  // 3g.40gb is 3 of 7 compute slices: 3000 units. 250 milli-GPUs x 2 replicas: 2 x 1750 units.
  const JobId mig = SubmitJob("a", *MigShape(s_, "h100-80gb", "3g.40gb"), 1, Time());
  const JobId frac = SubmitJob("a", *FractionShape(s_, "h100-80gb", 250, 8192), 2, Time());
  Cycle(Time());
  ASSERT_EQ(ledger_.open().size(), 2u);
  EXPECT_EQ(ledger_.open().at(mig).eq, GpuEq::Units(3000));
  EXPECT_EQ(ledger_.open().at(frac).eq, GpuEq::Units(3500));
  EXPECT_EQ(ledger_.open().at(frac).replicas, 2);
  EXPECT_EQ(ledger_.open().at(mig).shape, "h100-80gb MIG 3g.40gb");
}

TEST_F(LedgerTest, MultiReplicaAndBorrowedKind) {
  // Tenant b has no guarantee: its gang of 3 x 2 GPUs runs on borrowed capacity.
  const JobId j = SubmitJob("b", *WholeGpus(s_, "h100-80gb", 2), 3, Time());
  Cycle(Time());
  ASSERT_EQ(ledger_.open().count(j), 1u);
  EXPECT_EQ(ledger_.open().at(j).eq, GpuEq::Gpus(6));
  EXPECT_EQ(ledger_.open().at(j).kind, UsageKind::kBorrowed);
}

TEST_F(LedgerTest, SnapshotCutsOpenIntervalsWithoutChangingTheLedger) {
  const JobId done = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 1), 1, Time());
  const JobId running = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 1), 1, Time());
  Cycle(Time::FromSeconds(100));
  Feed(JobFinished{done, JobState::kFailed, Time::FromSeconds(200)});
  const std::vector<UsageInterval> snap = ledger_.Snapshot(Time::FromSeconds(500));
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].job, done);  // closed ones first
  EXPECT_FALSE(snap[0].open);
  EXPECT_EQ(snap[1].job, running);
  EXPECT_TRUE(snap[1].open);
  EXPECT_EQ(snap[1].end, Time::FromSeconds(500));
  EXPECT_EQ(ledger_.closed().size(), 1u);
  EXPECT_EQ(ledger_.open().at(running).end, Time::FromSeconds(100));
  // A snapshot before the start cuts at the start: zero length, never negative.
  EXPECT_EQ(ledger_.Snapshot(Time::FromSeconds(50))[1].end, Time::FromSeconds(100));
}

TEST_F(LedgerTest, EventsThatMoveNoResourcesChangeNothing) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 8), 1, Time());
  Feed(JobFinished{j, JobState::kCancelled, Time::FromSeconds(5)});  // cancelled while pending
  Feed(NodeConditionChanged{NodeId(0), NodeCondition::kCordoned, Time::FromSeconds(6)});
  EXPECT_TRUE(ledger_.closed().empty());
  EXPECT_TRUE(ledger_.open().empty());
}

TEST_F(LedgerTest, RefusesEventsThatDoNotFitAndChangesNothing) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 1), 1, Time());
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(10));
  const std::vector<Event> events = PlanToEvents(plan, Time::FromSeconds(10));
  ASSERT_EQ(events.size(), 1u);
  // Applied without the ledger seeing it: the release has no interval to close.
  ASSERT_TRUE(Apply(s_, events[0]).ok());
  Status s = ledger_.Observe(s_, JobFinished{j, JobState::kSucceeded, Time::FromSeconds(20)});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(ledger_.closed().empty());

  // An admission seen twice.
  State fresh = s_;
  Ledger l2;
  ASSERT_TRUE(Apply(fresh, JobLost{j, Time::FromSeconds(30)}).ok());
  const JobAdmitted again{j, std::get<JobAdmitted>(events[0]).placement, AdmissionKind::kGuaranteed,
                          Time::FromSeconds(40)};
  ASSERT_TRUE(l2.Observe(fresh, again).ok());
  EXPECT_FALSE(l2.Observe(fresh, again).ok());
  EXPECT_EQ(l2.open().size(), 1u);

  // A release before the admission.
  ASSERT_TRUE(Apply(fresh, again).ok());
  EXPECT_FALSE(l2.Observe(fresh, JobLost{j, Time::FromSeconds(39)}).ok());
  EXPECT_EQ(l2.open().size(), 1u);
  EXPECT_TRUE(l2.closed().empty());
}

// ApplyMetered changes the state and the ledger together or neither: a ledger refusal leaves
// the state as it was (kInternal: the two are out of step), and so does a refusal by Apply.
TEST_F(LedgerTest, ApplyMeteredChangesBothOrNeither) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 1), 1, Time());
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(10));
  ApplyPlan(plan, Time::FromSeconds(10), s_,
            [&](const Event& e) { return ApplyMetered(s_, ledger_, e); }, {.start_placed = true});
  EXPECT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  ASSERT_EQ(ledger_.open().size(), 1u);

  // The state refuses (an outcome that is not final), though the ledger would close: neither
  // changes.
  Status bad = ApplyMetered(s_, ledger_, JobFinished{j, JobState::kRunning, Time::FromSeconds(20)});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  EXPECT_EQ(ledger_.open().size(), 1u);

  // The ledger refuses (it never saw the admission): neither changes.
  Ledger blind;
  Status refused = ApplyMetered(s_, blind, JobFinished{j, JobState::kSucceeded, Time::FromSeconds(20)});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInternal);
  EXPECT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  EXPECT_TRUE(blind.closed().empty());

  ASSERT_TRUE(ApplyMetered(s_, ledger_, JobFinished{j, JobState::kSucceeded, Time::FromSeconds(20)}).ok());
  EXPECT_EQ(ledger_.closed().size(), 1u);
  EXPECT_TRUE(ledger_.open().empty());
}

TEST(UnitMillisTest, RendersBeyondInt64) {
  EXPECT_EQ(UnitMillisToString(0), "0");
  EXPECT_EQ(UnitMillisToString(-42), "-42");
  const UnitMillis big = static_cast<UnitMillis>(std::numeric_limits<int64_t>::max()) * 10 + 3;
  EXPECT_EQ(UnitMillisToString(big), "92233720368547758073");
}

TEST_F(LedgerTest, PrepareChangesNothingUntilCommit) {
  const JobId j = SubmitJob("a", *WholeGpus(s_, "h100-80gb", 2), 1, Time::FromSeconds(0));
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(10));
  const std::vector<Event> events = PlanToEvents(plan, Time::FromSeconds(10));
  ASSERT_EQ(events.size(), 1u);
  Result<LedgerChange> c = ledger_.Prepare(s_, events[0]);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(ledger_.open().empty());  // prepared, not committed
  ASSERT_TRUE(Apply(s_, events[0]).ok());
  ledger_.Commit(std::move(c).value());
  ASSERT_EQ(ledger_.open().size(), 1u);
  EXPECT_EQ(ledger_.open().begin()->first, j);
  // A second admission of the same job is refused by Prepare, which still changes nothing.
  EXPECT_FALSE(ledger_.Prepare(s_, events[0]).ok());
  EXPECT_EQ(ledger_.open().size(), 1u);
}

// A job that names a reservation waits until the window opens, runs inside the reservation's
// amount, and its interval carries the reservation; cancelling cuts the billed window.
TEST_F(LedgerTest, ReservationsAndTheJobsThatNameThem) {
  const FlavorId h100 = *s_.catalogue().Find("h100-80gb");
  Reservation r;
  r.id = s_.NextReservationId();
  r.tenant = TenantId(0);
  r.flavor = h100;
  r.amount = GpuEq::Gpus(2);
  r.start = Time::FromSeconds(100);
  r.end = Time::FromSeconds(100 + 4 * 3600);
  Feed(ReservationCreated{r});
  ASSERT_EQ(ledger_.Reservations().size(), 1u);

  Result<JobId> j = Submit(s_, {.tenant = "a", .shape = *WholeGpus(s_, "h100-80gb", 2), .reservation = r.id},
                           Time::FromSeconds(0));
  ASSERT_TRUE(j.ok()) << j.error().message;
  Result<JobId> k = Submit(s_, {.tenant = "a", .shape = *WholeGpus(s_, "h100-80gb", 1), .reservation = r.id},
                           Time::FromSeconds(0));
  ASSERT_TRUE(k.ok());
  // Larger than the reservation, another tenant's, or of another flavor: refused at submission.
  EXPECT_FALSE(Submit(s_, {.tenant = "a", .shape = *WholeGpus(s_, "h100-80gb", 3), .reservation = r.id},
                      Time::FromSeconds(0)).ok());
  EXPECT_FALSE(Submit(s_, {.tenant = "b", .shape = *WholeGpus(s_, "h100-80gb", 1), .reservation = r.id},
                      Time::FromSeconds(0)).ok());

  Cycle(Time::FromSeconds(10));  // before the window: both wait
  EXPECT_TRUE(ledger_.open().empty());
  EXPECT_EQ(s_.FindJob(*j)->reason.code, ReasonCode::kReservation);
  Cycle(Time::FromSeconds(100));  // in force: the 2-GPU job fits, the 1-GPU one would exceed it
  ASSERT_EQ(ledger_.open().size(), 1u);
  EXPECT_EQ(ledger_.open().begin()->second.reservation, r.id);
  EXPECT_EQ(s_.FindJob(*k)->state, JobState::kPending);
  EXPECT_EQ(s_.FindJob(*k)->reason.code, ReasonCode::kReservation);
  EXPECT_NE(s_.FindJob(*k)->reason.message.find("this job needs 1"), std::string::npos)
      << s_.FindJob(*k)->reason.message;

  Feed(ReservationCancelled{r.id, Time::FromSeconds(3700)});
  ASSERT_EQ(ledger_.Reservations().size(), 1u);
  EXPECT_EQ(ledger_.Reservations()[0].end, Time::FromSeconds(3700));
  Cycle(Time::FromSeconds(3800));
  EXPECT_NE(s_.FindJob(*k)->reason.message.find("cancelled"), std::string::npos);
}

}  // namespace
}  // namespace gpupool
