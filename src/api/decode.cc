#include "api/decode.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace gpupool {
namespace {

using Json = nlohmann::json;

Status OnlyFields(const Json& j, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [k, v] : j.items()) {
    if (!allowed.count(k)) return InvalidArgument("unknown field '" + where + k + "'");
  }
  return Ok();
}

Result<std::string> Str(const Json& j, const char* key, const std::string& where, size_t max = 256) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument("missing field '" + where + key + "'");
  if (!it->is_string()) return InvalidArgument("'" + where + key + "' must be a string");
  std::string s = it->get<std::string>();
  if (s.empty() || s.size() > max) {
    return InvalidArgument("'" + where + key + "' must be 1.." + std::to_string(max) + " characters");
  }
  return s;
}

Result<int64_t> Int(const Json& j, const char* key, int64_t lo, int64_t hi, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument("missing field '" + where + key + "'");
  if (!it->is_number_integer()) return InvalidArgument("'" + where + key + "' must be an integer");
  // Integers above INT64_MAX parse as unsigned and would wrap to negative in get<int64_t>().
  const bool huge = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  const int64_t v = huge ? INT64_MAX : it->get<int64_t>();
  if (huge || v < lo || v > hi) {
    return InvalidArgument("'" + where + key + "' must be in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  return v;
}

// What each request body must hold, for the message an empty body gets.
constexpr const char* kJobNeeds =
    "a job needs 'tenant', 'name', 'resources' ({'flavor'} and one of 'gpus', 'mig_profile' or 'gpu_fraction') "
    "and 'command'";
constexpr const char* kTenantNeeds = "a tenant needs at least 'name' (and usually 'quotas')";
constexpr const char* kTenantPatchNeeds = "send the fields to change, e.g. {\"weight\": 2}";
constexpr const char* kClassNeeds = "a priority class needs 'name' and 'value'";
constexpr const char* kReservationNeeds =
    "a reservation needs 'tenant' (or 'maintenance': true), 'flavor', 'gpus', 'start' and 'end'";
constexpr const char* kPricesNeeds = "a price list needs 'flavors': {FLAVOR: {'per_gpu_hour': \"2.99\"}}";
constexpr const char* kTokenNeeds = "a token needs 'name' and 'role' (and 'tenant' for a tenant's roles)";

// `needs`: what the body must hold, said when it is empty.
Result<Json> ParseObject(std::string_view body, std::string_view needs = "") {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgument("the request body is empty: " +
                           (needs.empty() ? std::string("send a JSON object") : std::string(needs)) +
                           " (every request's fields are in /v1/openapi.json)");
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("request body is not valid JSON");
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object");
  return j;
}

Result<bool> Bool(const Json& j, const char* key, const std::string& where) {
  const Json& v = j.at(key);
  if (!v.is_boolean()) return InvalidArgument("'" + where + key + "' must be a boolean");
  return v.get<bool>();
}

// A number of GPUs, exact in GpuEq units (1/7000 GPU).
Result<GpuEq> Gpus(const Json& j, const char* key, const std::string& where) {
  const Json& v = j.at(key);
  if (!v.is_number()) return InvalidArgument("'" + where + key + "' must be a number of GPUs");
  const double x = v.get<double>();
  if (!(x >= 0 && x <= 1e6)) return InvalidArgument("'" + where + key + "' must be in [0, 1000000]");
  const double units = x * GpuEq::kUnitsPerGpu;
  const double rounded = std::round(units);
  // Absolute, in units: decimal inputs such as 0.1 land within 1e-6 units of the whole number
  // even at a million GPUs, while 100.00001 GPUs (0.07 units off) is refused.
  if (std::fabs(units - rounded) > 1e-4) {
    return InvalidArgument("'" + where + key + "' is not a whole number of 1/7000 GPU");
  }
  return GpuEq::Units(static_cast<int64_t>(rounded));
}

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
    if (!ok) return false;
  }
  return true;
}

}  // namespace

