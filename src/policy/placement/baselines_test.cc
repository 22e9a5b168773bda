// The FGD paper's baselines as the core scores them (baselines.h): each formula on hand-made
// nodes, with the numbers the paper's simulator gives (negated: the core's lower is better).
#include "policy/placement/baselines.h"

#include <gtest/gtest.h>

namespace gpupool {
namespace {

const Catalogue& Cat() {
  static const Catalogue c = Catalogue::BuiltIn();
  return c;
}
FlavorId F() { return *Cat().Find("h100-80gb"); }

GpuKey Idle(uint32_t milli) {
  if (milli == 1000) return GpuKey::Flex(GpuKey::Shared(1000, 81920, GpuKey::kUncappedClients, 0, true));
  return GpuKey::Shared(milli, 81920, GpuKey::kUncappedClients, 1, true);
}

// A 2-GPU node with these idle milli and 64 CPUs free, and a replica of 300 milli and 16 CPUs.
struct Case {
  std::vector<GpuKey> keys;
  HostMove m;
  TaskShape t{.kind = ShapeKind::kGpuFraction, .gpus = 1, .milli = 300};
};
Case Node2(uint32_t g0, uint32_t g1) {
  Case c;
  c.keys = {Idle(g0), Idle(g1)};
  std::sort(c.keys.begin(), c.keys.end());
  c.m = {.idle_milli = g0 + g1, .cpu_free = 64000, .mem_free = INT64_MAX, .gpu_milli = 300, .cpu_milli = 16000};
  c.m.model = &Cat().model(F());
  c.m.keys = c.keys.data();
  c.m.gpus = 2;
  return c;
}

int64_t ScoreOf(const char* name, const Case& c) {
  std::unique_ptr<PlacementPolicy> p = MakeBaselinePolicy(name, 1);
  EXPECT_NE(p, nullptr);
  return p->NodeScore(F(), c.t, 0, 0, c.m);
}

TEST(Baselines, ScoresFollowTheSimulatorsFormulas) {
  // GpuPacking: a fully idle 2-GPU node scores max(33 - 2, 2) = 31; a node whose fitting GPU is
  // partly used (idle 500, the 300 pod takes it) scores max(100 - 50 / 10, 50) = 95.
  EXPECT_EQ(ScoreOf("packing", Node2(1000, 1000)), -31);
  EXPECT_EQ(ScoreOf("packing", Node2(500, 0)), -95);
  // Whole GPUs on a partly used node: one fully idle GPU taken, max(50 - 1, 33) = 49.
  Case whole = Node2(1000, 200);
  whole.t = {.kind = ShapeKind::kWholeGpus, .gpus = 1};
  whole.m.gpu_milli = 1000;
  EXPECT_EQ(ScoreOf("packing", whole), -49);
  // BestFit: r = 0.5 (64000 - 16000) / 128000 + 0.5 (1500 - 300) / 8000 = 0.2625 -> int(73.75).
  EXPECT_EQ(ScoreOf("bestfit_host", Node2(500, 1000)), -73);
  // DotProd: d = (0.5 x 0.125 + 0.1875 x 0.0375) / 2 = 0.03476 -> int(96.52) = 96.
  EXPECT_EQ(ScoreOf("dotprod", Node2(500, 1000)), -96);
  // GpuClustering, base = int(25 (8000 - idle) / 8000): an empty node 18 + 25 = 43; one running
  // only fractions 18 + 75; fractions and 1-GPU replicas 18 + 50; only 1-GPU replicas 18.
  Case c = Node2(1000, 1000);
  EXPECT_EQ(ScoreOf("clustering", c), -43);
  c.m.tags = AffinityTag(c.t);
  EXPECT_EQ(ScoreOf("clustering", c), -93);
  c.m.tags |= AffinityTag({.kind = ShapeKind::kWholeGpus, .gpus = 1});
  EXPECT_EQ(ScoreOf("clustering", c), -68);
  c.m.tags = AffinityTag({.kind = ShapeKind::kWholeGpus, .gpus = 1});
  EXPECT_EQ(ScoreOf("clustering", c), -18);
  // A replica of no GPU scores 0 under clustering and packing: the node order decides.
  Case none = Node2(1000, 1000);
  none.t = {.kind = ShapeKind::kWholeGpus, .gpus = 0};
  none.m.gpu_milli = 0;
  EXPECT_EQ(ScoreOf("clustering", none), 0);
  EXPECT_EQ(ScoreOf("packing", none), 0);
}

TEST(Baselines, RandomDrawsDependOnSeedReplicaAndNodeOnly) {
  std::unique_ptr<PlacementPolicy> a = MakeBaselinePolicy("random", 7), b = MakeBaselinePolicy("random", 7),
                                   c = MakeBaselinePolicy("random", 8);
  const Case n = Node2(1000, 1000);
  HostMove m = n.m;
  EXPECT_EQ(a->NodeScore(F(), n.t, 0, 0, m), b->NodeScore(F(), n.t, 0, 0, m));
  EXPECT_NE(a->NodeScore(F(), n.t, 0, 0, m), c->NodeScore(F(), n.t, 0, 0, m));
  // Over 1,000 nodes the lowest draw lands on each quarter of them about as often.
  std::array<int, 4> wins{};
  for (uint64_t replica = 0; replica < 4000; ++replica) {
    m.salt = replica;
    int64_t best = INT64_MAX;
    uint32_t at = 0;
    for (uint32_t node = 0; node < 1000; ++node) {
      m.node = node;
      const int64_t s = a->NodeScore(F(), n.t, 0, 0, m);
      EXPECT_GE(s, 0);
      if (s < best) best = s, at = node;
    }
    ++wins[at / 250];
  }
  for (int w : wins) EXPECT_NEAR(w, 1000, 150);
  EXPECT_TRUE(a->DrawsGpus());
  EXPECT_FALSE(a->ScoresHostOnly(F()));
}

TEST(Baselines, OnlyTheBaselinesAreMadeHere) {
  EXPECT_EQ(MakeBaselinePolicy("fgd", 0), nullptr);
  for (const char* n : {"dotprod", "bestfit_host", "random", "clustering", "packing"}) {
    std::unique_ptr<PlacementPolicy> p = MakeBaselinePolicy(n, 0);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(p->name(), n);
    EXPECT_TRUE(p->ScoresNodes(F()));
  }
}

}  // namespace
}  // namespace gpupool
