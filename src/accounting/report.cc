// Report and RenderCsv: clip, group, sum exactly, price once per row.
#include "accounting/report.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

namespace gpupool {
namespace {

// Group key: tenant, flavor (or -1 when merged), kind (or -1 when merged). Ordered, so rows come
// out in a total order.
using Key = std::tuple<uint32_t, int64_t, int>;

// Billed usage is kept per (price period, flavor), to price each at its own rate.
using Priced = std::pair<size_t, FlavorId>;

struct Acc {
  UnitMillis all = 0;
  std::map<Priced, UnitMillis> billed;
  std::map<Priced, UnitMillis> billed_on_demand;  // the same at the on-demand price
};

bool AddChecked(UnitMillis& sum, UnitMillis v) { return !__builtin_add_overflow(sum, v, &sum); }

Error Overflow() { return InvalidArgument("report: usage sum overflows"); }

std::string Decimal6(UnitMillis micros) {  // micros >= 0 -> "12.345678"
  std::string frac = UnitMillisToString(micros % 1'000'000);
  return UnitMillisToString(micros / 1'000'000) + "." + std::string(6 - frac.size(), '0') + frac;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The price lists over time: which one is in force at t, and when the next one starts.
class Periods {
 public:
  explicit Periods(const PriceHistory& h) : h_(h) {}
  size_t At(Time t) const {
    auto after = std::upper_bound(h_.begin() + 1, h_.end(), t,
                                  [](Time x, const PricedPeriod& p) { return x < p.from; });
    return static_cast<size_t>(after - h_.begin()) - 1;
  }
  Time End(size_t i) const { return i + 1 < h_.size() ? h_[i + 1].from : Time::Never(); }
  // Where list i is in force inside [from, to) (list 0 also before its own start).
  std::pair<Time, Time> Clip(size_t i, Time from, Time to) const {
    return {i == 0 ? from : std::max(from, h_[i].from), std::min(to, End(i))};
  }
  const PriceList& prices(size_t i) const { return h_[i].prices; }
  size_t size() const { return h_.size(); }

 private:
  const PriceHistory& h_;
};

Status CheckHistory(const PriceHistory& history) {
  if (history.empty()) return InvalidArgument("report: no price list");
  for (size_t i = 0; i < history.size(); ++i) {
    if (i > 0 && !(history[i - 1].from < history[i].from)) {
      return InvalidArgument("report: price lists are not in increasing order of their start");
    }
    const PriceList& prices = history[i].prices;
    for (const auto* list : {&prices.micros_per_gpu_hour, &prices.on_demand_micros_per_gpu_hour}) {
      for (const auto& [f, p] : *list) {
        if (p < 0 || p > PriceList::kMaxMicrosPerGpuHour) {
          return InvalidArgument("report: a price is outside [0, 1e6] per GPU-hour");
        }
      }
    }
  }
  return Ok();
}

// Sums usage into groups: intervals (cut where the prices change, split by their reservation's
// window) and the reserved-idle sweep.
class Summer {
 public:
  Summer(const ReportQuery& q, const Periods& periods) : q_(q), periods_(periods) {}

  Status AddIntervals(const std::vector<UsageInterval>& intervals,
                      const std::vector<ReservationSpan>& reservations);
  Status AddReservedIdle(const std::vector<UsageInterval>& intervals,
                         const std::vector<ReservationSpan>& reservations);
  const std::map<Key, Acc>& groups() const { return groups_; }

 private:
  Key KeyOf(TenantId t, FlavorId f, UsageKind kind) const {
    return {t.value(), q_.by_flavor ? int64_t{f.value()} : -1,
            q_.by_kind ? static_cast<int>(kind) : -1};
  }
  bool Add(const UsageInterval& u, Time s, Time e, UsageKind kind);

  const ReportQuery& q_;
  const Periods& periods_;
  std::map<Key, Acc> groups_;
};

// Adds [s, e) of `u` (already clipped to the window) as `kind`; false on overflow.
bool Summer::Add(const UsageInterval& u, Time s, Time e, UsageKind kind) {
  if (!(s < e)) return true;
  const UnitMillis units = static_cast<UnitMillis>(u.eq.units());
  Acc& acc = groups_[KeyOf(u.tenant, u.flavor, kind)];
  if (!AddChecked(acc.all, units * static_cast<UnitMillis>((e - s).millis()))) return false;
  if (kind == UsageKind::kInfrastructureFailure) return true;
  auto& billed = kind == UsageKind::kOnDemand ? acc.billed_on_demand : acc.billed;
  for (size_t i = periods_.At(s); s < e; ++i) {  // split where the prices change
    const Time cut = std::min(e, periods_.End(i));
    if (!AddChecked(billed[{i, u.flavor}], units * static_cast<UnitMillis>((cut - s).millis()))) {
      return false;
    }
    s = cut;
  }
  return true;
}

Status Summer::AddIntervals(const std::vector<UsageInterval>& intervals,
                            const std::vector<ReservationSpan>& reservations) {
  std::map<ReservationId, const ReservationSpan*> spans;
  for (const ReservationSpan& r : reservations) spans.emplace(r.id, &r);
  for (const UsageInterval& u : intervals) {
    if (q_.tenant && u.tenant != *q_.tenant) continue;
    const Time s = std::max(u.start, q_.from);
    const Time e = std::min(u.end, q_.to);
    if (!(s < e)) continue;
    auto span = spans.find(u.reservation);
    if (span == spans.end() || u.kind == UsageKind::kInfrastructureFailure) {
      if (!Add(u, s, e, u.kind)) return Overflow();
      continue;
    }
    // Before the window, inside it (reserved), after it.
    const ReservationSpan& r = *span->second;
    const Time in_s = std::clamp(r.start, s, e), in_e = std::clamp(r.end, s, e);
    if (!Add(u, s, in_s, u.kind) || !Add(u, in_s, in_e, UsageKind::kReserved) ||
        !Add(u, in_e, e, u.kind)) {
      return Overflow();
    }
  }
  return Ok();
}

// Reserved-idle, take or pay: while reservations are in force, a tenant pays for at least their
// amount A(t) of the flavor. Idle is the integral of max(0, A(t) - u(t)), u(t) being everything
// the tenant holds of that flavor (named or not, lost time included: capacity a failure took is
// not the tenant's idleness). Swept per (tenant, flavor) over the step functions' breakpoints
// inside the window.
Status Summer::AddReservedIdle(const std::vector<UsageInterval>& intervals,
                               const std::vector<ReservationSpan>& reservations) {
  std::map<std::pair<uint32_t, uint16_t>, std::map<Time, std::pair<int64_t, int64_t>>> steps;  // dA, du
  for (const ReservationSpan& r : reservations) {
    if (q_.tenant && r.tenant != *q_.tenant) continue;
    const Time s = std::max(r.start, q_.from), e = std::min(r.end, q_.to);
    if (!(s < e)) continue;
    auto& st = steps[{r.tenant.value(), r.flavor.value()}];
    st[s].first += r.amount.units();
    st[e].first -= r.amount.units();
  }
  for (const UsageInterval& u : intervals) {
    auto st = steps.find({u.tenant.value(), u.flavor.value()});
    if (st == steps.end()) continue;
    const Time s = std::max(u.start, q_.from), e = std::min(u.end, q_.to);
    if (!(s < e)) continue;
    st->second[s].second += u.eq.units();
    st->second[e].second -= u.eq.units();
  }
  for (auto& [tf, st] : steps) {
    // Price changes are breakpoints too, so that no step crosses one.
    for (size_t i = 1; i < periods_.size(); ++i) {
      const Time from = periods_.End(i - 1);
      if (st.begin()->first < from && from < st.rbegin()->first) st.try_emplace(from);
    }
    int64_t a = 0, used = 0;
    std::map<size_t, UnitMillis> idle;  // by price period
    std::optional<Time> prev;
    for (const auto& [t, d] : st) {
      if (prev && a > used &&
          !AddChecked(idle[periods_.At(*prev)], static_cast<UnitMillis>(a - used) * (t - *prev).millis())) {
        return Overflow();
      }
      a += d.first;
      used += d.second;
      prev = t;
    }
    const FlavorId flavor(tf.second);
    for (const auto& [i, ms] : idle) {
      if (ms == 0) continue;
      Acc& acc = groups_[KeyOf(TenantId(tf.first), flavor, UsageKind::kReservedIdle)];
      if (!AddChecked(acc.all, ms)) return Overflow();
      if (periods_.prices(i).bill_reserved_idle && !AddChecked(acc.billed[{i, flavor}], ms)) {
        return Overflow();
      }
    }
  }
  return Ok();
}

// The row of one group, priced. Billed usage with no price goes to unpriced_unit_millis, and its
// (price period, flavor) into `unpriced`.
Result<ReportRow> PriceRow(const Key& key, const Acc& acc, const Periods& periods,
                           std::set<std::pair<FlavorId, size_t>>& unpriced) {
  ReportRow row;
  row.tenant = TenantId(std::get<0>(key));
  if (std::get<1>(key) >= 0) row.flavor = FlavorId(static_cast<uint16_t>(std::get<1>(key)));
  if (std::get<2>(key) >= 0) row.kind = static_cast<UsageKind>(std::get<2>(key));
  row.unit_millis = acc.all;
  row.gpu_hours = static_cast<double>(acc.all) / static_cast<double>(kUnitMillisPerGpuHour);
  UnitMillis cost = 0;  // micros x kUnitMillisPerGpuHour
  for (const bool od : {false, true}) {
    for (const auto& [priced, billed] : od ? acc.billed_on_demand : acc.billed) {
      const auto& [i, flavor] = priced;
      if (!AddChecked(row.billed_unit_millis, billed)) return Overflow();
      if (billed == 0) continue;
      const PriceList& prices = periods.prices(i);
      auto p = prices.micros_per_gpu_hour.find(flavor);
      if (od) {
        auto q = prices.on_demand_micros_per_gpu_hour.find(flavor);
        if (q != prices.on_demand_micros_per_gpu_hour.end()) p = q;
      }
      if (p == prices.micros_per_gpu_hour.end()) {
        if (!AddChecked(row.unpriced_unit_millis, billed)) return Overflow();
        unpriced.insert({flavor, i});
        continue;
      }
      UnitMillis term = 0;
      if (__builtin_mul_overflow(billed, static_cast<UnitMillis>(p->second), &term) ||
          !AddChecked(cost, term)) {
        return Overflow();
      }
    }
  }
  if (!AddChecked(cost, kUnitMillisPerGpuHour / 2)) return Overflow();
  const UnitMillis micros = cost / kUnitMillisPerGpuHour;
  if (micros > static_cast<UnitMillis>(std::numeric_limits<int64_t>::max())) return Overflow();
  row.cost_micros = static_cast<int64_t>(micros);
  return row;
}

// Each (flavor, period) with unpriced usage as the part of the window its list was in force;
// a flavor unpriced in consecutive lists gets one span.
std::vector<UnpricedSpan> Spans(const std::set<std::pair<FlavorId, size_t>>& unpriced,
                                const Periods& periods, const ReportQuery& q) {
  std::vector<UnpricedSpan> out;
  for (const auto& [flavor, i] : unpriced) {
    const auto [from, to] = periods.Clip(i, q.from, q.to);
    if (!out.empty() && out.back().flavor == flavor && out.back().to == from) {
      out.back().to = to;
    } else {
      out.push_back({flavor, from, to});
    }
  }
  return out;
}

}  // namespace

Result<UsageReport> Report(const std::vector<UsageInterval>& intervals, const ReportQuery& query,
                           const PriceList& prices) {
  return Report(intervals, {}, query, prices);
}

Result<UsageReport> Report(const std::vector<UsageInterval>& intervals,
                           const std::vector<ReservationSpan>& reservations,
                           const ReportQuery& query, const PriceList& prices) {
  return Report(intervals, reservations, query, PriceHistory{{Time(), prices}});
}

Result<UsageReport> Report(const std::vector<UsageInterval>& intervals,
                           const std::vector<ReservationSpan>& reservations,
                           const ReportQuery& query, const PriceHistory& history) {
  if (query.to < query.from) return InvalidArgument("report: window ends before it starts");
  GP_RETURN_IF_ERROR(CheckHistory(history));
  const Periods periods(history);
  Summer sum(query, periods);
  GP_RETURN_IF_ERROR(sum.AddIntervals(intervals, reservations));
  GP_RETURN_IF_ERROR(sum.AddReservedIdle(intervals, reservations));
  UsageReport out;
  out.rows.reserve(sum.groups().size());
  std::set<std::pair<FlavorId, size_t>> unpriced;
  for (const auto& [key, acc] : sum.groups()) {
    Result<ReportRow> row = PriceRow(key, acc, periods, unpriced);
    if (!row.ok()) return row.error();
    out.rows.push_back(std::move(row).value());
  }
  out.unpriced = Spans(unpriced, periods, query);
  return out;
}

std::string RenderCsv(const std::vector<ReportRow>& rows, const State& names) {
  std::string out =
      "tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost,priced_cost,unpriced_unit_ms\n";
  const Catalogue& cat = names.catalogue();
  for (const ReportRow& r : rows) {
    const uint32_t t = r.tenant.value();
    out += CsvField(t < names.tenants().size() ? names.tenants()[t].name : "#" + std::to_string(t));
    out += ',';
    if (r.flavor) {
      const uint16_t f = r.flavor->value();
      out += CsvField(f < cat.size() ? cat.model(*r.flavor).name : "#" + std::to_string(f));
    }
    out += ',';
    if (r.kind) out += UsageKindName(*r.kind);
    // Micro-GPU-hours, rounded half up: unit-ms x 1e6 / (7000 x 3.6e6) = unit-ms / 25200.
    constexpr int64_t kUnitMillisPerMicroGpuHour = kUnitMillisPerGpuHour / 1'000'000;
    out += ',' +
           Decimal6((r.unit_millis + kUnitMillisPerMicroGpuHour / 2) / kUnitMillisPerMicroGpuHour);
    out += ',' + UnitMillisToString(r.unit_millis);
    out += ',' + UnitMillisToString(r.billed_unit_millis);
    out += ',' + (r.priced() ? Decimal6(r.cost_micros) : std::string("unpriced"));
    out += ',' + Decimal6(r.cost_micros);
    out += ',' + UnitMillisToString(r.unpriced_unit_millis) + '\n';
  }
  return out;
}

}  // namespace gpupool
