// Jobs of no GPU (gpus: 0): CPU and memory on a node of their flavor, as the packing
// experiment's CPU-only pods; they take no GPU, no GPU quota, and never switch a GPU.
#include <gtest/gtest.h>

#include "accounting/ledger.h"
#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class HostOnlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    ASSERT_TRUE(AddTenant(s_, "t", {{"h100-80gb", {2}}}).ok());
    ASSERT_TRUE(AddNode(s_, "n0", {.flavor = "h100-80gb", .gpus = 2, .cpu_milli = 8000, .memory_mib = 65536}).ok());
    ASSERT_TRUE(AddNode(s_, "n1", {.flavor = "h100-80gb", .gpus = 2, .max_clients = 2, .dynamic = true,
                                   .cpu_milli = 8000, .memory_mib = 65536}).ok());
  }
  JobId Host(int64_t cpu, Duration estimate = Duration::Hours(1)) {
    ReplicaShape shape = *WholeGpus(s_, "h100-80gb", 1);
    shape.gpus = 0;
    shape.cpu_milli = cpu;
    shape.memory_mib = 1024;
    Result<JobId> j = Submit(s_, {.tenant = "t", .shape = shape, .estimated = estimate}, now_);
    EXPECT_TRUE(j.ok()) << j.error().message;
    return *j;
  }
  JobId Gpus(int gpus, int64_t cpu) {
    ReplicaShape shape = *WholeGpus(s_, "h100-80gb", gpus);
    shape.cpu_milli = cpu;
    return *Submit(s_, {.tenant = "t", .shape = shape, .estimated = Duration::Hours(1)}, now_);
  }
  Plan Cycle() {
    now_ = now_ + Duration::Seconds(10);
    const Plan plan = Schedule(s_, cfg_, now_);
    ApplyPlan(plan, now_, s_, [&](const Event& e) { return ApplyMetered(s_, ledger_, e); }, {.start_placed = true});
    EXPECT_TRUE(CheckInvariants(s_).ok());
    return plan;
  }

  State s_;
  Ledger ledger_;
  SchedulerConfig cfg_;
  Time now_ = Time::FromSeconds(1000);
};

TEST_F(HostOnlyTest, TakesCpuBesideFullGpusAndNoQuota) {
  const JobId big = Gpus(2, 4000);
  Cycle();
  ASSERT_EQ(s_.FindJob(big)->state, JobState::kRunning);
  ASSERT_EQ(s_.FindJob(big)->placement[0].node.value(), 0u) << "FGD keeps the dynamic node's GPUs whole and free";
  // The node with both GPUs taken still has 4000m of CPU: a job of no GPU runs there (the lower
  // node id of two that fit equally), with no grant.
  const JobId a = Host(4000);
  const Plan p = Cycle();
  ASSERT_EQ(p.placements.size(), 1u) << Describe(s_, p);
  const Job& ja = *s_.FindJob(a);
  EXPECT_EQ(ja.state, JobState::kRunning);
  ASSERT_EQ(ja.placement.size(), 1u);
  EXPECT_TRUE(ja.placement[0].grants.empty());
  EXPECT_TRUE(p.mode_changes.empty()) << "a job of no GPU never switches a dynamic GPU";
  EXPECT_EQ(ja.placement[0].node.value(), 0u);
  const QuotaBook q(s_, now_);
  EXPECT_EQ(q.usage(*s_.FindTenant("t"), *s_.catalogue().Find("h100-80gb")), GpuEq::Gpus(2));
  for (const UsageInterval& u : ledger_.Snapshot(now_)) {
    if (u.job == a) {
      EXPECT_EQ(u.eq, GpuEq()) << "charged no GPU";
    }
  }
  // n0's CPU is all taken now; the next goes to n1, then none fits: it waits on CPU.
  const JobId b = Host(8000);
  Cycle();
  EXPECT_EQ(s_.FindJob(b)->placement[0].node.value(), 1u);
  const JobId c = Host(1000);
  Cycle();
  EXPECT_EQ(s_.FindJob(c)->state, JobState::kPending);
  EXPECT_NE(s_.FindJob(c)->reason.message.find("no GPU"), std::string::npos) << s_.FindJob(c)->reason.message;

  // The node knows its jobs of no GPU: a drain finds them (Node::Jobs), and a node that runs
  // one is not idle, so it cannot be retired or removed under it.
  const Node& n1 = s_.node(NodeId(1));
  EXPECT_EQ(n1.Jobs(), std::vector<JobId>{b});
  EXPECT_FALSE(n1.idle());
  ASSERT_TRUE(Apply(s_, NodeConditionChanged{NodeId(1), NodeCondition::kDraining, now_}).ok());
  EXPECT_FALSE(Apply(s_, NodeRemoved{NodeId(1), now_}).ok());
  ASSERT_TRUE(ApplyMetered(s_, ledger_, JobLost{b, now_, RequeueCause::kNodeDrained, "drained"}).ok());
  EXPECT_TRUE(s_.node(NodeId(1)).idle());
  EXPECT_TRUE(CheckInvariants(s_).ok());
  EXPECT_TRUE(Apply(s_, NodeRemoved{NodeId(1), now_}).ok());
}

