// Request decoders for tenants, priority classes and tokens; the error body; UTF-8 and the
// empty-body message. Jobs, queries and prices are in decode_job.cc, decode_query.cc and
// decode_prices.cc; their shared field readers in decode_fields.h.
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

Result<Tenant> DecodeTenantRequest(const State& state, std::string_view body, const Tenant* base,
                                   bool* allow_overcommit) {
  Result<Json> parsed = ParseObject(body, base ? kTenantPatchNeeds : kTenantNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  GP_RETURN_IF_ERROR(OnlyFields(j, {"name", "weight", "quotas", "limits", "allow_gpu_cotenancy", "required_labels",
                                    "allowed_labels", "allow_overcommit", "queue_policy"}, ""));
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
    if (!(x > 0 && x <= 1000) || milli < 1 || std::fabs(milli - x * 1000) > 1e-6) {
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
  if (j.contains("queue_policy")) {  // "" or null: the scheduler's
    const Json& q = j["queue_policy"];
    Result<std::string> name = q.is_null() || (q.is_string() && q.get<std::string>().empty())
                                   ? Result<std::string>(std::string())
                                   : Str(j, "queue_policy", "", 16);
    if (!name.ok()) return name.error();
    if (name->empty()) {
      t.queue_policy.reset();
    } else {
      Result<QueueOrder> o = ParseQueueOrder(*name);
      if (!o.ok()) return InvalidArgument("'queue_policy': " + o.error().message);
      t.queue_policy = *o;
    }
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
