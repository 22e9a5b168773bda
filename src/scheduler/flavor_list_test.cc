// Jobs that accept several GPU models in order of preference (JobSpec::flavors).
#include <gtest/gtest.h>

#include "accounting/ledger.h"
#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class FlavorListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    h100_ = *s_.catalogue().Find("h100-80gb");
    a100_ = *s_.catalogue().Find("a100-80gb");
    ASSERT_TRUE(AddTenant(s_, "t", {{"h100-80gb", {4}}, {"a100-80gb", {4}}}).ok());
    ASSERT_TRUE(AddTenant(s_, "b", {{"h100-80gb", {0, 8}}, {"a100-80gb", {0, 8}}}).ok());
    ASSERT_TRUE(AddNode(s_, "h", {.flavor = "h100-80gb", .gpus = 4}).ok());
    ASSERT_TRUE(AddNode(s_, "a", {.flavor = "a100-80gb", .gpus = 4}).ok());
  }
  JobId Submit4(const std::string& tenant, std::vector<FlavorId> flavors, const std::string& pc = "training") {
    JobSubmitted e;
    e.id = s_.NextJobId();
    e.at = now_;
    e.spec.tenant = *s_.FindTenant(tenant);
    e.spec.priority_class = *s_.FindPriorityClass(pc);
    e.spec.shape = *WholeGpus(s_, s_.catalogue().model(flavors[0]).name, 4);
    e.spec.flavors = std::move(flavors);
    e.spec.name = "j";
    EXPECT_TRUE(Apply(s_, e).ok());
    return e.id;
  }
  Plan Cycle() {
    now_ = now_ + Duration::Seconds(10);
    const Plan plan = Schedule(s_, cfg_, now_);
    ApplyPlan(plan, now_, s_, [&](const Event& e) { return ApplyMetered(s_, ledger_, e); },
              {.start_placed = true});
    EXPECT_TRUE(CheckInvariants(s_).ok());
    return plan;
  }

  State s_;
  Ledger ledger_;
  SchedulerConfig cfg_;
  FlavorId h100_, a100_;
  Time now_ = Time::FromSeconds(1000);
};

TEST_F(FlavorListTest, TheFirstFlavorWithRoomIsTakenAndCharged) {
  const JobId first = Submit4("t", {h100_, a100_});
  const Plan p1 = Cycle();
  ASSERT_EQ(p1.placements.size(), 1u) << Describe(s_, p1);
  EXPECT_FALSE(p1.placements[0].flavor.valid()) << "the preferred flavor: no JobFlavorChosen";
  EXPECT_EQ(s_.FindJob(first)->spec.shape.flavor, h100_);

  // h100 is full: the next job of the same list runs on a100, and is charged there.
  const JobId second = Submit4("t", {h100_, a100_});
  const Plan p2 = Cycle();
  ASSERT_EQ(p2.placements.size(), 1u) << Describe(s_, p2);
  EXPECT_EQ(p2.placements[0].flavor, a100_);
  const std::vector<Event> events = PlanToEvents(p2, now_);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<JobFlavorChosen>(events[0]));
  EXPECT_TRUE(std::holds_alternative<JobAdmitted>(events[1]));
  const Job& j = *s_.FindJob(second);
  EXPECT_EQ(j.spec.shape.flavor, a100_);
  EXPECT_EQ(s_.node(j.placement[0].node).flavor, a100_);
  const QuotaBook q(s_, now_);
  const TenantId t = *s_.FindTenant("t");
  EXPECT_EQ(q.usage(t, h100_), GpuEq::Gpus(4));
  EXPECT_EQ(q.usage(t, a100_), GpuEq::Gpus(4));
  EXPECT_EQ(j.admitted_as, AdmissionKind::kGuaranteed);
  bool metered = false;
  for (const UsageInterval& u : ledger_.Snapshot(now_)) {
    if (u.job == second) {
      metered = true;
      EXPECT_EQ(u.flavor, a100_) << "the ledger charges the flavor it ran on";
    }
  }
  EXPECT_TRUE(metered);

  // Neither has room: it waits, and the reason names the flavors it tried.
  const JobId third = Submit4("t", {h100_, a100_});
  Cycle();
  const Job& w = *s_.FindJob(third);
  EXPECT_EQ(w.state, JobState::kPending);
  EXPECT_NE(w.reason.message.find("other flavors (a100-80gb)"), std::string::npos) << w.reason.message;
}

