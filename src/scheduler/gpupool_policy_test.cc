// placement: gpupool: FGD plus the pairing term, learned from a window of recent submissions.
#include <gtest/gtest.h>

#include "model/builder.h"
#include "policy/placement/pairing.h"
#include "policy/placement/policies.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class GpupoolPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    ASSERT_TRUE(AddTenant(s_, "t", {{"h100-80gb", {8}}}).ok());
    // Two nodes of one shared GPU: x runs a 400-milli job (600 free), y a 600 one (400 free).
    ASSERT_TRUE(AddNode(s_, "x", {.flavor = "h100-80gb", .gpus = 1, .shared_gpus = 1}).ok());
    ASSERT_TRUE(AddNode(s_, "y", {.flavor = "h100-80gb", .gpus = 1, .shared_gpus = 1}).ok());
    RunOn(NodeId(0), 400);
    RunOn(NodeId(1), 600);
    cfg_.placement = "gpupool";
    cfg_.pairing_window = 50;
  }
  JobId Fraction(int milli) {
    return *Submit(s_, {.tenant = "t", .shape = *FractionShape(s_, "h100-80gb", milli, 1024)}, now_);
  }
  void RunOn(NodeId n, int milli) {
    const JobId j = Fraction(milli);
    ASSERT_TRUE(Apply(s_, JobAdmitted{j, {{n, {{.gpu = 0, .milli = static_cast<uint16_t>(milli), .memory_mib = 1024}}}},
                                      AdmissionKind::kGuaranteed, now_})
                    .ok());
    ASSERT_TRUE(Apply(s_, JobStarted{j, now_}).ok());
  }
  // Submissions that were cancelled: they count in the window as what users ask for.
  void Asked(std::initializer_list<int> millis, int times) {
    for (int i = 0; i < times; ++i) {
      for (int m : millis) ASSERT_TRUE(Apply(s_, JobFinished{Fraction(m), JobState::kCancelled, now_}).ok());
    }
  }
  // Where one 300-milli job would go under `policy` now.
  std::string Where(const std::string& policy) {
    SchedulerConfig cfg = cfg_;
    cfg.placement = policy;
    State probe = s_;
    const JobId j = *Submit(probe, {.tenant = "t", .shape = *FractionShape(probe, "h100-80gb", 300, 1024)}, now_);
    const Plan p = Schedule(probe, cfg, now_);
    EXPECT_EQ(p.placements.size(), 1u) << Describe(probe, p);
    if (p.placements.size() != 1 || p.placements[0].job != j) return "";
    return probe.node(p.placements[0].placement[0].node).name;
  }

  State s_;
  SchedulerConfig cfg_;
  Time now_ = Time::FromSeconds(100);
};

TEST_F(GpupoolPolicyTest, APairingTableFollowsTheWindowOfRecentSubmissions) {
  // The users ask for 700s and 300s: they pair, so a GPU left with 300 free will be filled, and
  // one left with 100 (y) is wasted. The 300 goes to x.
  Asked({700, 300}, 24);
  const std::map<FlavorId, std::vector<int>> a = RecentFractions(s_, 50);
  EXPECT_EQ(a.begin()->second.size(), 50u) << "the window: the last 50 submitted";
  EXPECT_EQ(Where("gpupool"), "x");
  const std::string fgd = Where("fgd");

  // Now they ask for 400s and 600s: a 600 (or 400) gap is filled, a 300 gap is not, and the
  // window has forgotten the 700s and 300s. Leaving 100 free on y wastes less than leaving 300
  // on x, where a 400 or a 600 would have fitted: the 300 goes to y.
  Asked({400, 600}, 25);
  const std::map<FlavorId, std::vector<int>> b = RecentFractions(s_, 50);
  ASSERT_EQ(b.begin()->second.size(), 50u);
  EXPECT_EQ(std::count(b.begin()->second.begin(), b.begin()->second.end(), 700), 0);
  EXPECT_EQ(Where("gpupool"), "y");
  // FGD has no memory of submissions: the pending and running jobs alone, the same both times.
  EXPECT_EQ(Where("fgd"), fgd);

  // The tables themselves: a 300 gap was filled under the first mix, not under the second.
  std::vector<int> first, second;
  for (int i = 0; i < 25; ++i) first.insert(first.end(), {700, 300}), second.insert(second.end(), {400, 600});
  EXPECT_DOUBLE_EQ(GapWaste(first)(300), 0);
  EXPECT_DOUBLE_EQ(GapWaste(second)(300), 300);
  EXPECT_DOUBLE_EQ(GapWaste(second)(600), 0);
}

TEST_F(GpupoolPolicyTest, WholeGpuAndMigPlacementsScoreAsUnderFgd) {
  // The pairing term only adds to shared GPUs' values: plans without fractions are FGD's.
  State s;
  AddDefaultPriorityClasses(s);
  ASSERT_TRUE(AddTenant(s, "t", {{"h100-80gb", {64}}}).ok());
  for (int n = 0; n < 6; ++n) {
    ASSERT_TRUE(AddNode(s, "n" + std::to_string(n), {.flavor = "h100-80gb", .gpus = 8, .mig_gpus = n % 3}).ok());
  }
  for (int gpus : {1, 2, 4, 3, 1, 8, 2}) ASSERT_TRUE(Submit(s, {.tenant = "t", .shape = *WholeGpus(s, "h100-80gb", gpus)}, now_).ok());
  for (const char* p : {"1g.10gb", "3g.40gb", "1g.10gb"}) {
    ASSERT_TRUE(Submit(s, {.tenant = "t", .shape = *MigShape(s, "h100-80gb", p)}, now_).ok());
  }
  SchedulerConfig fgd, ours;
  ours.placement = "gpupool";
  EXPECT_TRUE(Schedule(s, fgd, now_) == Schedule(s, ours, now_));
}

