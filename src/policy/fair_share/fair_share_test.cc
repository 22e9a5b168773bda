#include "policy/fair_share/fair_share.h"

#include <gtest/gtest.h>

#include "model/builder.h"

namespace gpupool {
namespace {

TEST(FairShare, WeightScalesTheBorrowedDominantShare) {
  State s;
  NodeTemplate t{.flavor = "h100-80gb"};
  ASSERT_TRUE(AddNode(s, "n0", t).ok());
  ASSERT_TRUE(AddNode(s, "n1", t).ok());
  const TenantId light = *AddTenant(s, "light", {{"h100-80gb", {0}}}, 1000);
  const TenantId heavy = *AddTenant(s, "heavy", {{"h100-80gb", {0}}}, 2000);
  const FlavorId f = *s.catalogue().Find("h100-80gb");
  QuotaBook book(s);
  book.Add(light, f, GpuEq::Gpus(2));  // 2/16 borrowed, weight 1: 0.125
  book.Add(heavy, f, GpuEq::Gpus(4));  // 4/16 borrowed, weight 2: 0.125
  const size_t nf = s.catalogue().size();
  EXPECT_DOUBLE_EQ(BorrowedDominantShare(book, s.tenant(light), nf), 0.125);
  EXPECT_DOUBLE_EQ(BorrowedDominantShare(book, s.tenant(heavy), nf), 0.125);
}

TEST(FairShare, GuaranteedUsageIsNotBorrowed) {
  State s;
  ASSERT_TRUE(AddNode(s, "n0", NodeTemplate{.flavor = "a100-80gb"}).ok());
  const TenantId a = *AddTenant(s, "a", {{"a100-80gb", {4}}});
  const FlavorId f = *s.catalogue().Find("a100-80gb");
  QuotaBook book(s);
  book.Add(a, f, GpuEq::Gpus(4));
  EXPECT_DOUBLE_EQ(BorrowedDominantShare(book, s.tenant(a), s.catalogue().size()), 0.0);
  book.Add(a, f, GpuEq::Gpus(2));
  EXPECT_DOUBLE_EQ(BorrowedDominantShare(book, s.tenant(a), s.catalogue().size()), 0.25);
}

TEST(FairShare, BlendMovesWeightToHistory) {
  State s;
  *AddTenant(s, "a", {}, 1000);
  *AddTenant(s, "b", {}, 1000);
  const std::vector<double> h = HistoryShares(s, {300.0, 100.0});
  EXPECT_DOUBLE_EQ(h[0], 0.75);
  EXPECT_DOUBLE_EQ(h[1], 0.25);
  EXPECT_DOUBLE_EQ(FairShareKey({.usage_blend = 0.0}, 0.5, h[0]), 0.5);
  EXPECT_DOUBLE_EQ(FairShareKey({.usage_blend = 0.5}, 0.5, h[0]), 0.625);
  EXPECT_EQ(HistoryShares(s, {0.0, 0.0}), std::vector<double>({0.0, 0.0}));
}

}  // namespace
}  // namespace gpupool
