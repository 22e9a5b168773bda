// Usage reports over the ledger (DESIGN.md §8): per tenant and period, optionally grouped by
// flavor and by kind, priced per flavor per GPU-hour. docs/design/accounting.md has the math.
//
// Exactness: usage is summed as UnitMillis (128-bit) with overflow checks; a row's cost is the
// exact sum over its flavors of billed unit-ms x price, divided by kUnitMillisPerGpuHour and
// rounded half up ONCE, at the row. So the sum of the rows' costs may differ from the cost of
// the sum by at most half a micro per row; usage sums are exact.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "accounting/ledger.h"
#include "core/ids.h"
#include "core/result.h"
#include "core/time.h"
#include "model/state.h"

namespace gpupool {

// Prices per flavor in micro-currency per GPU-hour (1 GPU = 7000 units, so a MIG slice costs a
// seventh and 250 milli-GPUs a quarter of the GPU-hour price).
struct PriceList {
  static constexpr int64_t kMaxMicrosPerGpuHour = 1'000'000'000'000;  // 1e6 currency units
  std::map<FlavorId, int64_t> micros_per_gpu_hour;
  // On-demand (burst) usage is billed at its own price per flavor; a flavor missing here is
  // billed at its micros_per_gpu_hour.
  std::map<FlavorId, int64_t> on_demand_micros_per_gpu_hour;
  // Reserved capacity that no job used is billed to the reserver (DESIGN.md §8); false: it is
  // reported (kind reserved_idle) but not billed.
  bool bill_reserved_idle = true;
  friend bool operator==(const PriceList&, const PriceList&) = default;
};

// Price lists over time (a price change must not re-price the past). Each list applies from its
// `from` until the next one's; usage before the first `from` is priced by the first list.
struct PricedPeriod {
  Time from;
  PriceList prices;
  friend bool operator==(const PricedPeriod&, const PricedPeriod&) = default;
};
using PriceHistory = std::vector<PricedPeriod>;  // `from` strictly increasing; not empty

struct ReportQuery {
  Time from, to;                   // the window [from, to); intervals are clipped to it
  bool by_flavor = true;           // one row per flavor, else flavors merged
  bool by_kind = true;             // one row per kind, else kinds merged
  std::optional<TenantId> tenant;  // only this tenant
};

struct ReportRow {
  TenantId tenant;
  std::optional<FlavorId> flavor;     // set iff grouped by flavor
  std::optional<UsageKind> kind;      // set iff grouped by kind
  UnitMillis unit_millis = 0;         // all usage in the window, billed or not
  UnitMillis billed_unit_millis = 0;  // excluding kInfrastructureFailure (and kReservedIdle
                                      // unless PriceList::bill_reserved_idle)
  // The part of billed_unit_millis whose flavor had no price in the list in force then: it is
  // not in cost_micros, and the row's cost is unknown while this is not zero (priced()).
  UnitMillis unpriced_unit_millis = 0;
  double gpu_hours = 0;               // unit_millis / kUnitMillisPerGpuHour, for display only
  int64_t cost_micros = 0;            // billed usage that has a price, at it, rounded half up
  bool priced() const { return unpriced_unit_millis == 0; }
  friend bool operator==(const ReportRow&, const ReportRow&) = default;
};

// A flavor with billed usage in the window while the price list in force had no price for it
// (a missing price is not a free flavor: that usage is reported, not costed).
struct UnpricedSpan {
  FlavorId flavor;
  Time from, to;  // the part of the window that list was in force, adjacent lists merged
  friend bool operator==(const UnpricedSpan&, const UnpricedSpan&) = default;
};

struct UsageReport {
  std::vector<ReportRow> rows;
  std::vector<UnpricedSpan> unpriced;  // in (flavor, from) order
  friend bool operator==(const UsageReport&, const UsageReport&) = default;
};

// Rows in (tenant, flavor, kind) order; groups with no usage in the window have no row.
// `reservations` (Ledger::Reservations) turn the part of an interval that names a reservation
// and lies inside its window into kReserved (an infrastructure failure stays one), and add
// kReservedIdle rows, take or pay: for each tenant and flavor, the integral over the query
// window of max(0, A(t) - u(t)), A(t) the amount of its reservations in force and u(t) all it
// holds of the flavor. So the rows other than reserved_idle sum to the integral of allocated
// capacity, and a tenant with reservations in force pays for max(A(t), u(t)) of the flavor.
// Each millisecond is priced by the list in force then (usage and reserved-idle alike), and a
// row's cost is still rounded once: the exact sum over (price period, flavor) of billed unit-ms
// x price. Billed usage of a flavor with no price in its period is never an error: the row
// counts it in unpriced_unit_millis, and `unpriced` says which flavor lacked a price when.
// Errors (kInvalidArgument; they name no internal id): to < from; a price outside
// [0, kMaxMicrosPerGpuHour]; an empty history or one not in strictly increasing order; a sum
// that would overflow.
Result<UsageReport> Report(const std::vector<UsageInterval>& intervals,
                           const std::vector<ReservationSpan>& reservations,
                           const ReportQuery& query, const PriceHistory& history);
// One price list for all time.
Result<UsageReport> Report(const std::vector<UsageInterval>& intervals,
                           const std::vector<ReservationSpan>& reservations,
                           const ReportQuery& query, const PriceList& prices);
// The same without reservations.
Result<UsageReport> Report(const std::vector<UsageInterval>& intervals, const ReportQuery& query,
                           const PriceList& prices);

// CSV with a header line:
//   tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost,priced_cost,unpriced_unit_ms
// Names come from `names` (an unknown id renders as "#<id>"); an ungrouped column is empty;
// gpu_hours and the costs have six decimals, gpu_hours rounded half up from the exact unit-ms,
// costs exact in micros. `cost` is "unpriced" for a row with unpriced usage; `priced_cost` is
// always the cost of the part that has a price. Fields with a comma, quote or line break are
// quoted (RFC 4180).
std::string RenderCsv(const std::vector<ReportRow>& rows, const State& names);

}  // namespace gpupool
