#include "policy/quota/quota.h"

#include <gtest/gtest.h>

#include "model/builder.h"

namespace gpupool {
namespace {

// Pool: 2 nodes x 8 h100 = 16 GPUs.
class QuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    NodeTemplate t{.flavor = "h100-80gb"};
    ASSERT_TRUE(AddNode(s_, "n0", t).ok());
    ASSERT_TRUE(AddNode(s_, "n1", t).ok());
    f_ = *s_.catalogue().Find("h100-80gb");
  }
  TenantId T(const std::string& name, QuotaGpus q) {
    return *AddTenant(s_, name, {{"h100-80gb", q}});
  }
  State s_;
  FlavorId f_;
};

TEST_F(QuotaTest, WithinGuaranteeIsGuaranteedKind) {
  const TenantId a = T("a", {8});
  QuotaBook book(s_);
  const QuotaVerdict v = book.Check(a, f_, GpuEq::Gpus(8), false);
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.kind, AdmissionKind::kGuaranteed);
}

TEST_F(QuotaTest, BorrowLimitCapsUsageAboveGuarantee) {
  // a: guaranteed 4, may borrow 2 more: 6 in all.
  const TenantId a = T("a", {4, 2});
  QuotaBook book(s_);
  book.Add(a, f_, GpuEq::Gpus(5));
  EXPECT_EQ(book.Check(a, f_, GpuEq::Gpus(1), true).kind, AdmissionKind::kBorrowed);
  EXPECT_EQ(book.Check(a, f_, GpuEq::Gpus(2), true).code, ReasonCode::kBorrowLimit);
  EXPECT_NE(book.Explain(s_, a, f_, GpuEq::Gpus(2), ReasonCode::kBorrowLimit)
                .find("using 5 of max 6"),
            std::string::npos);
}

TEST_F(QuotaTest, LendLimitProtectsTheRestOfAnUnusedGuarantee) {
  // owner: guaranteed 12 of the 16, lends at most 2 of it. borrower: guaranteed 0.
  // Lendable to the borrower: 16 - 0 used - (12 - 0 - 2) protected = 6.
  T("owner", {12, std::nullopt, 2});
  const TenantId b = T("borrower", {0});
  QuotaBook book(s_);
  EXPECT_EQ(book.lendable_to(b, f_), GpuEq::Gpus(6));
  EXPECT_TRUE(book.Check(b, f_, GpuEq::Gpus(6), true).ok());
  EXPECT_EQ(book.Check(b, f_, GpuEq::Gpus(7), true).code, ReasonCode::kNoLendableCapacity);
}

TEST_F(QuotaTest, ProtectionShrinksAsTheOwnerUsesItsGuarantee) {
  const TenantId o = T("owner", {12, std::nullopt, 2});
  const TenantId b = T("borrower", {0});
  QuotaBook book(s_);
  book.Add(o, f_, GpuEq::Gpus(10));
  // owner unused 2, all of it lendable: protected 0. Free = 16 - 10 = 6.
  EXPECT_EQ(book.lendable_to(b, f_), GpuEq::Gpus(6));
  book.Remove(o, f_, GpuEq::Gpus(10));
  EXPECT_EQ(book.lendable_to(b, f_), GpuEq::Gpus(6));
}

TEST_F(QuotaTest, MayNotBorrowAndNoQuotaAreDistinctReasons) {
  const TenantId a = T("a", {2});
  const TenantId none = *AddTenant(s_, "none", {});
  QuotaBook book(s_);
  EXPECT_EQ(book.Check(a, f_, GpuEq::Gpus(3), false).code, ReasonCode::kMayNotBorrow);
  EXPECT_EQ(book.Check(none, f_, GpuEq::Gpus(1), true).code, ReasonCode::kNoQuota);
}

TEST_F(QuotaTest, CapacityCountsOnlyReadySharedPoolHealthyGpus) {
  T("a", {1});
  ASSERT_TRUE(Apply(s_, NodeConditionChanged{NodeId(1), NodeCondition::kCordoned, Time()}).ok());
  ASSERT_TRUE(Apply(s_, GpuHealthChanged{NodeId(0), 3, false, Time()}).ok());
  QuotaBook book(s_);
  EXPECT_EQ(book.capacity(f_), GpuEq::Gpus(7));
}

TEST_F(QuotaTest, ShortfallWhenHealthFailuresLeaveGuaranteesUncovered) {
  T("a", {10});
  T("b", {6});
  EXPECT_TRUE(GuaranteeShortfalls(s_).empty());  // 16 of 16
  ASSERT_TRUE(Apply(s_, GpuHealthChanged{NodeId(0), 0, false, Time()}).ok());
  const std::vector<GuaranteeShortfall> sf = GuaranteeShortfalls(s_);
  ASSERT_EQ(sf.size(), 1u);
  EXPECT_EQ(sf[0].flavor, f_);
  EXPECT_EQ(sf[0].guaranteed, GpuEq::Gpus(16));
  EXPECT_EQ(sf[0].capacity, GpuEq::Gpus(15));
}

TEST_F(QuotaTest, WorkOnCordonedNodesIsNotCountedTwiceInLendableCapacity) {
  // b runs 8 on n1, which is then cordoned: capacity drops to n0's 8. b's 8 still count as b's
  // usage, but they are not on the capacity, so a may still borrow all of n0.
  const TenantId a = T("a", {0});
  const TenantId b = T("b", {8});
  const JobId j = *Submit(s_, {.tenant = "b", .shape = *WholeGpus(s_, "h100-80gb", 8)}, Time());
  std::vector<GpuGrant> grants;
  for (uint16_t g = 0; g < 8; ++g) grants.push_back({.gpu = g});
  ASSERT_TRUE(Apply(s_, JobAdmitted{j, {{NodeId(1), grants}}, AdmissionKind::kGuaranteed, Time()}).ok());
  ASSERT_TRUE(Apply(s_, NodeConditionChanged{NodeId(1), NodeCondition::kCordoned, Time()}).ok());
  QuotaBook book(s_);
  EXPECT_EQ(book.capacity(f_), GpuEq::Gpus(8));
  EXPECT_EQ(book.usage(b, f_), GpuEq::Gpus(8));
  EXPECT_EQ(book.lendable_to(a, f_), GpuEq::Gpus(8));
}

}  // namespace
}  // namespace gpupool
