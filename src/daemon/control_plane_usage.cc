// ControlPlane's chargeback (DESIGN.md §8; docs/design/accounting.md): GET /v1/usage over the
// ledger, and the price lists over time (GET/PUT /v1/prices, journaled as "prices" records).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "daemon/control_plane.h"
#include "daemon/reply.h"
#include "policy/calendar/calendar.h"
#include "store/codec.h"

namespace gpupool {

using namespace reply;

namespace {

// A cost, or "unpriced" when part of the usage behind it had no price.
Json CostJson(int64_t micros, bool priced) {
  return priced ? Json(MicrosToDecimal(micros)) : Json("unpriced");
}

// The report as the API shows it: rows with names, a total, and a warning per unpriced span.
Result<Json> UsageJson(const State& s, const UsageReport& report) {
  Json items = Json::array();
  UnitMillis total_um = 0, total_unpriced = 0;  // 128 bits: rows are far below 2^127 together
  int64_t total_cost = 0;
  for (const ReportRow& r : report.rows) {
    Json row = {{"tenant", s.tenant(r.tenant).name},
                {"gpu_hours", r.gpu_hours},
                {"unit_ms", UnitMillisToString(r.unit_millis)},
                {"billed_unit_ms", UnitMillisToString(r.billed_unit_millis)},
                {"cost", CostJson(r.cost_micros, r.priced())},
                {"priced_cost", MicrosToDecimal(r.cost_micros)},
                {"unpriced_unit_ms", UnitMillisToString(r.unpriced_unit_millis)}};
    if (r.flavor) row["flavor"] = s.catalogue().model(*r.flavor).name;
    if (r.kind) row["kind"] = std::string(UsageKindName(*r.kind));
    items.push_back(std::move(row));
    total_um += r.unit_millis;
    total_unpriced += r.unpriced_unit_millis;
    if (__builtin_add_overflow(total_cost, r.cost_micros, &total_cost)) {
      return InvalidArgument("the total cost overflows; ask for a shorter window");
    }
  }
  Json flavors = Json::array(), warnings = Json::array();
  for (const UnpricedSpan& u : report.unpriced) {  // in flavor order
    const std::string& name = s.catalogue().model(u.flavor).name;
    if (flavors.empty() || flavors.back() != name) flavors.push_back(name);
    warnings.push_back("no price for " + name + " from " + Rfc3339(u.from) + " to " + Rfc3339(u.to));
  }
  Json total = {{"gpu_hours", static_cast<double>(total_um) / static_cast<double>(kUnitMillisPerGpuHour)},
                {"unit_ms", UnitMillisToString(total_um)},
                {"cost", CostJson(total_cost, total_unpriced == 0)},
                {"priced_cost", MicrosToDecimal(total_cost)},
                {"unpriced_unit_ms", UnitMillisToString(total_unpriced)},
                {"unpriced_flavors", flavors}};
  return Json{{"items", items}, {"total", total}, {"warnings", warnings}};
}

Json PeriodJson(const State& state, const PricedPeriod& p) {
  Json j = Json::parse(PriceListToJson(state, p.prices));
  j["effective_from"] = p.from == Time() ? Json(nullptr) : Json(Rfc3339(p.from));
  return j;
}

}  // namespace

Reply ControlPlane::Usage(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<UsageQuery> q = DecodeUsageQuery(state(), *c.principal, query);
  if (!q.ok()) return Err(q.error());
  const Time to = q->to.value_or(c.now);
  // Usage up to now: a window reaching past now shows no future (open intervals and
  // reservations alike are cut at now).
  const Time until = std::max(q->from, std::min(c.now, to));
  ReportQuery rq{.from = q->from, .to = until, .by_flavor = q->by_flavor, .by_kind = q->by_kind, .tenant = q->tenant};
  // A flavor without a price is reported as unpriced, never refused (docs/design/accounting.md).
  // The ledger in memory, and the intervals of jobs archived since (retention) that overlap.
  std::vector<UsageInterval> intervals = ledger().Snapshot(until);
  Result<std::vector<UsageInterval>> archived = ArchivedUsage(q->from, until);
  if (!archived.ok()) return Err(archived.error());
  intervals.insert(intervals.end(), archived->begin(), archived->end());
  Result<UsageReport> report = Report(intervals, ledger().Reservations(), rq, BillingPrices());
  if (!report.ok()) return Err(report.error());
  if (q->csv) return {200, RenderCsv(report->rows, state()), "text/csv; charset=utf-8"};
  Result<Json> body = UsageJson(state(), *report);
  if (!body.ok()) return Err(body.error());
  (*body)["from"] = Rfc3339(q->from);
  (*body)["to"] = Rfc3339(to);
  return JsonReply(200, *body);
}

Reply ControlPlane::GetPrices(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  // The list in force now, as reports price now (before the first list's start, the first
  // list), and every list with when it takes effect (null: since the start).
  Json now = js_->prices().empty() ? PeriodJson(state(), {Time(), PriceList()}) : Json();
  Json history = Json::array();
  for (size_t i = 0; i < js_->prices().size(); ++i) {
    Json p = PeriodJson(state(), js_->prices()[i]);
    if (i == 0 || !(c.now < js_->prices()[i].from)) now = p;
    history.push_back(std::move(p));
  }
  now["history"] = std::move(history);
  return JsonReply(200, now);
}

Reply ControlPlane::SetPrices(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("set prices");
  std::optional<Time> from;
  Result<PriceList> p = DecodePriceList(state(), body, &from);
  if (!p.ok()) return Err(p.error());
  if (from && *from < c.now) {
    return Err(InvalidArgument("'effective_from' is in the past (" + Rfc3339(*from) +
                               "): a price change never re-prices usage already recorded"));
  }
  // Without effective_from the change takes effect now; usage before now keeps its prices.
  const PricedPeriod period{from.value_or(c.now), std::move(p).value()};
  if (Status s = Commit(PricesSet{period.prices, period.from}); !s.ok()) return Err(s.error());
  Json record = PeriodJson(state(), period);  // the reply
  Audit(c, "prices.set", "prices from " + Rfc3339(period.from));
  // A list that leaves out a flavor the cluster has is allowed (that usage shows as unpriced),
  // but said.
  std::set<FlavorId> unpriced;
  for (const Node& n : state().nodes()) {
    if (n.condition != NodeCondition::kRetired && !n.on_demand() &&
        !period.prices.micros_per_gpu_hour.count(n.flavor)) {
      unpriced.insert(n.flavor);
    }
  }
  Json warnings = Json::array();
  for (FlavorId f : unpriced) {
    warnings.push_back("no price for " + state().catalogue().model(f).name + " from " + Rfc3339(period.from) +
                       ": its usage will be reported as unpriced");
  }
  record["warnings"] = std::move(warnings);
  return JsonReply(200, record);
}

}  // namespace gpupool
