// Dynamic GPUs (Gpu::dynamic): used whole or shared, switched by the scheduler when idle.
#include <gtest/gtest.h>

#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class DynamicSharingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    ASSERT_TRUE(AddTenant(s_, "t", {{"h100-80gb", {8}}}).ok());
    ASSERT_TRUE(AddTenant(s_, "v", {{"h100-80gb", {8}}}).ok());
    ASSERT_TRUE(AddNode(s_, "n0", {.flavor = "h100-80gb", .gpus = 2, .max_clients = 3, .dynamic = true}).ok());
  }
  JobId Fraction(const std::string& tenant, int milli) {
    return *Submit(s_, {.tenant = tenant, .shape = *FractionShape(s_, "h100-80gb", milli, 8192)}, now_);
  }
  JobId Whole(const std::string& tenant, int gpus) {
    return *Submit(s_, {.tenant = tenant, .shape = *WholeGpus(s_, "h100-80gb", gpus)}, now_);
  }
  // One cycle, carried out as the simulator does (the admitted jobs start).
  Plan Cycle() {
    now_ = now_ + Duration::Seconds(10);
    const Plan plan = Schedule(s_, cfg_, now_);
    ApplyPlan(plan, now_, s_, [&](const Event& e) { return Apply(s_, e); }, {.start_placed = true});
    EXPECT_TRUE(CheckInvariants(s_).ok());
    return plan;
  }
  GpuMode ModeOf(int gpu) const { return s_.node(NodeId(0)).gpus[gpu].mode; }

  State s_;
  SchedulerConfig cfg_;
  Time now_ = Time::FromSeconds(1000);
};

TEST_F(DynamicSharingTest, AFractionSwitchesAnIdleGpuToSharedAndTheNextOneJoinsIt) {
  const JobId a = Fraction("t", 300);
  const Plan first = Cycle();
  ASSERT_EQ(first.placements.size(), 1u) << Describe(s_, first);
  ASSERT_EQ(first.mode_changes.size(), 1u) << Describe(s_, first);
  EXPECT_EQ(first.mode_changes[0].from, GpuMode::kWhole);
  EXPECT_EQ(first.mode_changes[0].to, GpuMode::kShared);
  const uint16_t gpu = first.mode_changes[0].gpu;
  EXPECT_EQ(ModeOf(gpu), GpuMode::kShared);
  EXPECT_EQ(s_.FindJob(a)->placement[0].grants[0].gpu, gpu);

  // With whole-GPU work in the mix, a second fraction packs onto the shared GPU rather than
  // switching the other one (FGD: a switched GPU is lost to whole jobs), and the whole job
  // takes the other GPU, which stays whole.
  const JobId b = Fraction("t", 500);
  const JobId w = Whole("v", 1);
  const Plan second = Cycle();
  ASSERT_EQ(second.placements.size(), 2u) << Describe(s_, second);
  EXPECT_TRUE(second.mode_changes.empty()) << Describe(s_, second);
  EXPECT_EQ(s_.FindJob(b)->placement[0].grants[0].gpu, gpu);
  EXPECT_EQ(s_.FindJob(w)->placement[0].grants[0].gpu, 1 - gpu);
  EXPECT_EQ(ModeOf(1 - gpu), GpuMode::kWhole);

  // Nothing is left for a 2-GPU job.
  const JobId big = Whole("v", 2);
  const Plan third = Cycle();
  EXPECT_TRUE(third.placements.empty()) << Describe(s_, third);
  EXPECT_EQ(s_.FindJob(big)->state, JobState::kPending);

  // When every job has left, the formerly shared GPU serves a whole job again: switched back.
  for (JobId j : {a, b, w}) ASSERT_TRUE(Apply(s_, JobFinished{j, JobState::kSucceeded, now_}).ok());
  const Plan fourth = Cycle();
  ASSERT_EQ(fourth.placements.size(), 1u) << Describe(s_, fourth);
  EXPECT_EQ(fourth.placements[0].job, big);
  ASSERT_EQ(fourth.mode_changes.size(), 1u) << Describe(s_, fourth);
  EXPECT_EQ(fourth.mode_changes[0].gpu, gpu);
  EXPECT_EQ(fourth.mode_changes[0].to, GpuMode::kWhole);
  EXPECT_EQ(ModeOf(0), GpuMode::kWhole);
  EXPECT_EQ(ModeOf(1), GpuMode::kWhole);
}

