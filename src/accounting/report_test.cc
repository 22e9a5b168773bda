// Report: clipping, grouping, filtering and exact prices, on hand-made intervals.
#include "accounting/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "model/builder.h"

namespace gpupool {
namespace {

constexpr int64_t kHourMs = 3'600'000;
const FlavorId kH100(0), kA100(1);

Time H(int64_t hours) { return Time::FromMillis(hours * kHourMs); }

UsageInterval I(uint32_t tenant, FlavorId flavor, GpuEq eq, Time start, Time end,
                UsageKind kind = UsageKind::kGuaranteed) {
  UsageInterval u;
  u.tenant = TenantId(tenant);
  u.flavor = flavor;
  u.eq = eq;
  u.start = start;
  u.end = end;
  u.kind = kind;
  return u;
}

UnitMillis GpuHours(int64_t n) { return static_cast<UnitMillis>(n) * kUnitMillisPerGpuHour; }

PriceList Prices() {  // h100: 4.000000 per GPU-hour, a100: 1.500000
  return PriceList{{{kH100, 4'000'000}, {kA100, 1'500'000}}};
}

std::vector<ReportRow> Rows(const std::vector<UsageInterval>& in, ReportQuery q,
                            PriceList p = Prices()) {
  Result<UsageReport> r = Report(in, q, p);
  GP_CHECK(r.ok()) << r.error().message;
  return r->rows;
}

TEST(ReportTest, ClipsIntervalsToTheWindow) {
  // One GPU over [0h, 10h), window [2h, 5h): 3 GPU-hours at 4.00 = 12.00.
  // [5h, 6h) starts at the window's end and [1h, 2h) ends at its start: neither counts.
  const auto rows =
      Rows({I(0, kH100, GpuEq::Gpus(1), H(0), H(10)), I(0, kH100, GpuEq::Gpus(1), H(5), H(6)),
            I(0, kH100, GpuEq::Gpus(1), H(1), H(2))},
           {.from = H(2), .to = H(5)});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].unit_millis == GpuHours(3));
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours, 3.0);
  EXPECT_EQ(rows[0].cost_micros, 12'000'000);
  EXPECT_EQ(rows[0].flavor, kH100);
  EXPECT_EQ(rows[0].kind, UsageKind::kGuaranteed);
}

TEST(ReportTest, MigAndFractionsAreBilledByGpuEquivalents) {
  // One 1g slice (1000 units = 1/7 GPU) for 7 h = 1 GPU-hour = 4.00.
  // 250 milli-GPUs (1750 units) for 2 h = 0.5 GPU-hour on an a100 = 0.75.
  const auto rows = Rows({I(0, kH100, GpuEq::MigSlices(1), H(0), H(7)),
                          I(1, kA100, GpuEq::MilliGpus(250), H(0), H(2))},
                         {.from = H(0), .to = H(24)});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].cost_micros, 4'000'000);
  EXPECT_TRUE(rows[1].unit_millis == GpuHours(1) / 2);
  EXPECT_EQ(rows[1].cost_micros, 750'000);
}

TEST(ReportTest, InfrastructureFailureIsRecordedButNotBilled) {
  const std::vector<UsageInterval> in = {
      I(0, kH100, GpuEq::Gpus(2), H(0), H(1)),
      I(0, kH100, GpuEq::Gpus(2), H(1), H(2), UsageKind::kInfrastructureFailure)};
  const auto by_kind = Rows(in, {.from = H(0), .to = H(2)});
  ASSERT_EQ(by_kind.size(), 2u);
  EXPECT_EQ(by_kind[1].kind, UsageKind::kInfrastructureFailure);
  EXPECT_TRUE(by_kind[1].unit_millis == GpuHours(2));
  EXPECT_TRUE(by_kind[1].billed_unit_millis == 0);
  EXPECT_EQ(by_kind[1].cost_micros, 0);
  const auto merged = Rows(in, {.from = H(0), .to = H(2), .by_kind = false});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_FALSE(merged[0].kind.has_value());
  EXPECT_TRUE(merged[0].unit_millis == GpuHours(4));
  EXPECT_TRUE(merged[0].billed_unit_millis == GpuHours(2));
  EXPECT_EQ(merged[0].cost_micros, 8'000'000);
  // Only unbilled usage of a flavor: no price needed.
  EXPECT_TRUE(Report({in[1]}, {.from = H(0), .to = H(2)}, PriceList{}).ok());
}

