// The pairing table of the gpupool policy (pairing.h): best fit decreasing, and the mean final
// waste of the GPUs that passed through each gap.
#include "policy/placement/pairing.h"

#include <gtest/gtest.h>

namespace gpupool {
namespace {

TEST(GapWaste, BestFitDecreasingPairsTheWorkload) {
  // Largest first, each into the fullest GPU it fits: 370 takes the 590's 410 free, not the
  // 650's 350 (too small); 320 takes the 650's; 160 fits nowhere any more (30, 40, 60 free).
  EXPECT_EQ(BestFitDecreasing({160, 320, 370, 470, 470, 590, 650}),
            (std::vector<std::vector<int>>{{650, 320}, {590, 370}, {470, 470}, {160}}));
}

TEST(GapWaste, MeanFinalWasteOfTheGpusThatPassedThroughTheGap) {
  // One GPU packs 650 + 320 and wastes 30, whichever pod came first; 210 free never occurs in
  // the packing and counts as wasted whole; a free GPU wastes nothing; whole GPUs (1000) and
  // nothing (0) are not fractions.
  const GapWaste w({650, 320, 1000, 0});
  EXPECT_DOUBLE_EQ(w(350), 30);
  EXPECT_DOUBLE_EQ(w(680), 30);
  EXPECT_DOUBLE_EQ(w(30), 30);
  EXPECT_DOUBLE_EQ(w(210), 210);
  EXPECT_DOUBLE_EQ(w(1000), 0);
  // Three 810s and one 160: GPUs {810, 160} (30 left) and {810} twice (190 left). A GPU with
  // 190 free ended with 30 once and 190 twice.
  const GapWaste v({810, 810, 810, 160});
  EXPECT_DOUBLE_EQ(v(190), (30.0 + 190 + 190) / 3);
  EXPECT_DOUBLE_EQ(v(840), 30);
  // Two equal pods on one GPU: both subsets of one pod give 530 free.
  EXPECT_DOUBLE_EQ(GapWaste({470, 470})(530), 60);
  // Nothing learned: every gap is wasted whole.
  EXPECT_DOUBLE_EQ(GapWaste()(400), 400);
}

TEST(GapWaste, MinimumBinSlackFillsEachGpuAsFullAsItsLargestRequestAllows) {
  // Best fit decreasing: 550 takes 370 (80 left), 460 takes both 220s (100 left), 160 alone:
  // three GPUs. Minimum bin slack: 550 with 220 + 220 (990), 460 with 370 + 160 (990): two.
  const std::vector<int> r = {220, 460, 160, 550, 370, 220};
  EXPECT_EQ(BestFitDecreasing(r).size(), 3u);
  EXPECT_EQ(MinimumBinSlack(r), (std::vector<std::vector<int>>{{550, 220, 220}, {460, 370, 160}}));
  // Of equal fills, the most of the largest requests: 500 + 500 before 500 + 250 + 250; and a
  // fill is repeated while its requests last (three GPUs of 810 + 160, then 810s alone).
  EXPECT_EQ(MinimumBinSlack({250, 500, 250, 500}), (std::vector<std::vector<int>>{{500, 500}, {250, 250}}));
  EXPECT_EQ(MinimumBinSlack({810, 810, 810, 810, 160, 160, 160}),
            (std::vector<std::vector<int>>{{810, 160}, {810, 160}, {810, 160}, {810}}));
  // Outside (0, 1000]: ignored.
  EXPECT_EQ(MinimumBinSlack({0, -5, 1001, 1000}), (std::vector<std::vector<int>>{{1000}}));
  EXPECT_TRUE(MinimumBinSlack({}).empty());
}

TEST(GapWaste, TheTableLearnedAgainIsTheSame) {
  // Built from the same requests in another order (the per-thread cache), and from others.
  const GapWaste a({650, 320, 470, 470}), b({470, 650, 470, 320}), c({810, 160});
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == c);
  EXPECT_EQ(GapWaste({650, 320, 470, 470}), a);
}

}  // namespace
}  // namespace gpupool
