// Request decoders: untrusted JSON to validated values. Malformed JSON, wrong types, unknown
// fields, out-of-range values and unknown names are errors with a message that says which
// field; nothing here throws or changes state. The fuzz target (tests/fuzz) drives these.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "accounting/report.h"
#include "api/auth.h"
#include "model/state.h"

namespace gpupool {

// POST /v1/jobs:
// {"tenant": T, "name": S, "priority_class": P, "replicas": N,
//  "resources": {"flavor": F, "gpus": G} | {"flavor": F, "mig_profile": "1g.10gb"} |
//               {"flavor": F, "gpu_fraction": 0.25, "memory_gb": 20},
//  "duration_estimate_s": D, "command": [...], optional "topology": {"level", "required"},
//  "cpu_milli", "memory_mib", "checkpointable"}
// A tenant the caller may not see is reported as unknown (no existence leak).
// The most bytes a job's command may hold, all arguments together.
inline constexpr size_t kMaxCommandBytes = 64 * 1024;
Result<JobSpec> DecodeJobRequest(const State& state, const Principal& caller, std::string_view body);

// POST /v1/tenants (base == nullptr) and PATCH /v1/tenants/{name} (base: the current tenant;
// fields present replace theirs, "quotas" replaces the whole map):
// {"name", "weight": >0, "quotas": {FLAVOR: {"guaranteed", "borrow_limit", "lend_limit"}},
//  "limits": {"max_replicas", "max_job_gpus", "default_duration_s", "max_duration_s"},
//  "allow_gpu_cotenancy"}. GPU amounts are numbers of GPUs, exact to 1/7000 GPU.
// `allow_overcommit` (POST and PATCH only; nullptr refuses the field) receives the request's
// "allow_overcommit": guarantees above capacity are then accepted (and audited) by the caller.
Result<Tenant> DecodeTenantRequest(const State& state, std::string_view body, const Tenant* base,
                                   bool* allow_overcommit = nullptr);

// POST /v1/priority-classes: {"name", "value", "preemptible", "may_borrow", "grace_period_s"}.
Result<PriorityClass> DecodePriorityClassRequest(std::string_view body);

// POST /v1/reservations: {"tenant": T, "flavor": F, "gpus": N, "start": RFC3339, "end": RFC3339}
// or, for cluster admins, a maintenance window: {"maintenance": true, "flavor", "gpus", "start",
// "end"} (no tenant). Whole GPUs, 1..100000; start < end. Feasibility is the calendar's call.
struct ReservationRequest {
  TenantId tenant;  // invalid for maintenance
  FlavorId flavor;
  GpuEq amount;
  Time start, end;
  bool maintenance = false;
};
Result<ReservationRequest> DecodeReservationRequest(const State& state, const Principal& caller,
                                                    std::string_view body);

// GET /v1/availability query: flavor with gpus and duration_s [and after] (the earliest start),
// or flavor with start and end (GPUs still reservable). Mixing the two forms is an error.
struct AvailabilityQuery {
  FlavorId flavor;
  bool earliest = false;
  GpuEq amount;                // earliest: whole GPUs, 1..100000
  Duration duration;           // earliest: 1 s .. 10 years
  std::optional<Time> after;   // earliest: optional
  Time start, end;             // window form: start < end
};
Result<AvailabilityQuery> DecodeAvailabilityQuery(const State& state,
                                                  const std::map<std::string, std::string>& query);

// GET /v1/calendar query: flavor, start < end, step_s (1 s .. 366 days).
struct CalendarQuery {
  FlavorId flavor;
  Time start, end;
  Duration step;
};
Result<CalendarQuery> DecodeCalendarQuery(const State& state, const std::map<std::string, std::string>& query);

// GET /v1/usage query: from (RFC 3339, required); to (optional: now); tenant (optional: a
// cluster admin gets every tenant, anyone else their own; another tenant's name is "not found");
// group_by: a comma list of "flavor" and "kind" (default both; "none" for neither);
// format: json (default) or csv.
struct UsageQuery {
  Time from;
  std::optional<Time> to;
  std::optional<TenantId> tenant;
  bool by_flavor = true, by_kind = true;
  bool csv = false;
};
Result<UsageQuery> DecodeUsageQuery(const State& state, const Principal& caller,
                                    const std::map<std::string, std::string>& query);

// A price list (PUT /v1/prices, the configuration's `prices:`):
//   {"flavors": {"h100-80gb": {"per_gpu_hour": "4.10", "on_demand_per_gpu_hour": 9.8}},
//    "bill_reserved_idle": true}
// Prices are currency per GPU-hour, a decimal string (exact) or a number, with at most six
// decimals, in [0, 1e6]. Every key is checked; unknown flavors and fields are errors. With
// `effective_from` non-null, the field "effective_from" (RFC 3339: when the list takes effect;
// null: not given) is accepted too and stored there when present.
Result<PriceList> DecodePriceList(const State& state, std::string_view body,
                                  std::optional<Time>* effective_from = nullptr);
// The same shape back, prices as decimal strings with six decimals.
std::string PriceListToJson(const State& state, const PriceList& prices);
// One price (JSON text of a string or number, as in a price list) in micros; `where` names it.
Result<int64_t> DecodePriceMicros(std::string_view json_value, const std::string& where);
// 12345678 -> "12.345678" (micros >= 0).
std::string MicrosToDecimal(int64_t micros);

// RFC 3339 date-time: "2026-12-01T10:00:00Z", with optional fractional seconds (kept to the
// millisecond; finer digits must be zero) and a "Z" or "+HH:MM"/"-HH:MM" offset. Years
// 1970..9999. Nothing else is accepted (no lowercase t/z, no missing seconds).
Result<Time> ParseRfc3339(std::string_view s);

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
// Text from outside JSON bodies (headers, paths, YAML) must pass before it is stored or echoed.
bool ValidUtf8(std::string_view s);

// The HTTP status for an error code.
int HttpStatus(ErrorCode code);
// {"error": {"code", "message", "details"}}
std::string ErrorBody(const Error& e, const std::string& details = "");

// POST /v1/tokens's body as a JSON object; an empty one says what a token needs.
Result<nlohmann::json> ParseTokenRequest(std::string_view body);
// The 400 for a POST, PUT or PATCH that came without a body (the HTTP server refuses one without
// a Content-Length before a handler runs): what the route's body must hold.
std::string EmptyBodyMessage(std::string_view method, std::string_view path);

}  // namespace gpupool
