// RFC 3339 times and the query-string decoders (availability, usage, calendar).
#include "api/decode.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "api/decode_fields.h"

namespace gpupool {

using namespace decode_internal;

namespace {

// Days from 1970-01-01 to the given proleptic Gregorian date (the civil-from-days inverse).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool Digits(std::string_view s, size_t at, size_t n, int64_t* out) {
  if (at + n > s.size()) return false;
  int64_t v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Result<Time> ParseRfc3339(std::string_view s) {
  const auto bad = [&] {
    return InvalidArgument("'" + std::string(s.substr(0, 64)) +
                           "' is not an RFC 3339 time such as 2026-12-01T10:00:00Z");
  };
  int64_t y, mo, d, h, mi, sec;
  if (!Digits(s, 0, 4, &y) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &mo) || s[7] != '-' ||
      !Digits(s, 8, 2, &d) || s[10] != 'T' || !Digits(s, 11, 2, &h) || s[13] != ':' ||
      !Digits(s, 14, 2, &mi) || s[16] != ':' || !Digits(s, 17, 2, &sec)) {
    return bad();
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] + (mo == 2 && leap) || h > 23 || mi > 59 ||
      sec > 59) {
    return bad();
  }
  size_t i = 19;
  int64_t ms = 0;
  if (i < s.size() && s[i] == '.') {
    size_t digits = 0;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
      if (digits < 3) {
        ms = ms * 10 + (s[i] - '0');
      } else if (s[i] != '0') {
        return InvalidArgument("'" + std::string(s.substr(0, 64)) + "' is finer than a millisecond");
      }
    }
    if (digits == 0) return bad();
    for (size_t k = digits; k < 3; ++k) ms *= 10;
  }
  int64_t offset_min = 0;
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int64_t oh, om;
    if (!Digits(s, i + 1, 2, &oh) || i + 3 >= s.size() || s[i + 3] != ':' || !Digits(s, i + 4, 2, &om) ||
        oh > 23 || om > 59) {
      return bad();
    }
    offset_min = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
    i += 6;
  } else {
    return bad();
  }
  if (i != s.size()) return bad();
  const int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_min * 60;
  return Time::FromMillis(secs * 1000 + ms);
}

