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
  // A reservation for `tenant` (a maintenance window when invalid) of h100s over
  // [start_s, end_s), applied without a calendar check.
  void Reserve(TenantId tenant, int gpus, int start_s, int end_s) {
    const Reservation r{.id = s_.NextReservationId(), .tenant = tenant, .flavor = f_,
                        .amount = GpuEq::Gpus(gpus), .start = Time::FromSeconds(start_s),
                        .end = Time::FromSeconds(end_s), .maintenance = !tenant.valid()};
    ASSERT_TRUE(Apply(s_, ReservationCreated{r}).ok());
  }
  static bool Says(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
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

// --- reservations and maintenance (docs/design/reservations.md, "In the scheduler") ---------

TEST_F(QuotaTest, ReservationInForceIsExtraGuarantee) {
  // a: standing guarantee 4, reserved 4 over [100 s, 200 s). An inference-class job (may not
  // borrow) of 8 is guaranteed inside the window only.
  const TenantId a = T("a", {4});
  Reserve(a, 4, 100, 200);
  for (int t : {50, 200, 300}) {
    const QuotaBook book(s_, Time::FromSeconds(t));
    EXPECT_EQ(book.guaranteed(a, f_), GpuEq::Gpus(4)) << t;
    EXPECT_EQ(book.Check(a, f_, GpuEq::Gpus(8), false).code, ReasonCode::kMayNotBorrow) << t;
  }
  const QuotaBook book(s_, Time::FromSeconds(100));
  EXPECT_EQ(book.guaranteed(a, f_), GpuEq::Gpus(8));
  EXPECT_EQ(book.reserved(a, f_), GpuEq::Gpus(4));
  const QuotaVerdict v = book.Check(a, f_, GpuEq::Gpus(8), false);
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.kind, AdmissionKind::kGuaranteed);
  EXPECT_TRUE(Says(book.Explain(s_, a, f_, GpuEq::Gpus(9), ReasonCode::kMayNotBorrow),
                   "guarantee of 8 (4 standing + 4 reserved)"));
  // The book without a time counts standing quotas only.
  EXPECT_EQ(QuotaBook(s_).guaranteed(a, f_), GpuEq::Gpus(4));
}

TEST_F(QuotaTest, ReservationRaisesTheBorrowCapWithTheGuarantee) {
  // a: 4 guaranteed + borrow limit 2; with 4 reserved the cap is 4 + 4 + 2 = 10.
  const TenantId a = T("a", {4, 2});
  Reserve(a, 4, 0, 100);
  QuotaBook book(s_, Time::FromSeconds(10));
  book.Add(a, f_, GpuEq::Gpus(8));
  EXPECT_EQ(book.Check(a, f_, GpuEq::Gpus(2), true).kind, AdmissionKind::kBorrowed);
  EXPECT_EQ(book.Check(a, f_, GpuEq::Gpus(3), true).code, ReasonCode::kBorrowLimit);
}

TEST_F(QuotaTest, IdleReservedCapacityIsLentEvenWhenTheStandingGuaranteeIsNot) {
  // owner: 12 guaranteed, lends none of it; 4 reserved on top (16 of 16). borrower: 0.
  // Raising L with G keeps protected(owner) = 16 - 0 - (0 + 4) = 12, so the borrower may take
  // the 4 reserved GPUs while the owner leaves them idle. Were L left at 0, protected would be
  // 16 and nothing could be borrowed.
  const TenantId o = T("owner", {12, std::nullopt, 0});
  const TenantId b = T("borrower", {0});
  Reserve(o, 4, 0, 100);
  QuotaBook book(s_, Time::FromSeconds(10));
  EXPECT_EQ(book.lendable_to(b, f_), GpuEq::Gpus(4));
  EXPECT_EQ(book.Check(b, f_, GpuEq::Gpus(4), true).kind, AdmissionKind::kBorrowed);
  EXPECT_EQ(book.Check(b, f_, GpuEq::Gpus(5), true).code, ReasonCode::kNoLendableCapacity);
  // The borrower takes them; the owner is still within its guarantee for all 16 and so may
  // reclaim them (the scheduler's reclaim reads exactly these two numbers).
  book.Add(b, f_, GpuEq::Gpus(4));
  EXPECT_TRUE(book.borrowing(b, f_));
  EXPECT_EQ(book.Check(o, f_, GpuEq::Gpus(16), false).kind, AdmissionKind::kGuaranteed);
}