TEST(ReportTest, GroupsByFlavorAndKindInATotalOrder) {
  const std::vector<UsageInterval> in = {
      I(1, kA100, GpuEq::Gpus(1), H(0), H(1), UsageKind::kBorrowed),
      I(0, kA100, GpuEq::Gpus(1), H(0), H(1)),
      I(1, kH100, GpuEq::Gpus(1), H(0), H(1), UsageKind::kDedicated),
      I(1, kH100, GpuEq::Gpus(1), H(0), H(1)),
      I(1, kH100, GpuEq::Gpus(3), H(0), H(1)),
  };
  const auto rows = Rows(in, {.from = H(0), .to = H(1)});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].tenant, TenantId(0));
  EXPECT_EQ(rows[1].tenant, TenantId(1));
  EXPECT_EQ(rows[1].flavor, kH100);
  EXPECT_EQ(rows[1].kind, UsageKind::kGuaranteed);
  EXPECT_TRUE(rows[1].unit_millis == GpuHours(4));
  EXPECT_EQ(rows[2].kind, UsageKind::kDedicated);
  EXPECT_EQ(rows[3].flavor, kA100);
  EXPECT_EQ(rows[3].kind, UsageKind::kBorrowed);
  // Input order does not matter.
  std::vector<UsageInterval> reversed(in.rbegin(), in.rend());
  EXPECT_EQ(Rows(reversed, {.from = H(0), .to = H(1)}), rows);

  // Flavors merged: each flavor still priced at its own rate. Tenant 1: 5 h100 GPU-hours at
  // 4.00 + 1 a100 GPU-hour at 1.50 = 21.50.
  const auto merged = Rows(in, {.from = H(0), .to = H(1), .by_flavor = false, .by_kind = false});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_FALSE(merged[1].flavor.has_value());
  EXPECT_TRUE(merged[1].unit_millis == GpuHours(6));
  EXPECT_EQ(merged[1].cost_micros, 21'500'000);
}

TEST(ReportTest, TenantFilter) {
  const auto rows =
      Rows({I(0, kH100, GpuEq::Gpus(1), H(0), H(1)), I(2, kH100, GpuEq::Gpus(1), H(0), H(1))},
           {.from = H(0), .to = H(1), .tenant = TenantId(2)});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].tenant, TenantId(2));
}