Result<ReservationRequest> DecodeReservationRequest(const State& state, const Principal& caller,
                                                    std::string_view body) {
  Result<Json> parsed = ParseObject(body, kReservationNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  GP_RETURN_IF_ERROR(OnlyFields(j, {"tenant", "flavor", "gpus", "start", "end", "maintenance"}, ""));
  ReservationRequest r;
  if (j.contains("maintenance")) {
    Result<bool> m = Bool(j, "maintenance", "");
    if (!m.ok()) return m.error();
    r.maintenance = *m;
  }
  if (r.maintenance) {
    if (j.contains("tenant")) return InvalidArgument("a maintenance window has no 'tenant'");
  } else {
    Result<std::string> tenant = Str(j, "tenant", "");
    if (!tenant.ok()) return tenant.error();
    Result<TenantId> tid = state.FindTenant(*tenant);
    if (!tid.ok() || !caller.Sees(*tid)) return NotFound("unknown tenant '" + *tenant + "'");
    r.tenant = *tid;
  }
  Result<std::string> flavor = Str(j, "flavor", "");
  if (!flavor.ok()) return flavor.error();
  Result<FlavorId> f = state.catalogue().Find(*flavor);
  if (!f.ok()) return InvalidArgument("unknown flavor '" + *flavor + "'");
  r.flavor = *f;
  Result<int64_t> gpus = Int(j, "gpus", 1, 100000, "");
  if (!gpus.ok()) return gpus.error();
  r.amount = GpuEq::Gpus(*gpus);
  for (const char* key : {"start", "end"}) {
    auto it = j.find(key);
    if (it == j.end()) return InvalidArgument(std::string("missing field '") + key + "'");
    if (!it->is_string()) return InvalidArgument(std::string("'") + key + "' must be an RFC 3339 string");
    Result<Time> t = ParseRfc3339(it->get<std::string>());
    if (!t.ok()) return InvalidArgument(std::string("'") + key + "': " + t.error().message);
    (std::string(key) == "start" ? r.start : r.end) = *t;
  }
  if (!(r.start < r.end)) return InvalidArgument("'end' must be after 'start'");
  return r;
}

namespace {

using Query = std::map<std::string, std::string>;

std::string Param(const Query& q, const std::string& key) {
  auto it = q.find(key);
  return it == q.end() ? "" : it->second;
}

Result<int64_t> PositiveParam(const Query& q, const std::string& key, int64_t max) {
  const std::string v = Param(q, key);
  int64_t n = 0;
  const auto [stop, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || stop != v.data() + v.size() || n < 1 || n > max) {
    return InvalidArgument("'" + key + "' must be an integer in [1, " + std::to_string(max) + "]");
  }
  return n;
}

Result<Time> TimeParam(const Query& q, const std::string& key) {
  Result<Time> t = ParseRfc3339(Param(q, key));
  if (!t.ok()) return InvalidArgument("'" + key + "': " + t.error().message);
  return t;
}

Result<FlavorId> FlavorParam(const State& state, const Query& q) {
  Result<FlavorId> f = state.catalogue().Find(Param(q, "flavor"));
  if (!f.ok()) return InvalidArgument("unknown flavor '" + Param(q, "flavor") + "'");
  return f;
}

// start and end, start < end.
Status Window(const Query& q, Time* start, Time* end) {
  Result<Time> a = TimeParam(q, "start");
  if (!a.ok()) return a.error();
  Result<Time> b = TimeParam(q, "end");
  if (!b.ok()) return b.error();
  if (!(*a < *b)) return InvalidArgument("'end' must be after 'start'");
  *start = *a;
  *end = *b;
  return Ok();
}

}  // namespace

Result<AvailabilityQuery> DecodeAvailabilityQuery(const State& state, const Query& q) {
  AvailabilityQuery out;
  Result<FlavorId> f = FlavorParam(state, q);
  if (!f.ok()) return f.error();
  out.flavor = *f;
  const bool earliest = q.count("gpus") || q.count("duration_s") || q.count("after");
  const bool window = q.count("start") || q.count("end");
  if (earliest == window) {
    return InvalidArgument("give gpus and duration_s (earliest start) or start and end (reservable GPUs)");
  }
  out.earliest = earliest;
  if (window) {
    GP_RETURN_IF_ERROR(Window(q, &out.start, &out.end));
    return out;
  }
  Result<int64_t> gpus = PositiveParam(q, "gpus", 100000);
  if (!gpus.ok()) return gpus.error();
  Result<int64_t> secs = PositiveParam(q, "duration_s", 10LL * 365 * 86400);
  if (!secs.ok()) return secs.error();
  out.amount = GpuEq::Gpus(*gpus);
  out.duration = Duration::Seconds(*secs);
  if (q.count("after")) {
    Result<Time> a = TimeParam(q, "after");
    if (!a.ok()) return a.error();
    out.after = *a;
  }
  return out;
}

Result<UsageQuery> DecodeUsageQuery(const State& state, const Principal& caller, const Query& q) {
  for (const auto& [k, v] : q) {
    if (k != "from" && k != "to" && k != "tenant" && k != "group_by" && k != "format") {
      return InvalidArgument("unknown query parameter '" + k + "'");
    }
  }
  UsageQuery out;
  Result<Time> from = TimeParam(q, "from");
  if (!from.ok()) return from.error();
  out.from = *from;
  if (q.count("to")) {
    Result<Time> to = TimeParam(q, "to");
    if (!to.ok()) return to.error();
    if (*to < out.from) return InvalidArgument("'to' must not be before 'from'");
    out.to = *to;
  }
  if (const std::string t = Param(q, "tenant"); !t.empty()) {
    Result<TenantId> id = state.FindTenant(t);
    if (!id.ok() || !caller.Sees(*id)) return NotFound("unknown tenant '" + t + "'");
    out.tenant = *id;
  } else if (!caller.admin()) {
    if (!caller.more.empty()) return InvalidArgument("you belong to several tenants: name one with 'tenant'");
    out.tenant = caller.tenant;
  }
  if (q.count("group_by")) {
    const std::string g = Param(q, "group_by");
    out.by_flavor = out.by_kind = false;
    if (g != "none") {
      size_t at = 0;
      while (at <= g.size()) {
        const size_t comma = std::min(g.find(',', at), g.size());
        const std::string part = g.substr(at, comma - at);
        if (part == "flavor") {
          out.by_flavor = true;
        } else if (part == "kind") {
          out.by_kind = true;
        } else {
          return InvalidArgument("'group_by' is a comma list of flavor and kind, or none; not '" + part + "'");
        }
        at = comma + 1;
      }
    }
  }
  if (q.count("format")) {
    const std::string f = Param(q, "format");
    if (f != "json" && f != "csv") return InvalidArgument("'format' must be json or csv");
    out.csv = f == "csv";
  }
  return out;
}

Result<CalendarQuery> DecodeCalendarQuery(const State& state, const Query& q) {
  CalendarQuery out;
  Result<FlavorId> f = FlavorParam(state, q);
  if (!f.ok()) return f.error();
  out.flavor = *f;
  GP_RETURN_IF_ERROR(Window(q, &out.start, &out.end));
  Result<int64_t> step = PositiveParam(q, "step_s", 366LL * 86400);
  if (!step.ok()) return step.error();
  out.step = Duration::Seconds(*step);
  return out;
}

}  // namespace gpupool
