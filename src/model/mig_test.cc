#include <gtest/gtest.h>

#include <functional>

#include "model/catalogue.h"
#include "model/mig.h"

namespace gpupool {
namespace {

class MigTest : public ::testing::Test {
 protected:
  const GpuModel& Model(const char* name) { return cat_.model(*cat_.Find(name)); }
  Catalogue cat_ = Catalogue::BuiltIn();
};

TEST_F(MigTest, ProfileIdsDependOnTheProduct) {
  // 1g.10gb is GI profile 15 (two memory slices, max 4) on A100-40GB but 19 (one slice, max 7)
  // on H100-80GB: the catalogue is keyed by (product, profile).
  const GpuModel& a40 = Model("a100-40gb");
  const GpuModel& h80 = Model("h100-80gb");
  const MigProfile& on_a40 = a40.profiles[a40.ProfileIndexByName("1g.10gb")];
  const MigProfile& on_h80 = h80.profiles[h80.ProfileIndexByName("1g.10gb")];
  EXPECT_EQ(on_a40.id, 15);
  EXPECT_EQ(on_a40.memory_slices, 2);
  EXPECT_EQ(on_a40.max_count, 4);
  EXPECT_EQ(on_h80.id, 19);
  EXPECT_EQ(on_h80.memory_slices, 1);
  EXPECT_EQ(on_h80.max_count, 7);
}

TEST_F(MigTest, BlackwellIsMarkedUnverified) {
  EXPECT_TRUE(Model("h200-141gb").verified);
  EXPECT_FALSE(Model("b200-180gb").verified);
  EXPECT_FALSE(Model("gb200-186gb").verified);
  EXPECT_EQ(Model("gb200-186gb").ProfileIndexByName("1g.24gb+me"), -1);
}

TEST_F(MigTest, ThreeGStartsOnlyAtZeroOrFour) {
  const GpuModel& m = Model("h100-80gb");
  EXPECT_TRUE(ParseLayout(m, "3g.40gb@0,3g.40gb@4").ok());
  Result<MigLayout> bad = ParseLayout(m, "3g.40gb@2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("cannot start at memory slice 2"), std::string::npos);
}

TEST_F(MigTest, OverlappingInstancesAreRejected) {
  const GpuModel& m = Model("a100-80gb");
  EXPECT_FALSE(ParseLayout(m, "4g.40gb@0,3g.40gb@0").ok());
  EXPECT_TRUE(ParseLayout(m, "4g.40gb@0,3g.40gb@4").ok());  // 4g + 3g: all 7 compute slices
  // 1g.20gb (2 memory slices) at 6 covers slices 6-7 and collides with 1g.10gb at 6.
  EXPECT_FALSE(ParseLayout(m, "1g.10gb@6,1g.20gb@6").ok());
}

TEST_F(MigTest, PerProfileCountCapsHold) {
  const GpuModel& m = Model("h100-80gb");
  EXPECT_TRUE(ParseLayout(m, "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,"
                             "1g.10gb@6")
                  .ok());
  // Only one +me instance per GPU: one set of JPEG/OFA engines.
  Result<MigLayout> two_me = ParseLayout(m, "1g.10gb+me@0,1g.10gb+me@1");
  ASSERT_FALSE(two_me.ok());
  EXPECT_NE(two_me.error().message.find("more than 1"), std::string::npos);
}

TEST_F(MigTest, AllBalancedCoversEveryMemorySlice) {
  for (const GpuModel& m : cat_.models()) {
    const MigLayout l = AllBalancedLayout(m);
    ASSERT_TRUE(ValidateLayout(m, l).ok()) << m.name;
    EXPECT_EQ(UsedMask(m, l), 0xFF) << m.name;
    EXPECT_EQ(l.size(), 4);
  }
}

TEST_F(MigTest, EncodeDecodeRoundTripsAndDistinguishesLayouts) {
  const GpuModel& m = Model("h200-141gb");
  const MigLayout a = *ParseLayout(m, "3g.71gb@4,2g.35gb@2,1g.18gb@0,1g.18gb@1");
  const MigLayout b = *ParseLayout(m, "3g.71gb@0,3g.71gb@4");
  EXPECT_EQ(MigLayout::Decode(a.Encode()), a);
  EXPECT_EQ(MigLayout::Decode(b.Encode()), b);
  EXPECT_NE(a.Encode(), b.Encode());
  EXPECT_EQ(ToString(m, a), "1g.18gb@0,1g.18gb@1,2g.35gb@2,3g.71gb@4");
  EXPECT_EQ(MigLayout().Encode(), 0u);
}

TEST_F(MigTest, ExhaustiveEnumerationMatchesTheBitmaskRule) {
  // Enumerate every set of (profile, start) pairs on a 7-slice board by depth-first search and
  // count the maximal valid layouts (no instance can be added). Each must validate, and the
  // disjoint-mask rule must reject any extension.
  const GpuModel& m = Model("a100-40gb");
  int maximal = 0;
  std::function<void(MigLayout, int)> dfs = [&](MigLayout l, int from) {
    bool extended = false;
    for (int cell = 0; cell < static_cast<int>(m.profiles.size()) * 8; ++cell) {
      const int p = cell / 8, s = cell % 8;
      if (!m.profiles[p].ValidStart(s) || l.size() == MigLayout::kMaxInstances) continue;
      MigLayout next = l;
      next.Add({static_cast<uint8_t>(p), static_cast<uint8_t>(s)});
      if (!ValidateLayout(m, next).ok()) continue;
      extended = true;
      if (cell >= from) dfs(next, cell + 1);
    }
    if (!extended) ++maximal;
  };
  dfs(MigLayout(), 0);
  EXPECT_GT(maximal, 10);
}

TEST_F(MigTest, CatalogueRejectsMalformedModels) {
  Catalogue c;
  GpuModel bad;
  bad.name = "x";
  bad.memory_mib = 1024;
  MigProfile p;
  p.name = "4g.x";
  p.compute_slices = 4;
  p.memory_slices = 4;
  p.max_count = 1;
  p.start_mask = 1 << 6;  // 4 slices from 6 runs past slice 7
  bad.profiles.push_back(p);
  EXPECT_FALSE(c.Add(bad).ok());
  EXPECT_EQ(c.size(), 0u);
  EXPECT_FALSE(c.Find("x").ok());
}

}  // namespace
}  // namespace gpupool
