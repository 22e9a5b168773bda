#include "scheduler/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/builder.h"
#include "policy/calendar/calendar.h"
#include "scheduler/session.h"

namespace gpupool {
namespace {

class ScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    t_ = *AddTenant(s_, "t", {{"h100-80gb", {4}}});
    v_ = *AddTenant(s_, "v", {{"h100-80gb", {4}}});
    ASSERT_TRUE(AddNode(s_, "n0", NodeTemplate{.flavor = "h100-80gb"}).ok());
  }
  // Submits, admits on the given GPUs and starts a job.
  JobId Run(const std::string& tenant, const std::string& pc, std::vector<uint16_t> gpus,
            int started_s) {
    const JobId id = *Submit(s_, {.tenant = tenant, .priority_class = pc,
                                  .shape = *WholeGpus(s_, "h100-80gb", static_cast<int>(gpus.size()))},
                             Time());
    std::vector<GpuGrant> grants;
    for (uint16_t g : gpus) grants.push_back({.gpu = g});
    const bool within = QuotaBook(s_).usage(*s_.FindTenant(tenant), *s_.catalogue().Find("h100-80gb")) +
                            GpuEq::Gpus(static_cast<int64_t>(gpus.size())) <=
                        GpuEq::Gpus(4);
    EXPECT_TRUE(Apply(s_, JobAdmitted{id, {{NodeId(0), grants}},
                                      within ? AdmissionKind::kGuaranteed : AdmissionKind::kBorrowed,
                                      Time()})
                    .ok());
    EXPECT_TRUE(Apply(s_, JobStarted{id, Time::FromSeconds(started_s)}).ok());
    return id;
  }
  State s_;
  TenantId t_, v_;
};

// ApplyPlan carries a plan out in application order: preemptions, then placements, then (for a
// simulated executor) the starts, each through the caller's applier; then the reasons.
TEST_F(ScheduleTest, ApplyPlanAppliesTheEventsInOrderThenStartsAndReasons) {
  const JobId q = Run("t", "training", {0, 1, 2, 3, 4, 5, 6, 7}, 100);  // t borrows 4
  const JobId j = *Submit(s_, {.tenant = "v", .shape = *WholeGpus(s_, "h100-80gb", 4)}, Time());
  const JobId big = *Submit(s_, {.tenant = "v", .shape = *WholeGpus(s_, "h100-80gb", 16)}, Time());
  const Time now = Time::FromSeconds(3600);
  const Plan plan = Schedule(s_, SchedulerConfig{}, now);
  ASSERT_EQ(plan.preemptions.size(), 1u) << Describe(s_, plan);
  ASSERT_EQ(plan.placements.size(), 1u) << Describe(s_, plan);
  ASSERT_EQ(plan.placements[0].job, j);
  std::vector<Event> seen;
  const auto apply = [&](const Event& e) {
    seen.push_back(e);
    return Apply(s_, e);
  };
  ASSERT_EQ(plan.pending.size(), 1u);
  ASSERT_EQ(plan.pending[0].job, big);
  const PendingReason before = s_.FindJob(big)->reason;
  ASSERT_NE(before, plan.ReasonOf(plan.pending[0]));
  State without_reasons = s_;
  ApplyPlan(plan, now, without_reasons, [&](const Event& e) { return Apply(without_reasons, e); },
            {.start_placed = true, .record_reasons = false});
  EXPECT_EQ(without_reasons.FindJob(big)->reason, before);

  ApplyPlan(plan, now, s_, apply, {.start_placed = true});
  ASSERT_EQ(seen.size(), 3u);
  ASSERT_TRUE(std::holds_alternative<JobPreempted>(seen[0]));
  EXPECT_EQ(std::get<JobPreempted>(seen[0]).id, q);
  ASSERT_TRUE(std::holds_alternative<JobAdmitted>(seen[1]));
  EXPECT_EQ(std::get<JobAdmitted>(seen[1]).id, j);
  ASSERT_TRUE(std::holds_alternative<JobStarted>(seen[2]));
  EXPECT_EQ(std::get<JobStarted>(seen[2]).id, j);
  EXPECT_EQ(std::get<JobStarted>(seen[2]).at, now);
  EXPECT_EQ(s_.FindJob(q)->state, JobState::kPending);  // preempted, back in the queue
  EXPECT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  EXPECT_EQ(s_.FindJob(big)->reason, plan.ReasonOf(plan.pending[0]));  // why the 16-GPU job waits
  EXPECT_EQ(without_reasons.FindJob(j)->state, JobState::kRunning);

  // Without starts (the daemon: its agents start the job), the placement stays admitted.
  State daemon_like = without_reasons;
  const JobId k = *Submit(daemon_like, {.tenant = "v", .shape = *WholeGpus(daemon_like, "h100-80gb", 2)}, now);
  const Plan next = Schedule(daemon_like, SchedulerConfig{}, now);
  ASSERT_EQ(next.placements.size(), 1u) << Describe(daemon_like, next);
  ApplyPlan(next, now, daemon_like, [&](const Event& e) { return Apply(daemon_like, e); });
  EXPECT_EQ(daemon_like.FindJob(k)->state, JobState::kAdmitted);
}

