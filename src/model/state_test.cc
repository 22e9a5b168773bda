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

}  // namespace
}  // namespace gpupool