TEST(ReportTest, PriceMathIsExactAndRoundsOnceHalfUp) {
  // 1 unit for 1 ms at 12,600,000,000 micros per GPU-hour: 1.26e10 / 2.52e10 = 0.5 -> 1.
  PriceList p{{{kH100, 12'600'000'000}}};
  EXPECT_EQ(Rows({I(0, kH100, GpuEq::Units(1), Time(), Time::FromMillis(1))},
                 {.from = Time(), .to = H(1)}, p)[0]
                .cost_micros,
            1);
  // Just under a half rounds down.
  p.micros_per_gpu_hour[kH100] = 12'599'999'999;
  EXPECT_EQ(Rows({I(0, kH100, GpuEq::Units(1), Time(), Time::FromMillis(1))},
                 {.from = Time(), .to = H(1)}, p)[0]
                .cost_micros,
            0);
  // Rounding once per row: 3 intervals of 0.4 micro each are 1.2 -> 1, not 0 + 0 + 0.
  p.micros_per_gpu_hour[kH100] = 10'080'000'000;  // 0.4 micro per unit-ms
  std::vector<UsageInterval> in(3, I(0, kH100, GpuEq::Units(1), Time(), Time::FromMillis(1)));
  EXPECT_EQ(Rows(in, {.from = Time(), .to = H(1)}, p)[0].cost_micros, 1);
  // A year of 1000 H100s at 4.00: 8760 h x 1000 x 4 = 35,040,000.000000, exactly.
  const auto year =
      Rows({I(0, kH100, GpuEq::Gpus(1000), H(0), H(8760))}, {.from = H(0), .to = H(8760)});
  EXPECT_EQ(year[0].cost_micros, int64_t{35'040'000} * 1'000'000);
}

TEST(ReportTest, Errors) {
  const std::vector<UsageInterval> in = {I(0, kA100, GpuEq::Gpus(1), H(0), H(1))};
  EXPECT_FALSE(Report(in, {.from = H(2), .to = H(1)}, Prices()).ok());  // inverted window
  // A bad price is refused without naming the flavor's internal id.
  for (int64_t bad : {int64_t{-1}, PriceList::kMaxMicrosPerGpuHour + 1}) {
    Result<UsageReport> r = Report(in, {.from = H(0), .to = H(1)}, PriceList{{{kA100, bad}}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message.find("flavor"), std::string::npos) << r.error().message;
  }
  // Sums that would not fit 128 bits are refused, never wrapped.
  const GpuEq huge = GpuEq::Units(std::numeric_limits<int64_t>::max() / 2);
  std::vector<UsageInterval> big(
      8, I(0, kA100, huge, Time(), Time::FromMillis(std::numeric_limits<int64_t>::max() - 1)));
  Result<UsageReport> r = Report(big, {.from = Time(), .to = Time::Never()}, Prices());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
}

TEST(ReportTest, CsvIsExactAndQuoted) {
  State s;
  AddDefaultPriorityClasses(s);
  ASSERT_TRUE(AddTenant(s, "team-a", {}).ok());
  ASSERT_TRUE(AddTenant(s, "team-b", {}).ok());
  const FlavorId h100 = *s.catalogue().Find("h100-80gb");
  PriceList p{{{h100, 4'000'000}}};
  const std::vector<UsageInterval> in = {
      I(0, h100, GpuEq::MigSlices(1), H(0), H(1)),  // 1/7 GPU-hour = 0.142857 (rounded)
      I(1, h100, GpuEq::Gpus(2), H(0), H(1), UsageKind::kInfrastructureFailure)};
  Result<UsageReport> rows = Report(in, {.from = H(0), .to = H(1)}, p);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(RenderCsv(rows->rows, s),
            "tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost,priced_cost,unpriced_unit_ms\n"
            "team-a,h100-80gb,guaranteed,0.142857,3600000000,3600000000,0.571429,0.571429,0\n"
            "team-b,h100-80gb,infrastructure_failure,2.000000,50400000000,0,0.000000,0.000000,0\n");
  Result<UsageReport> merged =
      Report(in, {.from = H(0), .to = H(1), .by_flavor = false, .by_kind = false}, p);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(RenderCsv(merged->rows, s),
            "tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost,priced_cost,unpriced_unit_ms\n"
            "team-a,,,0.142857,3600000000,3600000000,0.571429,0.571429,0\n"
            "team-b,,,2.000000,50400000000,0,0.000000,0.000000,0\n");
  // Without a price: the quantities, cost "unpriced", nothing priced, all billed usage unpriced.
  Result<UsageReport> none = Report({in[0]}, {.from = H(0), .to = H(1)}, PriceList{});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(RenderCsv(none->rows, s),
            "tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost,priced_cost,unpriced_unit_ms\n"
            "team-a,h100-80gb,guaranteed,0.142857,3600000000,3600000000,unpriced,0.000000,3600000000\n");
}

// A reservation of 4 H100 over [2h, 6h) for tenant 0; a job naming it holds 3 GPUs over
// [1h, 8h) (admitted earlier under the tenant's guarantee, still running after the window).
std::vector<ReservationSpan> Spans() {
  return {{ReservationId(7), TenantId(0), kH100, GpuEq::Gpus(4), H(2), H(6)}};
}
UsageInterval Named(GpuEq eq, Time start, Time end, UsageKind kind = UsageKind::kGuaranteed) {
  UsageInterval u = I(0, kH100, eq, start, end, kind);
  u.reservation = ReservationId(7);
  return u;
}
std::map<UsageKind, UnitMillis> ByKind(const std::vector<ReportRow>& rows) {
  std::map<UsageKind, UnitMillis> out;
  for (const ReportRow& r : rows) out[*r.kind] += r.unit_millis;
  return out;
}

TEST(ReportTest, ANamedJobIsReservedInsideTheWindowAndTheRestIsReservedIdle) {
  const std::vector<UsageInterval> in = {Named(GpuEq::Gpus(3), H(1), H(8))};
  Result<UsageReport> rows = Report(in, Spans(), {.from = H(0), .to = H(24)}, Prices());
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto k = ByKind(rows->rows);
  // 3 GPUs x ([1h,2h) + [6h,8h)) guaranteed, 3 x 4h reserved, (4-3) x 4h idle.
  EXPECT_TRUE(k[UsageKind::kGuaranteed] == GpuHours(9));
  EXPECT_TRUE(k[UsageKind::kReserved] == GpuHours(12));
  EXPECT_TRUE(k[UsageKind::kReservedIdle] == GpuHours(4));
  // Reserved plus idle is the reservation's amount x window.
  EXPECT_TRUE(k[UsageKind::kReserved] + k[UsageKind::kReservedIdle] == GpuHours(16));
  // Idle reserved time is billed to the reserver at the flavor's price: 25 GPU-hours x 4.00.
  int64_t cost = 0;
  for (const ReportRow& r : rows->rows) cost += r.cost_micros;
  EXPECT_EQ(cost, 100'000'000);

  PriceList free_idle = Prices();
  free_idle.bill_reserved_idle = false;
  rows = Report(in, Spans(), {.from = H(0), .to = H(24)}, free_idle);
  ASSERT_TRUE(rows.ok());
  cost = 0;
  for (const ReportRow& r : rows->rows) {
    cost += r.cost_micros;
    if (r.kind == UsageKind::kReservedIdle) {
      EXPECT_TRUE(r.billed_unit_millis == 0);
    }
  }
  EXPECT_EQ(cost, 84'000'000);
}

TEST(ReportTest, ReservationsAreClippedToTheWindowAndFilteredByTenant) {
  const std::vector<UsageInterval> in = {Named(GpuEq::Gpus(3), H(1), H(8))};
  // Window [3h, 4h): 3 reserved, 1 idle.
  Result<UsageReport> rows = Report(in, Spans(), {.from = H(3), .to = H(4)}, Prices());
  ASSERT_TRUE(rows.ok());
  auto k = ByKind(rows->rows);
  EXPECT_TRUE(k[UsageKind::kReserved] == GpuHours(3));
  EXPECT_TRUE(k[UsageKind::kReservedIdle] == GpuHours(1));
  EXPECT_EQ(k.count(UsageKind::kGuaranteed), 0u);
  // Another tenant sees none of it.
  rows = Report(in, Spans(), {.from = H(0), .to = H(24), .tenant = TenantId(1)}, Prices());
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->rows.empty());
  // An unused reservation is all idle.
  rows = Report({}, Spans(), {.from = H(0), .to = H(24)}, Prices());
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_TRUE(rows->rows[0].unit_millis == GpuHours(16));
}

TEST(ReportTest, LostTimeUnderAReservationStaysAnInfrastructureFailure) {
  const std::vector<UsageInterval> in = {
      Named(GpuEq::Gpus(2), H(2), H(4), UsageKind::kInfrastructureFailure)};
  Result<UsageReport> rows = Report(in, Spans(), {.from = H(0), .to = H(24)}, Prices());
  ASSERT_TRUE(rows.ok());
  auto k = ByKind(rows->rows);
  EXPECT_TRUE(k[UsageKind::kInfrastructureFailure] == GpuHours(4));
  EXPECT_EQ(k.count(UsageKind::kReserved), 0u);
  // Take or pay counts lost capacity as held: idle is (4-2) x 2h + 4 x 2h.
  EXPECT_TRUE(k[UsageKind::kReservedIdle] == GpuHours(12));
}

// Using a reservation's capacity without naming it is not billed twice: the tenant pays for
// max(A, u) while the reservation is in force.
TEST(ReportTest, UnnamedUseOfReservedCapacityIsNotBilledTwice) {
  const std::vector<UsageInterval> in = {I(0, kH100, GpuEq::Gpus(4), H(2), H(6)),   // unnamed, all 4
                                         I(0, kH100, GpuEq::Gpus(2), H(0), H(3)),   // before and into it
                                         I(1, kH100, GpuEq::Gpus(8), H(0), H(24))};  // another tenant
  Result<UsageReport> rows = Report(in, Spans(), {.from = H(0), .to = H(24)}, Prices());
  ASSERT_TRUE(rows.ok());
  auto k = ByKind(rows->rows);
  EXPECT_EQ(k.count(UsageKind::kReservedIdle), 0u) << "4 GPUs held throughout the window";
  // Half the window used: idle is the other half.
  rows = Report({I(0, kH100, GpuEq::Gpus(4), H(2), H(4))}, Spans(), {.from = H(0), .to = H(24)}, Prices());
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(ByKind(rows->rows)[UsageKind::kReservedIdle] == GpuHours(8));
}

TEST(ReportTest, OnDemandUsageIsBilledAtTheOnDemandPrice) {
  PriceList p = Prices();
  p.on_demand_micros_per_gpu_hour[kH100] = 10'000'000;
  const auto rows = Rows({I(0, kH100, GpuEq::Gpus(2), H(0), H(3), UsageKind::kOnDemand),
                          I(0, kA100, GpuEq::Gpus(1), H(0), H(2), UsageKind::kOnDemand)},
                         {.from = H(0), .to = H(24)}, p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].cost_micros, 60'000'000);  // 6 GPU-hours x 10.00 on demand
  EXPECT_EQ(rows[1].cost_micros, 3'000'000);   // no on-demand a100 price: the list price
}


TEST(ReportTest, APriceChangeDoesNotRepriceThePast) {
  // One h100 over [0h, 4h); the price goes from 4.00 to 10.00 at 3h (and on demand from 6.00 to
  // 7.00). Each hour is billed at the price in force then: 3 x 4.00 + 10.00 = 22.00.
  PriceList later = Prices();
  later.micros_per_gpu_hour[kH100] = 10'000'000;
  PriceList first = Prices();
  first.on_demand_micros_per_gpu_hour[kH100] = 6'000'000;
  later.on_demand_micros_per_gpu_hour[kH100] = 7'000'000;
  const PriceHistory history = {{H(0), first}, {H(3), later}};
  Result<UsageReport> rows =
      Report({I(0, kH100, GpuEq::Gpus(1), H(0), H(4)),
              I(1, kH100, GpuEq::Gpus(1), H(2), H(5), UsageKind::kOnDemand)},
             {}, {.from = H(0), .to = H(24)}, history);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_EQ(rows->rows[0].cost_micros, 22'000'000);
  EXPECT_EQ(rows->rows[1].cost_micros, 6'000'000 + 2 * 7'000'000);
  // A window that ends before the change never sees the new price.
  rows = Report({I(0, kH100, GpuEq::Gpus(1), H(0), H(4))}, {}, {.from = H(0), .to = H(3)}, history);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->rows[0].cost_micros, 12'000'000);
  // Usage before the first list's start is priced by the first list.
  rows = Report({I(0, kH100, GpuEq::Gpus(1), H(0), H(1))}, {}, {.from = H(0), .to = H(1)},
                PriceHistory{{H(10), Prices()}, {H(20), later}});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->rows[0].cost_micros, 4'000'000);
}