// A plan whose event does not apply is a scheduler bug: carrying it out stops, it never goes on
// half done.
TEST_F(ScheduleTest, ApplyPlanStopsOnAnEventThatDoesNotApply) {
  const JobId j = *Submit(s_, {.tenant = "v", .shape = *WholeGpus(s_, "h100-80gb", 4)}, Time());
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time());
  ASSERT_EQ(plan.placements.size(), 1u);
  ASSERT_TRUE(Apply(s_, JobFinished{j, JobState::kCancelled, Time()}).ok());  // gone meanwhile
  EXPECT_DEATH(ApplyPlan(plan, Time(), s_, [&](const Event& e) { return Apply(s_, e); }),
               "a plan's event did not apply");
}

TEST_F(ScheduleTest, APreemptedJobNeverPreemptsItsPreemptor) {
  // j (tenant v) was once preempted by p (tenant t). Now t borrows 4 with p and q; j is within
  // v's guarantee and may reclaim 4 GPUs from t. p started last, so it would be the first
  // victim, but j may not preempt its own preemptor: q goes instead.
  const JobId j = Run("v", "training", {0, 1, 2, 3}, 0);
  const JobId q = Run("t", "training", {4, 5, 6, 7}, 100);
  const JobId p = *Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 4)}, Time());
  ASSERT_TRUE(Apply(s_, JobPreempted{j, p, Time::FromSeconds(500)}).ok());
  ASSERT_TRUE(Apply(s_, JobAdmitted{p, {{NodeId(0), {{.gpu = 0}, {.gpu = 1}, {.gpu = 2}, {.gpu = 3}}}},
                                    AdmissionKind::kBorrowed, Time::FromSeconds(500)})
                  .ok());
  ASSERT_TRUE(Apply(s_, JobStarted{p, Time::FromSeconds(500)}).ok());
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(3600));
  ASSERT_EQ(plan.preemptions.size(), 1u) << Describe(s_, plan);
  EXPECT_EQ(plan.preemptions[0].victim, q);
  EXPECT_EQ(plan.preemptions[0].preemptor, j);
  EXPECT_EQ(plan.preemptions[0].kind, PreemptKind::kReclaim);
}

TEST_F(ScheduleTest, WithOnlyThePreemptorAsVictimTheJobWaits) {
  const JobId j = Run("v", "training", {0, 1, 2, 3}, 0);
  Run("t", "inference", {4, 5, 6, 7}, 100);  // within t's guarantee, not preemptible
  const JobId p = *Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 4)}, Time());
  ASSERT_TRUE(Apply(s_, JobPreempted{j, p, Time::FromSeconds(500)}).ok());
  ASSERT_TRUE(Apply(s_, JobAdmitted{p, {{NodeId(0), {{.gpu = 0}, {.gpu = 1}, {.gpu = 2}, {.gpu = 3}}}},
                                    AdmissionKind::kBorrowed, Time::FromSeconds(500)})
                  .ok());
  ASSERT_TRUE(Apply(s_, JobStarted{p, Time::FromSeconds(500)}).ok());
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(3600));
  EXPECT_TRUE(plan.preemptions.empty()) << Describe(s_, plan);
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(plan.pending[0].job, j);
}

