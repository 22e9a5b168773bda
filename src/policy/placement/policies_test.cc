#include "policy/placement/policies.h"

#include <gtest/gtest.h>

namespace gpupool {
namespace {

const Catalogue& Cat() {
  static const Catalogue c = Catalogue::BuiltIn();
  return c;
}

NodeClassView View(const std::vector<GpuKey>& keys) {
  const FlavorId f = *Cat().Find("h100-80gb");
  return {f, &Cat().model(f), keys.data(), static_cast<int>(keys.size())};
}

GpuKey Shared(uint32_t free_milli) {
  return GpuKey::Shared(free_milli, 80000, GpuKey::kUncappedClients, free_milli < 1000 ? 1 : 0,
                        true);
}

TEST(Fragmentation, WholeGpuTasksSeePartiallyUsedGpusAsFragments) {
  // Two whole GPUs free, one used: a 1-GPU task can use both free ones (fragment 0); a 4-GPU
  // task cannot run at all, so all 2 free GPUs are fragments for it.
  const std::vector<GpuKey> keys = {GpuKey::Whole(false), GpuKey::Whole(false),
                                    GpuKey::Whole(true)};
  EXPECT_EQ(Fragmentation(View(keys), {.kind = ShapeKind::kWholeGpus, .gpus = 1}, false),
            GpuEq());
  EXPECT_EQ(Fragmentation(View(keys), {.kind = ShapeKind::kWholeGpus, .gpus = 4}, false),
            GpuEq::Gpus(2));
}

TEST(Fgd, PrefersThePlacementThatFragmentsLess) {
  // Workload: half-GPU tasks and full shared-GPU tasks, equally popular. A node class with one
  // empty shared GPU and one half-used one.
  //   before [1000, 500]: frag(0.5) = 0, frag(1.0) = 500 m    -> value  500 m x 7 = 3500
  //   0.5 on the half GPU  -> [1000, 0]:   frag = 0 and 0     -> value 0,    score -3500
  //   0.5 on the empty GPU -> [500, 500]:  frag(1.0) = 1000 m -> value 7000, score +3500
  WorkloadMix mix;
  const FlavorId f = *Cat().Find("h100-80gb");
  mix.by_flavor[f] = {{{.kind = ShapeKind::kGpuFraction, .milli = 500}, 1},
                      {{.kind = ShapeKind::kGpuFraction, .milli = 1000}, 1}};
  auto policy = MakePlacementPolicy("fgd", mix, false);
  ASSERT_TRUE(policy.ok());
  const int64_t before = (*policy)->Value(View({Shared(500), Shared(1000)}));
  const int64_t on_half = (*policy)->Value(View({Shared(0), Shared(1000)}));
  const int64_t on_empty = (*policy)->Value(View({Shared(500), Shared(500)}));
  EXPECT_EQ(before, 3500);
  EXPECT_EQ(on_half - before, -3500);
  EXPECT_EQ(on_empty - before, 3500);
  // The paper's score: a growth of -3500 / (W = 2) / 7 = -250 milli of expected fragmentation
  // gives int(100 sigmoid(0.25)) = 56, +250 gives 43 (negated: lower is better).
  EXPECT_EQ((*policy)->Score(f, before, on_half), -56);
  EXPECT_EQ((*policy)->Score(f, before, on_empty), -43);
  // Growths within a few milli score equal, so the node order decides.
  // (-1 and -20 milli: int(50.02) = int(50.5) = 50).
  EXPECT_EQ((*policy)->Score(f, before, before - 14), (*policy)->Score(f, before, before));
  EXPECT_EQ((*policy)->Score(f, before, before - 280), (*policy)->Score(f, before, before));
}

TEST(Fgd, ATypeTheNodeLacksTheCpuForCountsAllFreeGpusAsFragment) {
  // Whole 1-GPU tasks that need 4 CPUs, CPU-only tasks, and fractions of no CPU, one each.
  WorkloadMix mix;
  const FlavorId f = *Cat().Find("h100-80gb");
  mix.by_flavor[f] = {{{.kind = ShapeKind::kWholeGpus, .gpus = 1}, 1, 4000},
                      {{.kind = ShapeKind::kWholeGpus, .gpus = 0}, 1, 2000},
                      {{.kind = ShapeKind::kGpuFraction, .milli = 500}, 1, 0}};
  auto policy = MakePlacementPolicy("fgd", mix, false);
  ASSERT_TRUE(policy.ok());
  const PlacementPolicy& p = **policy;
  // One level per distinct CPU request of a GPU type, plus the bottom one.
  EXPECT_EQ(p.HostLevels(f), 2);
  EXPECT_EQ(p.HostLevel(f, 3999), 0);
  EXPECT_EQ(p.HostLevel(f, 4000), 1);
  EXPECT_EQ(p.HostLevel(f, INT64_MAX), 1);
  // One free whole GPU: with the CPU, the whole type uses it, the CPU-only and fraction types
  // cannot (2 x 7000); without it, none can (3 x 7000).
  const std::vector<GpuKey> one_free = {GpuKey::Whole(false)}, none_free = {GpuKey::Whole(true)};
  NodeClassView v = View(one_free);
  v.level = 1;
  EXPECT_EQ(p.Value(v), 2 * 7000);
  v.level = 0;
  EXPECT_EQ(p.Value(v), 3 * 7000);
  v.level = NodeClassView::kAllFit;
  EXPECT_EQ(p.Value(v), 2 * 7000);
  // A node with nothing free has no fragmentation at any level.
  NodeClassView full = View(none_free);
  full.level = 0;
  EXPECT_EQ(p.Value(full), 0);
}

TEST(Policies, BestFitAndSpreadOrderOppositely) {
  auto best = MakePlacementPolicy("bestfit", {}, false);
  auto spread = MakePlacementPolicy("spread", {}, false);
  ASSERT_TRUE(best.ok() && spread.ok());
  const int64_t tight = (*best)->Value(View({GpuKey::Whole(true), GpuKey::Whole(false)}));
  const int64_t loose = (*best)->Value(View({GpuKey::Whole(false), GpuKey::Whole(false)}));
  const FlavorId f = *Cat().Find("h100-80gb");
  EXPECT_LT((*best)->Score(f, 0, tight), (*best)->Score(f, 0, loose));
  EXPECT_GT((*spread)->Score(f, 0, tight), (*spread)->Score(f, 0, loose));
}

TEST(Policies, UnknownNameListsTheKnownOnes) {
  auto p = MakePlacementPolicy("magic", {}, false);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("fgd, bestfit, spread, firstfit"), std::string::npos);
}

}  // namespace
}  // namespace gpupool