TEST(ReportTest, ReservedIdleIsPricedAndBilledByTheListInForce) {
  // The reservation holds 4 h100 over [2h, 6h); nothing uses it. At 4h the price doubles and
  // idle reserved capacity stops being billed: 4 GPUs x 2 h x 4.00 = 32.00, then nothing.
  PriceList later = Prices();
  later.micros_per_gpu_hour[kH100] = 8'000'000;
  later.bill_reserved_idle = false;
  Result<UsageReport> rows = Report({}, Spans(), {.from = H(0), .to = H(24)},
                                               PriceHistory{{H(0), Prices()}, {H(4), later}});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_EQ(rows->rows[0].kind, UsageKind::kReservedIdle);
  EXPECT_TRUE(rows->rows[0].unit_millis == GpuHours(16));
  EXPECT_TRUE(rows->rows[0].billed_unit_millis == GpuHours(8));
  EXPECT_EQ(rows->rows[0].cost_micros, 32'000'000);
}

TEST(ReportTest, PriceHistoryErrors) {
  const std::vector<UsageInterval> in = {I(0, kH100, GpuEq::Gpus(1), H(0), H(1))};
  EXPECT_FALSE(Report(in, {}, {.from = H(0), .to = H(1)}, PriceHistory{}).ok());
  EXPECT_FALSE(
      Report(in, {}, {.from = H(0), .to = H(1)}, PriceHistory{{H(2), Prices()}, {H(2), Prices()}}).ok());
}

