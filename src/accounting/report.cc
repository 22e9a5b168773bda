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

struct Acc {
  UnitMillis all = 0;
  std::map<FlavorId, UnitMillis> billed;  // per flavor, to price each at its own rate
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
  if (query.to < query.from) return InvalidArgument("report: window ends before it starts");
  for (const auto& [f, p] : prices.micros_per_gpu_hour) {
    if (p < 0 || p > PriceList::kMaxMicrosPerGpuHour) {
      return InvalidArgument("report: price of flavor " + std::to_string(f.value()) +
                             " out of range");
    }
  }
  std::map<Key, Acc> groups;
  for (const UsageInterval& u : intervals) {
    if (query.tenant && u.tenant != *query.tenant) continue;
    const Time s = std::max(u.start, query.from);
    const Time e = std::min(u.end, query.to);
    if (!(s < e)) continue;
    const UnitMillis um =
        static_cast<UnitMillis>(u.eq.units()) * static_cast<UnitMillis>((e - s).millis());
    const Key key{u.tenant.value(), query.by_flavor ? int64_t{u.flavor.value()} : -1,
                  query.by_kind ? static_cast<int>(u.kind) : -1};
    Acc& acc = groups[key];
    if (!AddChecked(acc.all, um)) return Overflow();
    if (u.kind != UsageKind::kInfrastructureFailure && !AddChecked(acc.billed[u.flavor], um)) {
      return Overflow();
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
    for (const auto& [flavor, billed] : acc.billed) {
      if (!AddChecked(row.billed_unit_millis, billed)) return Overflow();
      if (billed == 0) continue;
      auto p = prices.micros_per_gpu_hour.find(flavor);
      if (p == prices.micros_per_gpu_hour.end()) {
        return InvalidArgument("report: no price for flavor " + std::to_string(flavor.value()));
      }
      UnitMillis term = 0;
      if (__builtin_mul_overflow(billed, static_cast<UnitMillis>(p->second), &term) ||
          !AddChecked(cost, term)) {
        return Overflow();
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