TEST_F(HostOnlyTest, AJobOfNoGpuGoesWhereItStrandsTheFewestFreeGpus) {
  // n1's GPUs are all taken, n0's are free: the job of no GPU goes to n1, though n0 comes first,
  // so that n0's CPU stays for the GPU jobs that will want it.
  const JobId big = Gpus(2, 1000);
  Cycle();
  ASSERT_EQ(s_.FindJob(big)->placement[0].node.value(), 0u);
  ASSERT_TRUE(ApplyMetered(s_, ledger_, JobFinished{big, JobState::kSucceeded, now_}).ok());
  ReplicaShape two = *WholeGpus(s_, "h100-80gb", 2);
  ASSERT_TRUE(Apply(s_, JobSubmitted{s_.NextJobId(), {.tenant = *s_.FindTenant("t"), .name = "on-n1",
                                                      .priority_class = *s_.FindPriorityClass("training"), .shape = two},
                                     now_}).ok());
  const JobId pinned = JobId(s_.NextJobId().value() - 1);
  ASSERT_TRUE(Apply(s_, JobAdmitted{pinned, {{NodeId(1), {{.gpu = 0}, {.gpu = 1}}}}, AdmissionKind::kGuaranteed, now_}).ok());
  ASSERT_TRUE(Apply(s_, JobStarted{pinned, now_}).ok());
  const JobId cpu = Host(2000);
  Cycle();
  EXPECT_EQ(s_.FindJob(cpu)->placement[0].node.value(), 1u);
}

TEST_F(HostOnlyTest, AWaitingJobOfNoGpuHoldsTheCpuItWaitsFor) {
  // n0 and n1 busy on CPU for an hour; a CPU-only job that needs 6000m holds n0's CPU, so a
  // long small job cannot take what it waits for.
  const JobId x = Host(4000), y = Host(4000), z = Host(4000), w = Host(4000);
  Cycle();
  for (JobId j : {x, y, z, w}) ASSERT_EQ(s_.FindJob(j)->state, JobState::kRunning);
  ASSERT_TRUE(ApplyMetered(s_, ledger_, JobFinished{x, JobState::kSucceeded, now_}).ok());
  const JobId waiting = Host(6000);
  const Plan hold = Cycle();
  EXPECT_EQ(hold.stats.holds, 1) << Describe(s_, hold);
  EXPECT_EQ(s_.FindJob(waiting)->state, JobState::kPending);
  const JobId later = Host(4000, Duration::Hours(5));
  Cycle();
  EXPECT_EQ(s_.FindJob(later)->state, JobState::kPending) << "it would end after the hold starts";
  const JobId soon = Host(4000, Duration::Minutes(10));
  Cycle();
  EXPECT_EQ(s_.FindJob(soon)->state, JobState::kRunning) << "it ends before the hold starts";
}

TEST(HostOnlySpec, ANoGpuJobMustAskForCpuOrMemory) {
  State s;
  AddDefaultPriorityClasses(s);
  ASSERT_TRUE(AddTenant(s, "t", {{"h100-80gb", {2}}}).ok());
  ReplicaShape shape = *WholeGpus(s, "h100-80gb", 1);
  shape.gpus = 0;
  Result<JobId> r = Submit(s, {.tenant = "t", .shape = shape}, Time());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("CPU or memory"), std::string::npos) << r.error().message;
  shape.memory_mib = 512;
  EXPECT_TRUE(Submit(s, {.tenant = "t", .shape = shape}, Time()).ok());
}

TEST_F(HostOnlyTest, FgdKeepsCpuWhereAGpuTypeStillNeedsIt) {
  // The workload: 1-GPU tasks that need 4 CPUs, and CPU-only tasks. n0 and n1 have 8 CPUs, n2
  // 16, all with two free GPUs. A job that leaves a node under 4 CPUs makes its free GPUs
  // useless to the GPU type (FGD counts them as fragment), so FGD sends it to n2, though the
  // lower node ids fit as well on GPUs. Policies that ignore CPU take the lowest id.
  ASSERT_TRUE(AddNode(s_, "n2", {.flavor = "h100-80gb", .gpus = 2, .cpu_milli = 16000, .memory_mib = 65536}).ok());
  const FlavorId f = *s_.catalogue().Find("h100-80gb");
  auto mix = std::make_shared<WorkloadMix>();
  mix->by_flavor[f] = {{{.kind = ShapeKind::kWholeGpus, .gpus = 1}, 10, 4000},
                       {{.kind = ShapeKind::kWholeGpus, .gpus = 0}, 1, 6000}};
  cfg_.workload = mix;
  const JobId a = Host(6000);
  Cycle();
  EXPECT_EQ(s_.FindJob(a)->placement.at(0).node.value(), 2u) << "a job of no GPU";
  // n2 has 10 CPUs left: a 1-GPU job of 2 CPUs leaves 8 there, 6 on n0 or n1: all above 4, so
  // the GPUs decide, and n0 has the lowest id among the equal ones.
  const JobId b = Gpus(1, 2000);
  Cycle();
  EXPECT_EQ(s_.FindJob(b)->placement.at(0).node.value(), 0u);
  // One of 5 CPUs: on n1 it leaves 3 CPUs, and n1's other GPU is lost to the GPU type; n0 (its
  // last GPU, nothing left to fragment) and n2 (5 CPUs left) score equal: n0.
  const JobId c = Gpus(1, 5000);
  Cycle();
  EXPECT_EQ(s_.FindJob(c)->placement.at(0).node.value(), 0u);
  // The same again: n0 is full, and n2 wins over the lower n1.
  const JobId d = Gpus(1, 5000);
  Cycle();
  EXPECT_EQ(s_.FindJob(d)->placement.at(0).node.value(), 2u) << "a GPU job";
}

}  // namespace
}  // namespace gpupool