TEST(ReportTest, UsageWithoutAnyPriceStillReportsItsQuantities) {
  // No price at all: 2 GPUs for 3 h are 6 GPU-hours, billed, with no cost; one span says so.
  // Lost time needs no price and adds nothing unpriced.
  Result<UsageReport> r =
      Report({I(0, kH100, GpuEq::Gpus(2), H(1), H(4)),
              I(0, kH100, GpuEq::Gpus(1), H(0), H(1), UsageKind::kInfrastructureFailure)},
             {.from = H(0), .to = H(24), .by_kind = false}, PriceList{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->rows.size(), 1u);
  const ReportRow& row = r->rows[0];
  EXPECT_TRUE(row.unit_millis == GpuHours(7));
  EXPECT_TRUE(row.billed_unit_millis == GpuHours(6));
  EXPECT_TRUE(row.unpriced_unit_millis == GpuHours(6));
  EXPECT_FALSE(row.priced());
  EXPECT_EQ(row.cost_micros, 0);
  EXPECT_EQ(r->unpriced, (std::vector<UnpricedSpan>{{kH100, H(0), H(24)}}));
}

// The sequence: a price change at 2h omits the a100, the next one at 5h prices it again.
// Before 2h the first list (the incomplete one) is in force too. The a100's hours up to 5h stay
// unpriced (nothing re-prices the past), its later hours are priced, and the report never fails.
TEST(ReportTest, AFlavorLeftOutOfOnePriceChangeIsUnpricedOnlyWhileThatListIsInForce) {
  PriceList no_a100 = Prices();
  no_a100.micros_per_gpu_hour.erase(kA100);
  const PriceHistory history = {{H(2), no_a100}, {H(5), Prices()}};
  const std::vector<UsageInterval> in = {I(0, kA100, GpuEq::Gpus(1), H(0), H(8)),
                                         I(0, kH100, GpuEq::Gpus(1), H(0), H(8))};
  Result<UsageReport> r = Report(in, {}, {.from = H(0), .to = H(24)}, history);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->rows.size(), 2u);
  const ReportRow& h100 = r->rows[0];
  const ReportRow& a100 = r->rows[1];
  EXPECT_TRUE(h100.priced());
  EXPECT_EQ(h100.cost_micros, 32'000'000);  // 8 GPU-hours x 4.00
  EXPECT_TRUE(a100.billed_unit_millis == GpuHours(8));
  EXPECT_TRUE(a100.unpriced_unit_millis == GpuHours(5));  // [0h, 5h)
  EXPECT_EQ(a100.cost_micros, 4'500'000);                 // [5h, 8h) x 1.50
  EXPECT_EQ(r->unpriced, (std::vector<UnpricedSpan>{{kA100, H(0), H(5)}}));
  // A window after the complete list took over is fully priced.
  r = Report(in, {}, {.from = H(5), .to = H(24)}, history);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->unpriced.empty());
  for (const ReportRow& row : r->rows) EXPECT_TRUE(row.priced());
  // A window inside the incomplete list's time sees the span clipped to it.
  r = Report(in, {}, {.from = H(3), .to = H(4)}, history);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->unpriced, (std::vector<UnpricedSpan>{{kA100, H(3), H(4)}}));
  // Omitted in two lists in a row: one span over both; on-demand usage with neither an
  // on-demand nor a list price is unpriced too.
  r = Report({I(0, kA100, GpuEq::Gpus(1), H(0), H(8), UsageKind::kOnDemand)}, {},
             {.from = H(0), .to = H(24)},
             PriceHistory{{H(0), no_a100}, {H(3), no_a100}, {H(6), Prices()}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->unpriced, (std::vector<UnpricedSpan>{{kA100, H(0), H(6)}}));
  EXPECT_TRUE(r->rows[0].unpriced_unit_millis == GpuHours(6));
}

}  // namespace
}  // namespace gpupool
