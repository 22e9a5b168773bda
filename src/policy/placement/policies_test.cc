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
  EXPECT_EQ((*policy)->Score(before, on_half), -3500);
  EXPECT_EQ((*policy)->Score(before, on_empty), 3500);
}

TEST(Policies, BestFitAndSpreadOrderOppositely) {
  auto best = MakePlacementPolicy("bestfit", {}, false);
  auto spread = MakePlacementPolicy("spread", {}, false);
  ASSERT_TRUE(best.ok() && spread.ok());
  const int64_t tight = (*best)->Value(View({GpuKey::Whole(true), GpuKey::Whole(false)}));
  const int64_t loose = (*best)->Value(View({GpuKey::Whole(false), GpuKey::Whole(false)}));
  EXPECT_LT((*best)->Score(0, tight), (*best)->Score(0, loose));
  EXPECT_GT((*spread)->Score(0, tight), (*spread)->Score(0, loose));
}

TEST(Policies, UnknownNameListsTheKnownOnes) {
  auto p = MakePlacementPolicy("magic", {}, false);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("fgd, bestfit, spread, firstfit"), std::string::npos);
}

}  // namespace
}  // namespace gpupool