// Issue 14, item 9: a node with a deadline (an on-demand node paid for until then) takes only
// jobs expected to end by it; a job without an estimate never fits one.
TEST_F(ScheduleTest, ANodeWithADeadlineTakesOnlyJobsThatEndByIt) {
  ASSERT_TRUE(Apply(s_, NodeConditionChanged{NodeId(0), NodeCondition::kCordoned, Time()}).ok());
  const NodeId od = *AddNode(s_, "od", NodeTemplate{.flavor = "h100-80gb", .dedicated_to = "t"});
  auto submit = [&](Duration est) {
    return *Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 8), .estimated = est}, Time());
  };
  const JobId endless = submit(Duration::Infinite());
  const JobId two_hours = submit(Duration::Hours(2));
  const JobId half_hour = submit(Duration::Minutes(30));
  const Time now = Time::FromSeconds(10);
  auto placed = [&](const NodeDeadlines& d) {
    const Plan plan = Schedule(s_, SchedulerConfig{}, now, d);
    EXPECT_LE(plan.placements.size(), 1u) << Describe(s_, plan);
    return plan.placements.empty() ? JobId() : plan.placements[0].job;
  };
  // Without a deadline the oldest job takes the node; with one, the first that ends by it.
  EXPECT_EQ(placed({}), endless);
  EXPECT_EQ(placed({{od, now + Duration::Hours(1)}}), half_hour);
  EXPECT_EQ(placed({{od, now + Duration::Hours(2)}}), two_hours);
  EXPECT_EQ(placed({{od, now + Duration::Hours(10'000)}}), two_hours);
  EXPECT_EQ(placed({{od, now}}), JobId());
  // What waits for the deadline is not told a backfill hold blocks it.
  const Plan plan = Schedule(s_, SchedulerConfig{}, now, {{od, now}});
  for (const PendingNote& n : plan.pending) {
    EXPECT_NE(plan.reasons[n.reason].code, ReasonCode::kHeldForBackfill) << plan.reasons[n.reason].message;
  }
}

TEST_F(ScheduleTest, SessionRollbackRestoresClassesAndQuota) {
  Run("t", "training", {0, 1}, 0);
  SchedulerConfig cfg;
  auto policy = MakePlacementPolicy("fgd", WorkloadMixOf(s_), true);
  ASSERT_TRUE(policy.ok());
  Session session(s_, **policy, Time::FromSeconds(10));
  const FlavorId f = *s_.catalogue().Find("h100-80gb");
  const uint32_t cls = session.slot(0).cls;
  const GpuEq usage = session.quota().usage(t_, f);
  const size_t mark = session.Mark();
  session.SetKey(0, 5, GpuKey::Whole(true));
  session.QuotaAdd(t_, f, GpuEq::Gpus(1));
  session.Release(*s_.FindJob(JobId(1)), s_.FindJob(JobId(1))->placement);
  EXPECT_NE(session.slot(0).cls, cls);
  session.RollbackTo(mark);
  EXPECT_EQ(session.slot(0).cls, cls);
  EXPECT_EQ(session.quota().usage(t_, f), usage);
  EXPECT_EQ(session.members(cls).count(0), 1u);
}

TEST_F(ScheduleTest, EveryWaitingJobHasAReasonAndThePlanIsStable) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 4)}, Time()).ok());
  }
  const Plan a = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(1));
  const Plan b = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(1));
  EXPECT_EQ(Describe(s_, a), Describe(s_, b));
  EXPECT_EQ(a.placements.size() + a.pending.size(), 5u);
  for (const PendingNote& n : a.pending) EXPECT_FALSE(a.ReasonOf(n).message.empty());
}