TEST_F(QuotaTest, ReservationWithoutAStandingQuotaGrantsJustTheReservation) {
  // x has no h100 quota: no_quota outside the window; inside, a guarantee of 2 and nothing to
  // borrow beyond it.
  const TenantId x = *AddTenant(s_, "x", {});
  Reserve(x, 2, 0, 100);
  EXPECT_EQ(QuotaBook(s_, Time::FromSeconds(100)).Check(x, f_, GpuEq::Gpus(1), true).code,
            ReasonCode::kNoQuota);
  const QuotaBook book(s_, Time::FromSeconds(0));
  EXPECT_TRUE(book.has_quota(x, f_));
  EXPECT_EQ(book.Check(x, f_, GpuEq::Gpus(2), false).kind, AdmissionKind::kGuaranteed);
  EXPECT_EQ(book.Check(x, f_, GpuEq::Gpus(3), true).code, ReasonCode::kBorrowLimit);
}

TEST_F(QuotaTest, MaintenanceTakesCapacityOutOfThePool) {
  // a and b are guaranteed 8 each of 16; 4 are under maintenance over [0 s, 100 s): C = 12.
  // With a at 8, b fits 4 more within its guarantee but not 5: the pool would need 13.
  const TenantId a = T("a", {8});
  const TenantId b = T("b", {8});
  const TenantId c = T("c", {0});
  Reserve(TenantId(), 4, 0, 100);
  QuotaBook book(s_, Time::FromSeconds(50));
  EXPECT_EQ(book.healthy_capacity(f_), GpuEq::Gpus(16));
  EXPECT_EQ(book.maintenance(f_), GpuEq::Gpus(4));
  EXPECT_EQ(book.capacity(f_), GpuEq::Gpus(12));
  book.Add(a, f_, GpuEq::Gpus(8));
  EXPECT_EQ(book.Check(b, f_, GpuEq::Gpus(4), false).kind, AdmissionKind::kGuaranteed);
  EXPECT_EQ(book.Check(b, f_, GpuEq::Gpus(5), false).code, ReasonCode::kMaintenance);
  EXPECT_TRUE(Says(book.Explain(s_, b, f_, GpuEq::Gpus(5), ReasonCode::kMaintenance),
                   "4 of 16 h100-80gb are under maintenance: 8 of the 12 left are in use"));
  // Borrowers see the smaller pool too: 12 - 8 used - 0 protected (b lends all) = 4.
  EXPECT_EQ(book.lendable_to(c, f_), GpuEq::Gpus(4));
  // Outside the window the pool is whole again.
  QuotaBook after(s_, Time::FromSeconds(100));
  after.Add(a, f_, GpuEq::Gpus(8));
  EXPECT_EQ(after.capacity(f_), GpuEq::Gpus(16));
  EXPECT_EQ(after.Check(b, f_, GpuEq::Gpus(8), false).kind, AdmissionKind::kGuaranteed);
}

TEST_F(QuotaTest, WorkOnAnUnhealthyGpuIsNotCountedOnCapacityTwice) {
  // a runs 4 GPUs of n0; then GPU 0, one of them, fails. C leaves the GPU out (15), and so must
  // P (3, not 4): else the failed GPU would lower what b may borrow twice.
  const TenantId a = T("a", {8});
  const TenantId b = T("b", {0});
  Result<JobId> job = Submit(s_, {.tenant = "a", .shape = *WholeGpus(s_, "h100-80gb", 4)}, Time());
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_TRUE(Apply(s_, JobAdmitted{*job, {{NodeId(0), {{.gpu = 0}, {.gpu = 1}, {.gpu = 2}, {.gpu = 3}}}},
                                    AdmissionKind::kGuaranteed, Time()})
                  .ok());
  const QuotaBook before(s_);
  EXPECT_EQ(before.usage_on_capacity(f_), GpuEq::Gpus(4));
  EXPECT_EQ(before.lendable_to(b, f_), GpuEq::Gpus(12));
  ASSERT_TRUE(Apply(s_, GpuHealthChanged{NodeId(0), 0, false, Time::FromSeconds(1)}).ok());
  const QuotaBook after(s_);
  EXPECT_EQ(after.capacity(f_), GpuEq::Gpus(15));
  EXPECT_EQ(after.usage(a, f_), GpuEq::Gpus(4)) << "the tenant is still charged its 4";
  EXPECT_EQ(after.usage_on_capacity(f_), GpuEq::Gpus(3));
  EXPECT_EQ(after.lendable_to(b, f_), GpuEq::Gpus(12)) << "15 - 3: the failed GPU counted once";
}

TEST_F(QuotaTest, MaintenanceLargerThanTheHealthyPoolLeavesNoCapacity) {
  T("a", {8});
  Reserve(TenantId(), 10, 0, 100);
  ASSERT_TRUE(Apply(s_, NodeConditionChanged{NodeId(1), NodeCondition::kCordoned, Time()}).ok());
  const QuotaBook book(s_, Time::FromSeconds(0));
  EXPECT_EQ(book.capacity(f_), GpuEq());  // 8 healthy - 10, never below 0
  EXPECT_EQ(book.Check(*s_.FindTenant("a"), f_, GpuEq::Gpus(1), false).code,
            ReasonCode::kMaintenance);
}

}  // namespace
}  // namespace gpupool
