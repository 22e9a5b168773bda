// placement: dotprod and bestfit_host, the FGD paper's baselines ported into Schedule(): the
// node whose free CPU and GPU line up least with the request, or that is left with the least
// free CPU and GPU as shares; on a node, the tightest GPU that fits a fraction.
#include <gtest/gtest.h>

#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class DotProdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    ASSERT_TRUE(AddTenant(s_, "t", {{"h100-80gb", {16}}}).ok());
    // n0 has eight times n1's CPU; both have 8 free GPUs.
    ASSERT_TRUE(AddNode(s_, "n0", {.flavor = "h100-80gb", .gpus = 8, .max_clients = 4, .dynamic = true,
                                   .cpu_milli = 64000, .memory_mib = 262144}).ok());
    ASSERT_TRUE(AddNode(s_, "n1", {.flavor = "h100-80gb", .gpus = 8, .max_clients = 4, .dynamic = true,
                                   .cpu_milli = 8000, .memory_mib = 262144}).ok());
    cfg_.placement = "dotprod";
  }
  JobId Submit1(ReplicaShape shape, int64_t cpu) {
    shape.cpu_milli = cpu;
    Result<JobId> j = Submit(s_, {.tenant = "t", .shape = shape, .estimated = Duration::Hours(1)}, now_);
    EXPECT_TRUE(j.ok()) << j.error().message;
    return *j;
  }
  uint32_t NodeOf(JobId j) const { return s_.FindJob(j)->placement[0].node.value(); }
  void Cycle() {
    now_ = now_ + Duration::Seconds(10);
    const Plan plan = Schedule(s_, cfg_, now_);
    ApplyPlan(plan, now_, s_, [&](const Event& e) { return Apply(s_, e); }, {.start_placed = true});
    ASSERT_TRUE(CheckInvariants(s_).ok());
  }

  State s_;
  SchedulerConfig cfg_;
  Time now_ = Time::FromSeconds(1000);
};

// d = (cpu_free/128000 x 4000/128000 + 8000/8000 x 1000/8000) / 2: 0.0703 on n0 (score -92),
// 0.0635 on n1 (-93): the node with less free CPU aligns less and wins. bestfit, which sees
// only GPUs, takes the lower id.
TEST_F(DotProdTest, TakesTheNodeWhoseFreeCpuAndGpuAlignLeastWithTheRequest) {
  const JobId j = Submit1(*WholeGpus(s_, "h100-80gb", 1), 4000);
  SchedulerConfig bestfit;
  bestfit.placement = "bestfit";
  const Plan p = Schedule(s_, bestfit, now_);
  ASSERT_EQ(p.placements.size(), 1u);
  EXPECT_EQ(p.placements[0].placement[0].node.value(), 0u) << "bestfit sees equal GPUs: the lower id";
  Cycle();
  ASSERT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  EXPECT_EQ(NodeOf(j), 1u);
}

// n0 has 64 CPUs and 8 GPUs free, n1 8 and 8. A 1-GPU job asking 4 CPUs leaves n1 with
// r = (4000/128000 + 7000/8000) / 2 = 0.453 (score -54) and n0 with 0.672 (-32): bestfit_host
// takes n1. bestfit, exact on GPUs only, takes the lower id.
TEST_F(DotProdTest, BestFitHostLeavesTheLeastFreeCpuAndGpu) {
  cfg_.placement = "bestfit_host";
  const JobId j = Submit1(*WholeGpus(s_, "h100-80gb", 1), 4000);
  Cycle();
  ASSERT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  EXPECT_EQ(NodeOf(j), 1u);
  // n1 has 4 CPUs left: a job asking 6 cannot go there, whatever it scores.
  const JobId k = Submit1(*WholeGpus(s_, "h100-80gb", 1), 6000);
  Cycle();
  ASSERT_EQ(s_.FindJob(k)->state, JobState::kRunning);
  EXPECT_EQ(NodeOf(k), 0u);
}

// On one node, a fraction goes to the GPU with the least room that still fits it.
TEST_F(DotProdTest, AFractionTakesTheTightestGpuThatFitsOnItsNode) {
  const JobId a = Submit1(*FractionShape(s_, "h100-80gb", 700, 0), 0);
  Cycle();
  const JobId b = Submit1(*FractionShape(s_, "h100-80gb", 500, 0), 0);
  Cycle();
  const JobId c = Submit1(*FractionShape(s_, "h100-80gb", 250, 0), 0);
  Cycle();
  for (JobId j : {a, b, c}) ASSERT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  const Job& jc = *s_.FindJob(c);
  const Job& ja = *s_.FindJob(a);
  const Job& jb = *s_.FindJob(b);
  // a left 300 free on its GPU, b 500 on its own: c (250) goes beside a.
  EXPECT_EQ(jc.placement[0].node, ja.placement[0].node);
  EXPECT_EQ(jc.placement[0].grants[0].gpu, ja.placement[0].grants[0].gpu);
  if (jb.placement[0].node == jc.placement[0].node) {
    EXPECT_NE(jc.placement[0].grants[0].gpu, jb.placement[0].grants[0].gpu);
  }
}

}  // namespace
}  // namespace gpupool
