// The FGD paper's baselines as placement policies of Schedule() (policy/placement/baselines.h):
// dotprod and bestfit_host (the node whose free CPU and GPU line up least with the request, or
// that is left with the least free CPU and GPU as shares; on a node, the tightest GPU that fits
// a fraction), clustering (affinity tags, kept within a cycle and read back from the state),
// packing (partly used GPUs, then partly used nodes), and random (a seeded, reproducible draw).
#include <gtest/gtest.h>

#include <set>

#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class BaselineTest : public ::testing::Test {
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
TEST_F(BaselineTest, TakesTheNodeWhoseFreeCpuAndGpuAlignLeastWithTheRequest) {
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
TEST_F(BaselineTest, BestFitHostLeavesTheLeastFreeCpuAndGpu) {
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
TEST_F(BaselineTest, AFractionTakesTheTightestGpuThatFitsOnItsNode) {
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

// Both nodes empty: A (1 GPU) takes n0, the lower id. In the same cycle B (a fraction) sees n0
// running a 1-GPU replica, another tag (score -3), and n1 untagged (-25): n1. Had the cycle not
// tagged n0 on placing A, n0 would have scored -28 and won. Next cycle, from the state: C (1 GPU)
// joins its tag on n0 (-78), D (a fraction) its own on n1.
TEST_F(BaselineTest, ClusteringKeepsReplicasOfOneTagTogether) {
  cfg_.placement = "clustering";
  const JobId a = Submit1(*WholeGpus(s_, "h100-80gb", 1), 0);
  const JobId b = Submit1(*FractionShape(s_, "h100-80gb", 500, 0), 0);
  Cycle();
  EXPECT_EQ(NodeOf(a), 0u);
  EXPECT_EQ(NodeOf(b), 1u);
  const JobId c = Submit1(*WholeGpus(s_, "h100-80gb", 1), 0);
  Cycle();
  const JobId d = Submit1(*FractionShape(s_, "h100-80gb", 250, 0), 0);
  Cycle();
  EXPECT_EQ(NodeOf(c), 0u);
  EXPECT_EQ(NodeOf(d), 1u);
}

// Empty nodes score max(33 - 8, 8) = 25: the first fraction takes n0. The next goes onto the
// same partly used GPU (100 - 50 / 10 = 95), a 1-GPU job to n0's free GPUs (partly used node:
// 49), and an 8-GPU job, which fits only n1, there.
TEST_F(BaselineTest, PackingFillsPartlyUsedGpusThenPartlyUsedNodes) {
  cfg_.placement = "packing";
  const JobId a = Submit1(*FractionShape(s_, "h100-80gb", 500, 0), 0);
  Cycle();
  const JobId b = Submit1(*FractionShape(s_, "h100-80gb", 300, 0), 0);
  Cycle();
  const JobId c = Submit1(*WholeGpus(s_, "h100-80gb", 1), 0);
  Cycle();
  const JobId d = Submit1(*WholeGpus(s_, "h100-80gb", 8), 0);
  Cycle();
  for (JobId j : {a, b, c, d}) ASSERT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  EXPECT_EQ(NodeOf(a), 0u);
  EXPECT_EQ(NodeOf(b), 0u);
  EXPECT_EQ(s_.FindJob(b)->placement[0].grants[0].gpu, s_.FindJob(a)->placement[0].grants[0].gpu);
  EXPECT_EQ(NodeOf(c), 0u);
  EXPECT_EQ(NodeOf(d), 1u);
}

// Twelve 1-GPU jobs, one a cycle, on four 8-GPU nodes: the same seed places them the same way,
// another seed otherwise, and the draws use more than one node.
TEST(RandomPlacement, IsReproducibleBySeedAndSpreads) {
  auto run = [](uint64_t seed) {
    State s;
    AddDefaultPriorityClasses(s);
    EXPECT_TRUE(AddTenant(s, "t", {{"h100-80gb", {32}}}).ok());
    for (int i = 0; i < 4; ++i) {
      EXPECT_TRUE(AddNode(s, "n" + std::to_string(i), {.flavor = "h100-80gb", .gpus = 8, .dynamic = true}).ok());
    }
    SchedulerConfig cfg;
    cfg.placement = "random";
    cfg.placement_seed = seed;
    std::vector<uint32_t> nodes;
    Time now = Time::FromSeconds(1000);
    for (int j = 0; j < 12; ++j) {
      now = now + Duration::Seconds(10);
      Result<JobId> id = Submit(s, {.tenant = "t", .shape = *WholeGpus(s, "h100-80gb", 1), .estimated = Duration::Hours(1)}, now);
      EXPECT_TRUE(id.ok());
      const Plan plan = Schedule(s, cfg, now);
      ApplyPlan(plan, now, s, [&](const Event& e) { return Apply(s, e); }, {.start_placed = true});
      EXPECT_EQ(s.FindJob(*id)->state, JobState::kRunning);
      nodes.push_back(s.FindJob(*id)->placement[0].node.value());
    }
    EXPECT_TRUE(CheckInvariants(s).ok());
    return nodes;
  };
  const std::vector<uint32_t> a = run(1);
  EXPECT_EQ(run(1), a);
  EXPECT_NE(run(2), a);
  EXPECT_GE(std::set<uint32_t>(a.begin(), a.end()).size(), 3u);
}

}  // namespace
}  // namespace gpupool