TEST(MaintenanceTest, ReclaimUnderMaintenanceTakesVictimsFromAnyNode) {
  // Two nodes of 8. c borrows one GPU on each. A maintenance window takes 14 of the 16 out of
  // the pool, so the pool is 2 and c's 2 fill it. a asks for 2 within its guarantee: both
  // nodes have 7 idle GPUs, but the pool has room only once both of c's jobs are gone. Freeing
  // the node a lands on is not enough; victims come from the other node too.
  State s;
  AddDefaultPriorityClasses(s);
  ASSERT_TRUE(AddTenant(s, "a", {{"h100-80gb", {8}}}).ok());
  ASSERT_TRUE(AddTenant(s, "b", {{"h100-80gb", {8}}}).ok());
  ASSERT_TRUE(AddTenant(s, "c", {{"h100-80gb", {0}}}).ok());
  ASSERT_TRUE(AddNode(s, "n0", NodeTemplate{.flavor = "h100-80gb"}).ok());
  ASSERT_TRUE(AddNode(s, "n1", NodeTemplate{.flavor = "h100-80gb"}).ok());
  std::vector<JobId> borrowed;
  for (uint32_t n = 0; n < 2; ++n) {
    const JobId id = *Submit(s, {.tenant = "c", .priority_class = "batch",
                                 .shape = *WholeGpus(s, "h100-80gb", 1)}, Time());
    ASSERT_TRUE(Apply(s, JobAdmitted{id, {{NodeId(n), {{.gpu = 0}}}}, AdmissionKind::kBorrowed,
                                     Time()}).ok());
    ASSERT_TRUE(Apply(s, JobStarted{id, Time()}).ok());
    borrowed.push_back(id);
  }
  const Reservation m{.id = s.NextReservationId(), .flavor = *s.catalogue().Find("h100-80gb"),
                      .amount = GpuEq::Gpus(14), .start = Time::FromSeconds(1800),
                      .end = Time::FromSeconds(7200), .maintenance = true};
  ASSERT_TRUE(Apply(s, ReservationCreated{m}).ok());
  const JobId job = *Submit(s, {.tenant = "a", .shape = *WholeGpus(s, "h100-80gb", 2)},
                            Time::FromSeconds(3000));
  const Plan plan = Schedule(s, SchedulerConfig{}, Time::FromSeconds(3600));
  ASSERT_EQ(plan.placements.size(), 1u) << Describe(s, plan);
  EXPECT_EQ(plan.placements[0].job, job);
  EXPECT_EQ(plan.placements[0].kind, AdmissionKind::kGuaranteed);
  ASSERT_EQ(plan.preemptions.size(), 2u) << Describe(s, plan);
  for (const PreemptDecision& d : plan.preemptions) {
    EXPECT_NE(std::find(borrowed.begin(), borrowed.end(), d.victim), borrowed.end());
    EXPECT_EQ(d.kind, PreemptKind::kReclaim);
  }
  // Before the window the pool is whole: a is placed and nobody is preempted.
  const Plan before = Schedule(s, SchedulerConfig{}, Time::FromSeconds(1799));
  EXPECT_EQ(before.placements.size(), 1u);
  EXPECT_TRUE(before.preemptions.empty());
}

TEST(ConfigTest, UnknownPolicyIsRejectedUpFront) {
  SchedulerConfig cfg;
  cfg.placement = "magic";
  EXPECT_FALSE(Validate(cfg).ok());
  cfg.placement = "bestfit";
  cfg.fair_share.usage_blend = 1.5;
  EXPECT_FALSE(Validate(cfg).ok());
}

}  // namespace
}  // namespace gpupool

namespace gpupool {
namespace {

// t runs 8 GPUs on its guarantee of 4: one job borrows. v asks for its guarantee of 4.
class MinRuntimeTest : public ScheduleTest {
 protected:
  void SetUp() override {
    ScheduleTest::SetUp();
    // A class whose jobs may be preempted after one minute instead of the scheduler's five.
    PriorityClass quick{PriorityClassId(), "quick", 500, true, true, Duration::Seconds(30), Duration::Seconds(60)};
    ASSERT_TRUE(s_.AddPriorityClass(quick).ok());
  }
  JobId Want(const std::string& tenant) {
    return *Submit(s_, {.tenant = tenant, .shape = *WholeGpus(s_, "h100-80gb", 4)}, Time());
  }
};

TEST_F(MinRuntimeTest, EachClassHasItsOwnMinimumRuntime) {
  Run("t", "training", {0, 1, 2, 3}, 0);
  const JobId quick = Run("t", "quick", {4, 5, 6, 7}, 0);
  Want("v");
  // At 2 minutes the quick job has run its minute, the training job not its five.
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(120));
  ASSERT_EQ(plan.preemptions.size(), 1u) << Describe(s_, plan);
  EXPECT_EQ(plan.preemptions[0].victim, quick);
}

TEST_F(MinRuntimeTest, AReclaimThatWaitsForTheMinimumRuntimeSaysFromWhomAndWhen) {
  Run("t", "training", {0, 1, 2, 3}, 0);
  Run("t", "training", {4, 5, 6, 7}, 60);
  const JobId j = Want("v");
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(100));
  EXPECT_TRUE(plan.preemptions.empty());
  ASSERT_EQ(plan.pending.size(), 1u);
  ASSERT_EQ(plan.pending[0].job, j);
  // The job started first is preemptible first: at 5 minutes.
  const std::string msg = plan.ReasonOf(plan.pending[0]).message;
  EXPECT_EQ(msg.rfind("reclaiming 4 GPUs from tenant t; earliest at " + Rfc3339(Time::FromSeconds(300)), 0), 0u) << msg;
  // Once there, the reclaim happens.
  EXPECT_EQ(Schedule(s_, SchedulerConfig{}, Time::FromSeconds(300)).preemptions.size(), 1u);
}

