// Report and RenderCsv: clip, group, sum exactly, price once per row.
#include "accounting/report.h"

#include <algorithm>
#include <limits>
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

}  // namespace

Result<std::vector<ReportRow>> Report(const std::vector<UsageInterval>& intervals,
                                      const ReportQuery& query, const PriceList& prices) {
  return Report(intervals, {}, query, prices);
}

Result<std::vector<ReportRow>> Report(const std::vector<UsageInterval>& intervals,
                                      const std::vector<ReservationSpan>& reservations,
                                      const ReportQuery& query, const PriceList& prices) {
  return Report(intervals, reservations, query, PriceHistory{{Time(), prices}});
}

Result<std::vector<ReportRow>> Report(const std::vector<UsageInterval>& intervals,
                                      const std::vector<ReservationSpan>& reservations,
                                      const ReportQuery& query, const PriceHistory& history) {
  if (query.to < query.from) return InvalidArgument("report: window ends before it starts");
  if (history.empty()) return InvalidArgument("report: no price list");
  for (size_t i = 0; i < history.size(); ++i) {
    if (i > 0 && !(history[i - 1].from < history[i].from)) {
      return InvalidArgument("report: price lists are not in increasing order of their start");
    }
    const PriceList& prices = history[i].prices;
    for (const auto* list : {&prices.micros_per_gpu_hour, &prices.on_demand_micros_per_gpu_hour}) {
      for (const auto& [f, p] : *list) {
        if (p < 0 || p > PriceList::kMaxMicrosPerGpuHour) {
          return InvalidArgument("report: price of flavor " + std::to_string(f.value()) +
                                 " out of range");
        }
      }
    }
  }
  // The period in force at t, and when the next one starts.
  auto period = [&](Time t) -> size_t {
    auto after = std::upper_bound(history.begin() + 1, history.end(), t,
                                  [](Time x, const PricedPeriod& p) { return x < p.from; });
    return static_cast<size_t>(after - history.begin()) - 1;
  };
  auto period_end = [&](size_t i) { return i + 1 < history.size() ? history[i + 1].from : Time::Never(); };
  std::map<ReservationId, const ReservationSpan*> spans;
  for (const ReservationSpan& r : reservations) spans.emplace(r.id, &r);
  std::map<Key, Acc> groups;
  // Adds [s, e) of `u` (already clipped to the window) as `kind`.
  auto add = [&](const UsageInterval& u, Time s, Time e, UsageKind kind) -> bool {
    if (!(s < e)) return true;
    const UnitMillis um =
        static_cast<UnitMillis>(u.eq.units()) * static_cast<UnitMillis>((e - s).millis());
    const Key key{u.tenant.value(), query.by_flavor ? int64_t{u.flavor.value()} : -1,
                  query.by_kind ? static_cast<int>(kind) : -1};
    Acc& acc = groups[key];
    if (!AddChecked(acc.all, um)) return false;
    if (kind == UsageKind::kInfrastructureFailure) return true;
    auto& billed = kind == UsageKind::kOnDemand ? acc.billed_on_demand : acc.billed;
    for (size_t i = period(s); s < e; ++i) {  // split where the prices change
      const Time cut = std::min(e, period_end(i));
      const UnitMillis part =
          static_cast<UnitMillis>(u.eq.units()) * static_cast<UnitMillis>((cut - s).millis());
      if (!AddChecked(billed[{i, u.flavor}], part)) return false;
      s = cut;
    }
    return true;
  };
  for (const UsageInterval& u : intervals) {
    if (query.tenant && u.tenant != *query.tenant) continue;
    const Time s = std::max(u.start, query.from);
    const Time e = std::min(u.end, query.to);
    if (!(s < e)) continue;
    auto span = spans.find(u.reservation);
    if (span == spans.end() || u.kind == UsageKind::kInfrastructureFailure) {
      if (!add(u, s, e, u.kind)) return Overflow();
      continue;
    }
    // Before the window, inside it (reserved), after it.
    const ReservationSpan& r = *span->second;
    const Time in_s = std::clamp(r.start, s, e), in_e = std::clamp(r.end, s, e);
    if (!add(u, s, in_s, u.kind) || !add(u, in_s, in_e, UsageKind::kReserved) ||
        !add(u, in_e, e, u.kind)) {
      return Overflow();
    }
  }
  // Reserved-idle, take or pay: while reservations are in force, a tenant pays for at least
  // their amount A(t) of the flavor. Idle is the integral of max(0, A(t) - u(t)), u(t) being
  // everything the tenant holds of that flavor (named or not, lost time included: capacity a
  // failure took is not the tenant's idleness). Swept per (tenant, flavor) over the step
  // functions' breakpoints inside the window.
  std::map<std::pair<uint32_t, uint16_t>, std::map<Time, std::pair<int64_t, int64_t>>> steps;  // dA, du
  for (const ReservationSpan& r : reservations) {
    if (query.tenant && r.tenant != *query.tenant) continue;
    const Time s = std::max(r.start, query.from), e = std::min(r.end, query.to);
    if (!(s < e)) continue;
    auto& st = steps[{r.tenant.value(), r.flavor.value()}];
    st[s].first += r.amount.units();
    st[e].first -= r.amount.units();
  }
  for (const UsageInterval& u : intervals) {
    auto st = steps.find({u.tenant.value(), u.flavor.value()});
    if (st == steps.end()) continue;
    const Time s = std::max(u.start, query.from), e = std::min(u.end, query.to);
    if (!(s < e)) continue;
    st->second[s].second += u.eq.units();
    st->second[e].second -= u.eq.units();
  }
  for (auto& [tf, st] : steps) {
    // Price changes are breakpoints too, so that no step crosses one.
    for (size_t i = 1; i < history.size(); ++i) {
      if (st.begin()->first < history[i].from && history[i].from < st.rbegin()->first) {
        st.try_emplace(history[i].from);
      }
    }
    int64_t a = 0, used = 0;
    std::map<size_t, UnitMillis> idle;  // by price period
    Time prev;
    bool first = true;
    for (const auto& [t, d] : st) {
      if (!first && a > used &&
          !AddChecked(idle[period(prev)], static_cast<UnitMillis>(a - used) * (t - prev).millis())) {
        return Overflow();
      }
      a += d.first;
      used += d.second;
      prev = t;
      first = false;
    }
    const FlavorId flavor(tf.second);
    const Key key{tf.first, query.by_flavor ? int64_t{tf.second} : -1,
                  query.by_kind ? static_cast<int>(UsageKind::kReservedIdle) : -1};
    for (const auto& [i, ms] : idle) {
      if (ms == 0) continue;
      Acc& acc = groups[key];
      if (!AddChecked(acc.all, ms)) return Overflow();
      if (history[i].prices.bill_reserved_idle && !AddChecked(acc.billed[{i, flavor}], ms)) {
        return Overflow();
      }
    }
  }
  std::vector<ReportRow> rows;
  rows.reserve(groups.size());
  for (const auto& [key, acc] : groups) {
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
        const PriceList& prices = history[i].prices;
        if (!AddChecked(row.billed_unit_millis, billed)) return Overflow();
        if (billed == 0) continue;
        auto p = prices.micros_per_gpu_hour.find(flavor);
        if (od) {
          auto q = prices.on_demand_micros_per_gpu_hour.find(flavor);
          if (q != prices.on_demand_micros_per_gpu_hour.end()) p = q;
        }
        if (p == prices.micros_per_gpu_hour.end()) {
          return InvalidArgument("report: no price for flavor " + std::to_string(flavor.value()));
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
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string RenderCsv(const std::vector<ReportRow>& rows, const State& names) {
  std::string out = "tenant,flavor,kind,gpu_hours,unit_ms,billed_unit_ms,cost\n";
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
    out += ',' + Decimal6(r.cost_micros) + '\n';
  }
  return out;
}

}  // namespace gpupool