TEST(GpupoolPolicyConfig, TheWindowIsValidated) {
  SchedulerConfig cfg;
  cfg.placement = "gpupool";
  EXPECT_TRUE(Validate(cfg).ok());
  cfg.pairing_window = 0;
  EXPECT_FALSE(Validate(cfg).ok());
}

}  // namespace
}  // namespace gpupool

namespace gpupool {
namespace {

// Where a 1-GPU job of 128 GiB goes on two 2-GPU nodes, n0 with 128 GiB and n1 with 256, when
// the workload asks 64 GiB per GPU.
std::string WhereByMemory(const std::string& policy) {
  State s;
  AddDefaultPriorityClasses(s);
  EXPECT_TRUE(AddTenant(s, "t", {{"h100-80gb", {4}}}).ok());
  EXPECT_TRUE(AddNode(s, "n0", {.flavor = "h100-80gb", .gpus = 2, .memory_mib = 131072}).ok());
  EXPECT_TRUE(AddNode(s, "n1", {.flavor = "h100-80gb", .gpus = 2, .memory_mib = 262144}).ok());
  const FlavorId f = *s.catalogue().Find("h100-80gb");
  auto mix = std::make_shared<WorkloadMix>();
  mix->by_flavor[f] = {{{.kind = ShapeKind::kWholeGpus, .gpus = 1}, 10, 0, 65536}};
  SchedulerConfig cfg;
  cfg.placement = policy;
  cfg.workload = mix;
  ReplicaShape shape = *WholeGpus(s, "h100-80gb", 1);
  shape.memory_mib = 131072;
  const Time now = Time::FromSeconds(100);
  EXPECT_TRUE(Submit(s, {.tenant = "t", .shape = shape}, now).ok());
  const Plan p = Schedule(s, cfg, now);
  if (p.placements.size() != 1) return "none";
  return s.node(p.placements[0].placement[0].node).name;
}

TEST(GpupoolStranding, AJobTakingAllOfANodesMemoryGoesWhereItStrandsNoGpu) {
  // On n0 the job leaves one GPU and no memory: that GPU is stranded (1000 milli); on n1 it
  // leaves 128 GiB, enough for the other GPU at the workload's 64 GiB per GPU. FGD does not see
  // memory, scores both the same and takes the lower id.
  EXPECT_EQ(WhereByMemory("fgd"), "n0");
  EXPECT_EQ(WhereByMemory("gpupool"), "n1");
}

TEST(GpupoolStranding, TheScoreFormsAreTheExperiments) {
  WorkloadMix mix;
  const FlavorId f = *Catalogue::BuiltIn().Find("h100-80gb");
  // W = 2; 8 CPUs per GPU (8 milli-CPU per milli-GPU).
  mix.by_flavor[f] = {{{.kind = ShapeKind::kWholeGpus, .gpus = 1}, 2, 8000, 0}};
  auto p = MakePlacementPolicy("gpupool", mix, false);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)->ScoresNodes(f));
  // A 1-GPU job of 16 CPUs on a node of 2 idle GPUs and 16 CPUs strands the other GPU: +1000.
  const HostMove strands{.idle_milli = 2000, .cpu_free = 16000, .mem_free = INT64_MAX,
                         .gpu_milli = 1000, .cpu_milli = 16000, .memory_mib = 0};
  const TaskShape whole{.kind = ShapeKind::kWholeGpus, .gpus = 1};
  // A growth of 0: round((0 + 1000) / 200) = 5; with a growth of -400 milli (-400 x 2 x 7), 3.
  EXPECT_EQ((*p)->NodeScore(f, whole, 0, 0, strands), 5);
  EXPECT_EQ((*p)->NodeScore(f, whole, 5600, 0, strands), 3);
  // A fraction of 500 with 4 CPUs there strands nothing (16 - 4 = 12 CPUs serve 1500 milli):
  // -int(100 sigmoid(-(G / 4) / 1000)); G = -4000 milli gives 100 sigmoid(1) = 73.
  const HostMove lean{.idle_milli = 2000, .cpu_free = 16000, .mem_free = INT64_MAX,
                      .gpu_milli = 500, .cpu_milli = 4000, .memory_mib = 0};
  const TaskShape half{.kind = ShapeKind::kGpuFraction, .milli = 500};
  EXPECT_EQ((*p)->NodeScore(f, half, 56000, 0, lean), -73);
  // No GPU: the stranding in whole GPUs first. 16 CPUs off a node with 2 idle GPUs and 16 CPUs
  // strands both GPUs: 2 << 32.
  const HostMove cpu_only{.idle_milli = 2000, .cpu_free = 16000, .mem_free = INT64_MAX,
                          .gpu_milli = 0, .cpu_milli = 16000, .memory_mib = 0};
  const TaskShape none{.kind = ShapeKind::kWholeGpus, .gpus = 0};
  EXPECT_EQ((*p)->NodeScore(f, none, 0, 0, cpu_only), int64_t{2} << 32);
}

}  // namespace
}  // namespace gpupool