TEST_F(FlavorListTest, AnotherFlavorIsTriedBeforePreemptingAndBorrowingIsAllowed) {
  // b borrows all of h100; t's job accepts h100 then a100: it takes a100 rather than reclaim.
  const JobId borrower = Submit4("b", {h100_});
  Cycle();
  ASSERT_EQ(s_.FindJob(borrower)->state, JobState::kRunning);
  now_ = now_ + Duration::Hours(1);  // the borrower may be preempted by now
  const JobId j = Submit4("t", {h100_, a100_});
  const Plan p = Cycle();
  EXPECT_TRUE(p.preemptions.empty()) << Describe(s_, p);
  EXPECT_EQ(s_.FindJob(j)->spec.shape.flavor, a100_);
  EXPECT_EQ(s_.FindJob(borrower)->state, JobState::kRunning);

  // With a100 full too, the job of t reclaims h100 (its first flavor) from b.
  const JobId k = Submit4("t", {h100_, a100_});
  const Plan reclaim = Cycle();
  ASSERT_EQ(reclaim.preemptions.size(), 1u) << Describe(s_, reclaim);
  EXPECT_EQ(reclaim.preemptions[0].victim, borrower);
  EXPECT_EQ(s_.FindJob(k)->state, JobState::kRunning);
  EXPECT_EQ(s_.FindJob(k)->spec.shape.flavor, h100_);
}

TEST_F(FlavorListTest, ARequeuedJobTriesItsListAgainFromTheTop) {
  const JobId blocker = Submit4("b", {h100_});
  Cycle();
  const JobId j = Submit4("b", {h100_, a100_});
  Cycle();
  ASSERT_EQ(s_.FindJob(j)->spec.shape.flavor, a100_);
  // Both leave h100 and a100 (h100 freed first); the requeued job goes back to h100.
  ASSERT_TRUE(ApplyMetered(s_, ledger_, JobFinished{blocker, JobState::kSucceeded, now_}).ok());
  ASSERT_TRUE(ApplyMetered(s_, ledger_, JobLost{j, now_, RequeueCause::kNodeDrained, "drained"}).ok());
  ASSERT_TRUE(Apply(s_, NodeConditionChanged{NodeId(1), NodeCondition::kCordoned, now_}).ok());
  const Plan p = Cycle();
  ASSERT_EQ(p.placements.size(), 1u) << Describe(s_, p);
  EXPECT_EQ(p.placements[0].flavor, h100_);
  EXPECT_EQ(s_.FindJob(j)->spec.shape.flavor, h100_);
  EXPECT_EQ(s_.FindJob(j)->admitted_as, AdmissionKind::kBorrowed);
}