namespace {

bool LabelChar(char c, bool key) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || (key && c == '/');
}

// A label key (1..253 characters: letters, digits, '-', '_', '.', '/') or value (0..63, no '/').
Status CheckLabelPart(const std::string& s, bool key, const std::string& where) {
  const size_t max = key ? 253 : 63;
  if ((key && s.empty()) || s.size() > max || !std::all_of(s.begin(), s.end(), [key](char c) { return LabelChar(c, key); })) {
    return InvalidArgument(where + ": '" + s.substr(0, 64) + "' is not a label " + (key ? "key" : "value") +
                           " (letters, digits, '-', '_', '.'" + (key ? ", '/'" : "") + "; at most " +
                           std::to_string(max) + ")");
  }
  return Ok();
}

// A list of "key=value" labels, sorted.
Result<std::vector<std::string>> LabelList(const Json& j, const char* field) {
  const Json& l = j[field];
  if (!l.is_array() || l.size() > 64) return InvalidArgument(std::string("'") + field + "' must be a list of at most 64 key=value");
  std::vector<std::string> out;
  for (const Json& e : l) {
    if (!e.is_string()) return InvalidArgument(std::string("'") + field + "' must be a list of key=value strings");
    const std::string text = e.get<std::string>();
    const size_t eq = text.find('=');
    if (eq == std::string::npos) return InvalidArgument(std::string("'") + field + "': '" + text.substr(0, 64) + "' is not key=value");
    GP_RETURN_IF_ERROR(CheckLabelPart(text.substr(0, eq), true, field));
    GP_RETURN_IF_ERROR(CheckLabelPart(text.substr(eq + 1), false, field));
    out.push_back(text);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Result<Tenant> DecodeTenantRequest(const State& state, std::string_view body, const Tenant* base,
                                   bool* allow_overcommit) {
  Result<Json> parsed = ParseObject(body, base ? kTenantPatchNeeds : kTenantNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  GP_RETURN_IF_ERROR(OnlyFields(j, {"name", "weight", "quotas", "limits", "allow_gpu_cotenancy", "required_labels",
                                    "allowed_labels", "allow_overcommit"}, ""));
  if (j.contains("allow_overcommit")) {
    if (allow_overcommit == nullptr) return InvalidArgument("unknown field 'allow_overcommit'");
    Result<bool> b = Bool(j, "allow_overcommit", "");
    if (!b.ok()) return b.error();
    *allow_overcommit = *b;
  }
  Tenant t = base ? *base : Tenant();
  if (base == nullptr || j.contains("name")) {
    Result<std::string> name = Str(j, "name", "", 63);
    if (!name.ok()) return name.error();
    if (!ValidName(*name)) {
      return InvalidArgument("'name' must be lower-case letters, digits and '-' (1..63, not starting with '-')");
    }
    if (base != nullptr && *name != base->name) return InvalidArgument("'name' cannot change");
    t.name = *name;
  }
  if (j.contains("weight")) {
    const Json& w = j["weight"];
    if (!w.is_number()) return InvalidArgument("'weight' must be a number");
    const double x = w.get<double>();
    const double milli = std::round(x * 1000);
    if (!(x > 0 && x <= 1000) || std::fabs(milli - x * 1000) > 1e-6) {
      return InvalidArgument("'weight' must be in (0, 1000] in steps of 0.001");
    }
    t.weight_milli = static_cast<int64_t>(milli);
  }
  if (j.contains("quotas")) {
    const Json& q = j["quotas"];
    if (!q.is_object()) return InvalidArgument("'quotas' must be an object of flavor: quota");
    t.quotas.clear();
    for (const auto& [flavor, fq] : q.items()) {
      Result<FlavorId> f = state.catalogue().Find(flavor);
      if (!f.ok()) return InvalidArgument("quotas: " + f.error().message);
      const std::string where = "quotas." + flavor + ".";
      if (!fq.is_object()) return InvalidArgument("'quotas." + flavor + "' must be an object");
      GP_RETURN_IF_ERROR(OnlyFields(fq, {"guaranteed", "borrow_limit", "lend_limit"}, where));
      if (!fq.contains("guaranteed")) return InvalidArgument("missing field '" + where + "guaranteed'");
      FlavorQuota out;
      Result<GpuEq> g = Gpus(fq, "guaranteed", where);
      if (!g.ok()) return g.error();
      out.guaranteed = *g;
      for (const char* key : {"borrow_limit", "lend_limit"}) {
        if (!fq.contains(key)) continue;
        Result<GpuEq> v = Gpus(fq, key, where);
        if (!v.ok()) return v.error();
        (std::string(key) == "borrow_limit" ? out.borrow_limit : out.lend_limit) = *v;
      }
      t.quotas[*f] = out;
    }
  }
  if (j.contains("limits")) {
    const Json& l = j["limits"];
    if (!l.is_object()) return InvalidArgument("'limits' must be an object");
    GP_RETURN_IF_ERROR(OnlyFields(l, {"max_replicas", "max_job_gpus", "default_duration_s",
                                      "max_duration_s", "max_pending_jobs"}, "limits."));
    if (l.contains("max_pending_jobs")) {
      Result<int64_t> v = Int(l, "max_pending_jobs", 0, 10'000'000, "limits.");
      if (!v.ok()) return v.error();
      t.limits.max_pending_jobs = static_cast<uint32_t>(*v);
    }
    if (l.contains("max_replicas")) {
      Result<int64_t> v = Int(l, "max_replicas", 0, 1024, "limits.");
      if (!v.ok()) return v.error();
      t.limits.max_replicas = static_cast<uint16_t>(*v);
    }
    if (l.contains("max_job_gpus")) {
      Result<GpuEq> v = Gpus(l, "max_job_gpus", "limits.");
      if (!v.ok()) return v.error();
      t.limits.max_job_gpu_eq = *v;
    }
    for (const char* key : {"default_duration_s", "max_duration_s"}) {
      if (!l.contains(key)) continue;
      Result<int64_t> v = Int(l, key, 0, 365 * 86400, "limits.");
      if (!v.ok()) return v.error();
      (std::string(key) == "max_duration_s" ? t.limits.max_duration : t.limits.default_duration) =
          *v == 0 ? Duration::Infinite() : Duration::Seconds(*v);
    }
  }
  for (const char* field : {"required_labels", "allowed_labels"}) {
    if (!j.contains(field)) continue;
    Result<std::vector<std::string>> labels = LabelList(j, field);
    if (!labels.ok()) return labels.error();
    (std::string(field) == "required_labels" ? t.required_labels : t.allowed_labels) = std::move(*labels);
  }
  if (j.contains("allow_gpu_cotenancy")) {
    Result<bool> b = Bool(j, "allow_gpu_cotenancy", "");
    if (!b.ok()) return b.error();
    t.allow_gpu_cotenancy = *b;
  }
  return t;
}

Result<PriorityClass> DecodePriorityClassRequest(std::string_view body) {
  Result<Json> parsed = ParseObject(body, kClassNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  GP_RETURN_IF_ERROR(
      OnlyFields(j, {"name", "value", "preemptible", "may_borrow", "grace_period_s", "min_runtime_s", "default"}, ""));
  PriorityClass pc;
  Result<std::string> name = Str(j, "name", "", 63);
  if (!name.ok()) return name.error();
  if (!ValidName(*name)) return InvalidArgument("'name' must be lower-case letters, digits and '-'");
  pc.name = *name;
  Result<int64_t> value = Int(j, "value", -1000000000, 1000000000, "");
  if (!value.ok()) return value.error();
  pc.value = static_cast<int32_t>(*value);
  for (const char* key : {"preemptible", "may_borrow", "default"}) {
    if (!j.contains(key)) continue;
    Result<bool> b = Bool(j, key, "");
    if (!b.ok()) return b.error();
    const std::string k = key;
    (k == "preemptible" ? pc.preemptible : k == "may_borrow" ? pc.may_borrow : pc.is_default) = *b;
  }
  if (j.contains("grace_period_s")) {
    Result<int64_t> g = Int(j, "grace_period_s", 0, 86400, "");
    if (!g.ok()) return g.error();
    pc.grace_period = Duration::Seconds(*g);
  }
  if (j.contains("min_runtime_s")) {
    Result<int64_t> m = Int(j, "min_runtime_s", 0, 7 * 86400, "");
    if (!m.ok()) return m.error();
    pc.min_runtime = Duration::Seconds(*m);
  }
  return pc;
}

int HttpStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kUnauthenticated: return 401;
    case ErrorCode::kPermissionDenied: return 403;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kConflict: return 409;
    case ErrorCode::kResourceExhausted: return 413;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kInternal: return 500;
  }
  return 500;
}

std::string ErrorBody(const Error& e, const std::string& details) {
  Json j = {{"error", {{"code", std::string(ErrorCodeName(e.code))}, {"message", e.message},
                       {"details", details}}}};
  // A message may quote a path segment that is not UTF-8: replace, never throw.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

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

namespace {

// "4.10" or 4.1 -> 4100000. At most six decimals, within [0, PriceList::kMaxMicrosPerGpuHour].
Result<int64_t> PriceMicros(const Json& v, const std::string& where) {
  const Error bad = InvalidArgument("'" + where + "' must be a price per GPU-hour in [0, 1000000] with at most six decimals, "
                                    "such as \"4.10\"");
  int64_t micros = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() ? v.get<uint64_t>() > 1'000'000 : (v.get<int64_t>() < 0 || v.get<int64_t>() > 1'000'000)) {
      return bad;
    }
    micros = v.get<int64_t>() * 1'000'000;
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(d >= 0 && d <= 1e6)) return bad;
    const double scaled = d * 1e6;
    micros = std::llround(scaled);
    if (std::fabs(scaled - static_cast<double>(micros)) > 1e-3) return bad;  // finer than a micro
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const size_t dot = s.find('.');
    const std::string whole = s.substr(0, dot), frac = dot == std::string::npos ? "" : s.substr(dot + 1);
    if (whole.empty() || whole.size() > 7 || frac.size() > 6 || (dot != std::string::npos && frac.empty()) ||
        whole.find_first_not_of("0123456789") != std::string::npos ||
        frac.find_first_not_of("0123456789") != std::string::npos) {
      return bad;
    }
    micros = std::stoll(whole) * 1'000'000 + (frac.empty() ? 0 : std::stoll(frac + std::string(6 - frac.size(), '0')));
  } else {
    return bad;
  }
  if (micros < 0 || micros > PriceList::kMaxMicrosPerGpuHour) return bad;
  return micros;
}

}  // namespace