TEST_F(MinRuntimeTest, NoReclaimWaitIsClaimedWhenNothingBorrowed) {
  Run("t", "training", {0, 1, 2, 3}, 0);       // within t's guarantee
  Run("v", "training", {4, 5, 6, 7}, 0);       // v at its guarantee
  Want("v");                                   // beyond it: v would borrow, nothing to reclaim
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(100));
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(plan.ReasonOf(plan.pending[0]).message.find("reclaiming"), std::string::npos);
}

}  // namespace
}  // namespace gpupool

namespace gpupool {
namespace {

// Four nodes: CUDA 12.4 and 12.6 drivers, one of the 12.6 ones a spot node.
class SelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    ASSERT_TRUE(AddTenant(s_, "t", {{"h100-80gb", {32}}}).ok());
    const std::vector<std::pair<std::string, std::vector<std::string>>> nodes = {
        {"a", {"cuda=12.4"}}, {"b", {"cuda=12.6"}}, {"c", {"cuda=12.6", "spot=true"}}, {"d", {}}};
    for (const auto& [name, labels] : nodes) {
      ASSERT_TRUE(AddNode(s_, name, NodeTemplate{.flavor = "h100-80gb", .labels = labels}).ok());
    }
  }
  // The nodes a job with `sel` may be placed on, found by placing one 8-GPU job at a time on an
  // otherwise idle cluster with every other node taken away.
  std::string PlacedOn(std::vector<LabelRequirement> sel) {
    State s = s_;
    const JobId id = *Submit(s, {.tenant = "t", .shape = *WholeGpus(s, "h100-80gb", 8), .node_selector = sel}, Time());
    const Plan plan = Schedule(s, SchedulerConfig{}, Time());
    if (plan.placements.empty()) return "-" + plan.ReasonOf(plan.pending[0]).message;
    EXPECT_EQ(plan.placements[0].job, id);
    EXPECT_TRUE(Apply(s, PlanToEvents(plan, Time())[0]).ok()) << "the model accepts the placement";
    return s.node(plan.placements[0].placement[0].node).name;
  }
  State s_;
};

TEST_F(SelectorTest, EachOperatorPicksTheNodesItShould) {
  EXPECT_EQ(PlacedOn({{"cuda", SelectorOp::kIn, {"12.4"}}}), "a");
  const std::string not_spot = PlacedOn({{"cuda", SelectorOp::kIn, {"12.6"}}, {"spot", SelectorOp::kDoesNotExist}});
  EXPECT_EQ(not_spot, "b");
  EXPECT_EQ(PlacedOn({{"spot", SelectorOp::kExists}}), "c");
  const std::string unlabelled = PlacedOn({{"cuda", SelectorOp::kNotIn, {"12.4", "12.6"}}});
  EXPECT_EQ(unlabelled, "d") << "NotIn holds where the key is absent";
}

TEST_F(SelectorTest, AnUnmetSelectorIsTheReason) {
  const std::string r = PlacedOn({{"cuda", SelectorOp::kIn, {"13.0"}}});
  EXPECT_EQ(r, "-no ready h100-80gb node offered to tenant t matches node_selector cuda=13.0");
}

TEST_F(SelectorTest, TheModelRefusesAPlacementOutsideTheSelector) {
  const JobId id = *Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 1),
                                .node_selector = {{"cuda", SelectorOp::kIn, {"12.4"}}}}, Time());
  const Status st = Apply(s_, JobAdmitted{id, {{NodeId(1), {{.gpu = 0}}}}, AdmissionKind::kGuaranteed, Time()});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("does not match the job's node_selector cuda=12.4"), std::string::npos);
}