TEST_F(FlavorListTest, BadListsAreRefusedAndChangeNothing) {
  JobSubmitted e;
  e.id = s_.NextJobId();
  e.spec.tenant = *s_.FindTenant("t");
  e.spec.priority_class = *s_.FindPriorityClass("training");
  e.spec.name = "bad";
  auto refused = [&](JobSpec spec, const std::string& why) {
    JobSubmitted x = e;
    x.spec = std::move(spec);
    Status st = Apply(s_, x);
    ASSERT_FALSE(st.ok()) << why;
    EXPECT_NE(st.error().message.find(why), std::string::npos) << st.error().message;
    EXPECT_EQ(s_.NextJobId(), e.id);
  };
  JobSpec mig = e.spec;
  mig.shape = *MigShape(s_, "h100-80gb", "1g.10gb");
  mig.flavors = {h100_, a100_};
  refused(mig, "MIG");
  JobSpec twice = e.spec;
  twice.shape = *WholeGpus(s_, "h100-80gb", 1);
  twice.flavors = {h100_, h100_};
  refused(twice, "twice");
  JobSpec missing = twice;
  missing.flavors = {a100_};
  refused(missing, "one of the flavors");
  JobSpec big = e.spec;
  big.shape = *FractionShape(s_, "h100-80gb", 500, 60 * 1024);
  big.flavors = {h100_, *s_.catalogue().Find("a100-40gb")};
  refused(big, "a100-40gb");
  // One flavor named in the list is the same as naming none.
  JobSubmitted one = e;
  one.spec.shape = *WholeGpus(s_, "h100-80gb", 1);
  one.spec.flavors = {h100_};
  ASSERT_TRUE(Apply(s_, one).ok());
  EXPECT_TRUE(s_.FindJob(one.id)->spec.flavors.empty());
  // A chosen flavor the job does not accept, or for a job not pending, is refused.
  EXPECT_FALSE(Apply(s_, JobFlavorChosen{one.id, a100_, now_}).ok());
}

}  // namespace
}  // namespace gpupool

namespace gpupool {
namespace {

// flavor_choice: best. A 1-GPU job that accepts a100 then h100; the a100 node has 2 GPUs free,
// the h100 node 1 of 2, and the workload has 2-GPU jobs of both. FGD: on a100 the job leaves one
// GPU that a 2-GPU job cannot use; on h100 it fills the node.
std::string FlavorChosen(FlavorChoice choice) {
  State s;
  AddDefaultPriorityClasses(s);
  const FlavorId h100 = *s.catalogue().Find("h100-80gb"), a100 = *s.catalogue().Find("a100-80gb");
  EXPECT_TRUE(AddTenant(s, "t", {{"h100-80gb", {4}}, {"a100-80gb", {4}}}).ok());
  EXPECT_TRUE(AddNode(s, "a", {.flavor = "a100-80gb", .gpus = 2}).ok());
  EXPECT_TRUE(AddNode(s, "h", {.flavor = "h100-80gb", .gpus = 2}).ok());
  const Time now = Time::FromSeconds(100);
  const JobId busy = *Submit(s, {.tenant = "t", .shape = *WholeGpus(s, "h100-80gb", 1)}, now);
  EXPECT_TRUE(Apply(s, JobAdmitted{busy, {{NodeId(1), {{.gpu = 0}}}}, AdmissionKind::kGuaranteed, now}).ok());
  auto mix = std::make_shared<WorkloadMix>();
  for (FlavorId f : {h100, a100}) mix->by_flavor[f] = {{{.kind = ShapeKind::kWholeGpus, .gpus = 2}, 1}};
  SchedulerConfig cfg;
  cfg.workload = mix;
  cfg.flavor_choice = choice;
  JobSubmitted e;
  e.id = s.NextJobId();
  e.at = now;
  e.spec.tenant = *s.FindTenant("t");
  e.spec.priority_class = *s.FindPriorityClass("training");
  e.spec.shape = *WholeGpus(s, "a100-80gb", 1);
  e.spec.flavors = {a100, h100};
  e.spec.name = "j";
  EXPECT_TRUE(Apply(s, e).ok());
  const Plan p = Schedule(s, cfg, now);
  if (p.placements.size() != 1) return "none";
  const PlaceDecision& d = p.placements[0];
  // A flavor other than the job's first is announced (JobFlavorChosen).
  EXPECT_EQ(d.flavor.valid(), d.placement[0].node == NodeId(1));
  return s.node(d.placement[0].node).name;
}

TEST(FlavorChoice, BestTakesTheFlavorWherePlacementScoresBestOrderTheFirst) {
  EXPECT_EQ(FlavorChosen(FlavorChoice::kOrder), "a");
  EXPECT_EQ(FlavorChosen(FlavorChoice::kBest), "h");
}

}  // namespace
}  // namespace gpupool