Result<int64_t> DecodePriceMicros(std::string_view json_value, const std::string& where) {
  const Json v = Json::parse(json_value, nullptr, false);
  if (v.is_discarded()) return InvalidArgument("'" + where + "' is not a price");
  return PriceMicros(v, where);
}

std::string MicrosToDecimal(int64_t micros) {
  std::string frac = std::to_string(micros % 1'000'000);
  return std::to_string(micros / 1'000'000) + "." + std::string(6 - frac.size(), '0') + frac;
}

Result<PriceList> DecodePriceList(const State& state, std::string_view body,
                                  std::optional<Time>* effective_from) {
  Result<Json> parsed = ParseObject(body, kPricesNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  if (effective_from != nullptr) {
    GP_RETURN_IF_ERROR(OnlyFields(j, {"flavors", "bill_reserved_idle", "effective_from"}, ""));
    if (auto it = j.find("effective_from"); it != j.end() && !it->is_null()) {
      if (!it->is_string()) return InvalidArgument("'effective_from' must be an RFC 3339 string");
      Result<Time> t = ParseRfc3339(it->get<std::string>());
      if (!t.ok()) return InvalidArgument("'effective_from': " + t.error().message);
      *effective_from = *t;
    }
  } else {
    GP_RETURN_IF_ERROR(OnlyFields(j, {"flavors", "bill_reserved_idle"}, ""));
  }
  PriceList out;
  if (j.contains("bill_reserved_idle")) {
    Result<bool> b = Bool(j, "bill_reserved_idle", "");
    if (!b.ok()) return b.error();
    out.bill_reserved_idle = *b;
  }
  auto flavors = j.find("flavors");
  if (flavors == j.end() || !flavors->is_object()) {
    return InvalidArgument("'flavors' must be an object: flavor -> {per_gpu_hour[, on_demand_per_gpu_hour]}");
  }
  for (const auto& [name, p] : flavors->items()) {
    Result<FlavorId> f = state.catalogue().Find(name);
    if (!f.ok()) return InvalidArgument("unknown flavor '" + name + "'");
    if (!p.is_object()) return InvalidArgument("'flavors." + name + "' must be an object");
    GP_RETURN_IF_ERROR(OnlyFields(p, {"per_gpu_hour", "on_demand_per_gpu_hour"}, "flavors." + name + "."));
    if (!p.contains("per_gpu_hour")) return InvalidArgument("missing field 'flavors." + name + ".per_gpu_hour'");
    Result<int64_t> list = PriceMicros(p["per_gpu_hour"], "flavors." + name + ".per_gpu_hour");
    if (!list.ok()) return list.error();
    out.micros_per_gpu_hour[*f] = *list;
    if (p.contains("on_demand_per_gpu_hour")) {
      Result<int64_t> od = PriceMicros(p["on_demand_per_gpu_hour"], "flavors." + name + ".on_demand_per_gpu_hour");
      if (!od.ok()) return od.error();
      out.on_demand_micros_per_gpu_hour[*f] = *od;
    }
  }
  return out;
}

std::string PriceListToJson(const State& state, const PriceList& prices) {
  Json flavors = Json::object();
  for (const auto& [f, micros] : prices.micros_per_gpu_hour) {
    Json p = {{"per_gpu_hour", MicrosToDecimal(micros)}};
    if (auto od = prices.on_demand_micros_per_gpu_hour.find(f); od != prices.on_demand_micros_per_gpu_hour.end()) {
      p["on_demand_per_gpu_hour"] = MicrosToDecimal(od->second);
    }
    flavors[state.catalogue().model(f).name] = p;
  }
  return Json{{"flavors", flavors}, {"bill_reserved_idle", prices.bill_reserved_idle}}.dump();
}

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int extra = 0;
    uint32_t cp = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      extra = 1, cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      extra = 2, cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      extra = 3, cp = b & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // truncated sequence
    for (int k = 1; k <= extra; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

namespace {

// node_selector: [{"key", "operator": In|NotIn|Exists|DoesNotExist, "values"}], at most 16, each
// In or Exists within the tenant's allowed_labels when it has any.
Result<std::vector<LabelRequirement>> NodeSelector(const Json& j, const Tenant& tenant) {
  const Json& sel = j["node_selector"];
  if (!sel.is_array() || sel.size() > 16) return InvalidArgument("'node_selector' must be a list of at most 16 requirements");
  std::vector<LabelRequirement> out;
  for (size_t i = 0; i < sel.size(); ++i) {
    const std::string where = "node_selector[" + std::to_string(i) + "]";
    const Json& r = sel[i];
    if (!r.is_object()) return InvalidArgument("'" + where + "' must be an object");
    GP_RETURN_IF_ERROR(OnlyFields(r, {"key", "operator", "values"}, where + "."));
    LabelRequirement req;
    Result<std::string> key = Str(r, "key", where + ".", 253);
    if (!key.ok()) return key.error();
    GP_RETURN_IF_ERROR(CheckLabelPart(*key, true, where));
    req.key = *key;
    Result<std::string> op = Str(r, "operator", where + ".", 16);
    if (!op.ok()) return op.error();
    bool known = false;
    for (SelectorOp o : {SelectorOp::kIn, SelectorOp::kNotIn, SelectorOp::kExists, SelectorOp::kDoesNotExist}) {
      if (SelectorOpName(o) == *op) {
        req.op = o;
        known = true;
      }
    }
    if (!known) return InvalidArgument("'" + where + ".operator' must be In, NotIn, Exists or DoesNotExist");
    const bool with_values = req.op == SelectorOp::kIn || req.op == SelectorOp::kNotIn;
    if (with_values) {
      if (!r.contains("values") || !r["values"].is_array() || r["values"].empty() || r["values"].size() > 64) {
        return InvalidArgument("'" + where + ".values' must list 1 to 64 values for " + *op);
      }
      for (const Json& v : r["values"]) {
        if (!v.is_string()) return InvalidArgument("'" + where + ".values' must be strings");
        GP_RETURN_IF_ERROR(CheckLabelPart(v.get<std::string>(), false, where));
        req.values.push_back(v.get<std::string>());
      }
      std::sort(req.values.begin(), req.values.end());
      req.values.erase(std::unique(req.values.begin(), req.values.end()), req.values.end());
    } else if (r.contains("values") && !(r["values"].is_array() && r["values"].empty())) {
      return InvalidArgument("'" + where + "': " + *op + " takes no values");
    }
    // The tenant's whitelist: what In and Exists may ask for.
    if (!tenant.allowed_labels.empty() && (req.op == SelectorOp::kIn || req.op == SelectorOp::kExists)) {
      const auto allowed = [&](const std::string& label) {
        return std::binary_search(tenant.allowed_labels.begin(), tenant.allowed_labels.end(), label);
      };
      const auto key_allowed = [&] {
        return std::any_of(tenant.allowed_labels.begin(), tenant.allowed_labels.end(),
                           [&](const std::string& l) { return l.rfind(req.key + "=", 0) == 0; });
      };
      for (const std::string& v : req.values) {
        if (!allowed(req.key + "=" + v)) {
          return Error{ErrorCode::kPermissionDenied, "tenant " + tenant.name + " may not select nodes by " + req.key + "=" + v};
        }
      }
      if (req.op == SelectorOp::kExists && !key_allowed()) {
        return Error{ErrorCode::kPermissionDenied, "tenant " + tenant.name + " may not select nodes by " + req.key};
      }
    }
    out.push_back(std::move(req));
  }
  return out;
}

// The job's priority_class, or the class marked default when it names none.
Result<PriorityClassId> JobPriorityClass(const State& state, const Json& j) {
  if (!j.contains("priority_class")) {
    std::string names;
    for (const PriorityClass& pc : state.priority_classes()) {
      if (pc.is_default) return pc.id;
      names += (names.empty() ? "" : ", ") + pc.name;
    }
    return InvalidArgument("'priority_class' is required: no class is marked default (" + names + ")");
  }
  Result<std::string> pc = Str(j, "priority_class", "");
  if (!pc.ok()) return pc.error();
  Result<PriorityClassId> pcid = state.FindPriorityClass(*pc);
  if (!pcid.ok()) return InvalidArgument(pcid.error().message);
  return *pcid;
}

}  // namespace

Result<JobSpec> DecodeJobRequest(const State& state, const Principal& caller, std::string_view body) {
  Result<Json> parsed = ParseObject(body, kJobNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  GP_RETURN_IF_ERROR(OnlyFields(j, {"tenant", "name", "priority_class", "replicas", "resources",
                                     "duration_estimate_s", "command", "topology", "cpu_milli",
                                     "memory_mib", "checkpointable", "reservation", "node_selector"}, ""));
  JobSpec spec;
  Result<std::string> tenant = Str(j, "tenant", "");
  if (!tenant.ok()) return tenant.error();
  Result<TenantId> tid = state.FindTenant(*tenant);
  if (!tid.ok() || !caller.Sees(*tid)) return NotFound("unknown tenant '" + *tenant + "'");
  spec.tenant = *tid;
  Result<std::string> name = Str(j, "name", "");
  if (!name.ok()) return name.error();
  spec.name = *name;
  Result<PriorityClassId> pcid = JobPriorityClass(state, j);
  if (!pcid.ok()) return pcid.error();
  spec.priority_class = *pcid;
  if (j.contains("replicas")) {  // one replica unless asked
    Result<int64_t> replicas = Int(j, "replicas", 1, 1024, "");
    if (!replicas.ok()) return replicas.error();
    spec.replicas = static_cast<uint16_t>(*replicas);
  }
  // Without an estimate, the tenant's default_duration_s (State::ValidateSpec fills it in).
  const Tenant& ten = state.tenant(spec.tenant);
  if (j.contains("node_selector")) {
    Result<std::vector<LabelRequirement>> sel = NodeSelector(j, ten);
    if (!sel.ok()) return sel.error();
    spec.node_selector = std::move(*sel);
  }
  if (j.contains("duration_estimate_s")) {
    Result<int64_t> dur = Int(j, "duration_estimate_s", 1, 365 * 86400, "");
    if (!dur.ok()) return dur.error();
    spec.estimated_duration = Duration::Seconds(*dur);
  } else if (ten.limits.default_duration.is_infinite()) {
    return InvalidArgument("'duration_estimate_s' is required: tenant " + ten.name +
                           " has no default_duration_s (an admin sets one in the tenant's limits)");
  }

  auto res = j.find("resources");
  if (res == j.end() || !res->is_object()) return InvalidArgument("'resources' must be an object");
  GP_RETURN_IF_ERROR(OnlyFields(*res, {"flavor", "gpus", "mig_profile", "gpu_fraction", "memory_gb"},
                                "resources."));
  Result<std::string> flavor = Str(*res, "flavor", "resources.");
  if (!flavor.ok()) return flavor.error();
  Result<FlavorId> f = state.catalogue().Find(*flavor);
  if (!f.ok()) return InvalidArgument(f.error().message);
  spec.shape.flavor = *f;
  const int forms = res->contains("gpus") + res->contains("mig_profile") + res->contains("gpu_fraction");
  if (forms != 1) {
    return InvalidArgument("'resources' needs exactly one of 'gpus', 'mig_profile', 'gpu_fraction'");
  }
  if (res->contains("gpus")) {
    Result<int64_t> g = Int(*res, "gpus", 1, 16, "resources.");
    if (!g.ok()) return g.error();
    spec.shape.kind = ShapeKind::kWholeGpus;
    spec.shape.gpus = static_cast<uint8_t>(*g);
  } else if (res->contains("mig_profile")) {
    Result<std::string> p = Str(*res, "mig_profile", "resources.", 32);
    if (!p.ok()) return p.error();
    const int idx = state.catalogue().model(*f).ProfileIndexByName(*p);
    if (idx < 0) return InvalidArgument("unknown MIG profile '" + *p + "' for " + *flavor);
    spec.shape.kind = ShapeKind::kMigProfile;
    spec.shape.mig_profile = static_cast<uint8_t>(idx);
  } else {
    const Json& fr = (*res)["gpu_fraction"];
    if (!fr.is_number()) return InvalidArgument("'resources.gpu_fraction' must be a number");
    const double x = fr.get<double>();
    const double milli = std::round(x * 1000);
    if (!(x > 0 && x <= 1) || std::fabs(milli - x * 1000) > 1e-6) {
      return InvalidArgument("'resources.gpu_fraction' must be in (0, 1] in steps of 0.001");
    }
    Result<int64_t> mem = Int(*res, "memory_gb", 1, 1024, "resources.");
    if (!mem.ok()) return mem.error();
    spec.shape.kind = ShapeKind::kGpuFraction;
    spec.shape.milli = static_cast<uint16_t>(milli);
    spec.shape.gpu_memory_mib = static_cast<uint32_t>(*mem * 1024);
  }
  auto cmd = j.find("command");
  if (cmd == j.end() || !cmd->is_array() || cmd->empty() || cmd->size() > 256) {
    return InvalidArgument("'command' must be a non-empty array of at most 256 strings");
  }
  size_t command_bytes = 0;
  for (const Json& a : *cmd) {
    if (!a.is_string() || a.get<std::string>().size() > 4096) {
      return InvalidArgument("'command' items must be strings of at most 4096 characters");
    }
    spec.command.push_back(a.get<std::string>());
    command_bytes += spec.command.back().size();
  }
  // Every job's command lives in memory and in the journal: bounded per job.
  if (command_bytes > kMaxCommandBytes) {
    return InvalidArgument("'command' holds " + std::to_string(command_bytes) + " bytes; at most " +
                           std::to_string(kMaxCommandBytes) + " (64 KiB) are allowed (put long inputs in a file)");
  }
  if (auto t = j.find("topology"); t != j.end()) {
    if (!t->is_object()) return InvalidArgument("'topology' must be an object");
    GP_RETURN_IF_ERROR(OnlyFields(*t, {"level", "required"}, "topology."));
    Result<std::string> level = Str(*t, "level", "topology.", 32);
    if (!level.ok()) return level.error();
    bool known = false;
    for (TopologyLevel l : {TopologyLevel::kNode, TopologyLevel::kNvlinkDomain, TopologyLevel::kBlock}) {
      if (TopologyLevelName(l) == *level) {
        spec.topology.level = l;
        known = true;
      }
    }
    if (!known) return InvalidArgument("'topology.level' must be node, nvlink-domain or block");
    if (auto r = t->find("required"); r != t->end()) {
      if (!r->is_boolean()) return InvalidArgument("'topology.required' must be a boolean");
      spec.topology.required = r->get<bool>();
    }
  }
  for (const char* key : {"cpu_milli", "memory_mib"}) {
    if (j.contains(key)) {
      Result<int64_t> v = Int(j, key, 0, int64_t{1} << 40, "");
      if (!v.ok()) return v.error();
      (std::string(key) == "cpu_milli" ? spec.shape.cpu_milli : spec.shape.memory_mib) = *v;
    }
  }
  if (auto c = j.find("checkpointable"); c != j.end()) {
    if (!c->is_boolean()) return InvalidArgument("'checkpointable' must be a boolean");
    spec.checkpointable = c->get<bool>();
  }
  if (j.contains("reservation")) {
    // The id as the API shows it ("12"); another tenant's reservation is as unknown as a
    // missing one (ValidateSpec).
    Result<std::string> rid = Str(j, "reservation", "", 19);
    if (!rid.ok()) return rid.error();
    if (rid->find_first_not_of("0123456789") != std::string::npos || (*rid)[0] == '0') {
      return InvalidArgument("'reservation' must be a reservation id such as \"12\"");
    }
    spec.reservation = ReservationId(std::stoull(*rid));
  }
  return state.ValidateSpec(std::move(spec));
}

Result<nlohmann::json> ParseTokenRequest(std::string_view body) { return ParseObject(body, kTokenNeeds); }

std::string EmptyBodyMessage(std::string_view method, std::string_view path) {
  std::string_view needs = "send a JSON object";
  if (path == "/v1/jobs") needs = kJobNeeds;
  if (path == "/v1/tenants") needs = kTenantNeeds;
  if (path.rfind("/v1/tenants/", 0) == 0 && method == "PATCH") needs = kTenantPatchNeeds;
  if (path == "/v1/priority-classes") needs = kClassNeeds;
  if (path == "/v1/reservations") needs = kReservationNeeds;
  if (path == "/v1/prices") needs = kPricesNeeds;
  if (path == "/v1/tokens") needs = kTokenNeeds;
  return "the request has no body (no Content-Length): " + std::string(needs) +
         " (every request's fields are in /v1/openapi.json)";
}

}  // namespace gpupool