TEST_F(DynamicSharingTest, AGpuInUseNeverSwitches) {
  const JobId a = Fraction("t", 300);
  Cycle();
  const uint16_t gpu = s_.FindJob(a)->placement[0].grants[0].gpu;
  // The model refuses a switch under a running job, and of a GPU that is not dynamic.
  Status s = Apply(s_, GpuModeChanged{NodeId(0), gpu, GpuMode::kWhole, now_});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("idle"), std::string::npos) << s.error().message;
  EXPECT_FALSE(Apply(s_, GpuModeChanged{NodeId(0), static_cast<uint16_t>(1 - gpu), GpuMode::kMig, now_}).ok());
  ASSERT_TRUE(AddNode(s_, "static", {.flavor = "h100-80gb", .gpus = 1}).ok());
  EXPECT_FALSE(Apply(s_, GpuModeChanged{NodeId(1), 0, GpuMode::kShared, now_}).ok());
  // And a whole-GPU job never lands on the shared GPU while a fraction holds it.
  const JobId w = Whole("v", 2);
  Cycle();
  EXPECT_EQ(s_.FindJob(w)->state, JobState::kPending);
  EXPECT_EQ(ModeOf(gpu), GpuMode::kShared);
}

TEST_F(DynamicSharingTest, PreemptingAGpusLastFractionLetsItSwitchInTheSamePlan) {
  // v borrows both GPUs as shared fractions (2 x 600 milli on two GPUs); t reclaims with a
  // whole 2-GPU job: the plan preempts, then switches both GPUs, then admits.
  ASSERT_TRUE(AddTenant(s_, "b", {{"h100-80gb", {0, 8}}}).ok());
  const JobId x = Fraction("b", 600), y = Fraction("b", 600);
  Cycle();
  ASSERT_EQ(ModeOf(0), GpuMode::kShared);
  ASSERT_EQ(ModeOf(1), GpuMode::kShared);
  now_ = now_ + Duration::Hours(1);  // past the minimum runtime
  const JobId big = Whole("t", 2);
  const Plan p = Cycle();
  ASSERT_EQ(p.preemptions.size(), 2u) << Describe(s_, p);
  ASSERT_EQ(p.mode_changes.size(), 2u) << Describe(s_, p);
  EXPECT_EQ(s_.FindJob(big)->state, JobState::kRunning);
  EXPECT_EQ(s_.FindJob(x)->state, JobState::kPending);
  EXPECT_EQ(s_.FindJob(y)->state, JobState::kPending);
  EXPECT_EQ(ModeOf(0), GpuMode::kWhole);
  EXPECT_EQ(ModeOf(1), GpuMode::kWhole);
}

TEST(DynamicSharingConfig, ANodeMixingDynamicAndStaticGpusIsRefused) {
  State s;
  Node n;
  n.name = "mixed";
  n.flavor = *s.catalogue().Find("h100-80gb");
  n.gpus.resize(2);
  n.gpus[0].dynamic = true;
  Result<NodeId> r = s.AddNode(n);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("dynamic"), std::string::npos) << r.error().message;
  n.gpus[1].dynamic = true;
  n.gpus[1].max_clients = 2;
  EXPECT_FALSE(s.AddNode(n).ok()) << "two client caps on one node";
  n.gpus[1].max_clients = 0;
  n.gpus[0].mode = GpuMode::kMig;
  EXPECT_FALSE(s.AddNode(n).ok()) << "a dynamic MIG GPU";
  n.gpus[0].mode = GpuMode::kWhole;
  EXPECT_TRUE(s.AddNode(n).ok());
}

}  // namespace
}  // namespace gpupool