TEST_F(SelectorTest, JobsWithOtherSelectorsDoNotShareAFailure) {
  // Node a is full; a 12.4 job waits, a job of the same shape for 12.6 must still be placed.
  ASSERT_TRUE(Apply(s_, JobAdmitted{*Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 8)}, Time()),
                                    {{NodeId(0), {{.gpu = 0}, {.gpu = 1}, {.gpu = 2}, {.gpu = 3}, {.gpu = 4}, {.gpu = 5}, {.gpu = 6}, {.gpu = 7}}}},
                                    AdmissionKind::kGuaranteed, Time()})
                  .ok());
  const JobId old = *Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 8),
                                 .node_selector = {{"cuda", SelectorOp::kIn, {"12.4"}}}}, Time());
  const JobId fresh = *Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", 8),
                                   .node_selector = {{"cuda", SelectorOp::kIn, {"12.6"}}}}, Time());
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time());
  ASSERT_EQ(plan.placements.size(), 1u) << Describe(s_, plan);
  EXPECT_EQ(plan.placements[0].job, fresh);
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(plan.pending[0].job, old);
}

}  // namespace
}  // namespace gpupool

namespace gpupool {
namespace {

// t is guaranteed 4 of the node's 8 GPUs and holds reservation 1 for the other 4, in force
// from 0 to 10 hours: 8 guaranteed while it lasts.
class NamedReservationTest : public ScheduleTest {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    t_ = *AddTenant(s_, "t", {{"h100-80gb", {4}}});
    ASSERT_TRUE(AddNode(s_, "n0", NodeTemplate{.flavor = "h100-80gb"}).ok());
    Reservation r{.id = ReservationId(1), .tenant = t_, .flavor = *s_.catalogue().Find("h100-80gb"),
                  .amount = GpuEq::Gpus(4), .start = Time(), .end = Time::FromSeconds(36000), .created = Time()};
    ASSERT_TRUE(Apply(s_, ReservationCreated{r}).ok());
  }
  JobId Want(bool named, int gpus = 4) {
    return *Submit(s_, {.tenant = "t", .shape = *WholeGpus(s_, "h100-80gb", gpus),
                        .reservation = named ? ReservationId(1) : ReservationId()}, Time());
  }
};

TEST_F(NamedReservationTest, TheReservedCapacityGoesToNamedJobsFirst) {
  const JobId unnamed = Want(false), named = Want(true), later = Want(false);
  (void)later;
  // Room for two of the three: the named job is placed whatever the submission order.
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(60));
  ASSERT_EQ(plan.placements.size(), 2u) << Describe(s_, plan);
  EXPECT_EQ(plan.placements[0].job, named);
  EXPECT_EQ(plan.placements[0].kind, AdmissionKind::kGuaranteed);
  EXPECT_EQ(plan.placements[1].job, unnamed);
}

TEST_F(NamedReservationTest, ANamedJobTakesItsCapacityBackFromTheTenantsOtherWork) {
  // The tenant's unnamed jobs fill the node (its guarantee is 8 while the reservation lasts).
  Run("t", "training", {0, 1, 2, 3}, 0);
  const JobId young = Run("t", "training", {4, 5, 6, 7}, 100);
  const JobId named = Want(true);
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(3600));
  ASSERT_EQ(plan.preemptions.size(), 1u) << Describe(s_, plan);
  EXPECT_EQ(plan.preemptions[0].victim, young) << "the most recently started";
  EXPECT_EQ(plan.preemptions[0].preemptor, named);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].kind, AdmissionKind::kGuaranteed);
}

TEST_F(NamedReservationTest, ANamedJobNeverBorrowsBeyondItsReservation) {
  const JobId first = Want(true, 4), second = Want(true, 2);  // 6 of a 4-GPU reservation
  const Plan plan = Schedule(s_, SchedulerConfig{}, Time::FromSeconds(60));
  ASSERT_EQ(plan.placements.size(), 1u) << Describe(s_, plan);
  EXPECT_EQ(plan.placements[0].job, first);
  ASSERT_EQ(plan.pending.size(), 1u) << "4 GPUs stay idle: the second waits for its reservation";
  EXPECT_EQ(plan.pending[0].job, second);
  EXPECT_EQ(plan.ReasonOf(plan.pending[0]).code, ReasonCode::kReservation);
}

}  // namespace
}  // namespace gpupool
