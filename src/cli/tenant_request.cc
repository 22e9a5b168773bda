#include "cli/tenant_request.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "cli/client_request.h"

namespace gpupool::cli {
namespace {

// "4", "0.5" -> a number of GPUs; "none" -> null (no limit) where `none_ok`.
Result<Json> GpuAmount(const std::string& text, const std::string& where, bool none_ok) {
  if (none_ok && text == "none") return Json(nullptr);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0) {
    return InvalidArgument(where + ": '" + text + "' is not a number of GPUs");
  }
  if (v == std::floor(v) && v < 1e15) return Json(static_cast<int64_t>(v));
  return Json(v);
}

// "h100-80gb=8,borrow=4,lend=none" -> {"h100-80gb", {"guaranteed": 8, "borrow_limit": 4}};
// "h100-80gb=none" -> {"h100-80gb", null}.
Result<std::pair<std::string, Json>> ParseQuota(const std::string& text) {
  const std::string where = "--quota " + text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return InvalidArgument(where + ": want FLAVOR=G[,borrow=B][,lend=L]");
  const std::string flavor = text.substr(0, eq);
  std::string rest = text.substr(eq + 1);
  if (rest == "none") return std::make_pair(flavor, Json(nullptr));
  Json quota = Json::object();
  bool first = true;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string part = rest.substr(0, comma);
    std::string key = "guaranteed", value = part;
    if (!first) {
      const size_t e = part.find('=');
      const std::string name = part.substr(0, e);
      if (e == std::string::npos || (name != "borrow" && name != "lend")) {
        return InvalidArgument(where + ": after the guarantee come borrow=B and lend=L, not '" + part + "'");
      }
      key = name + "_limit";
      value = part.substr(e + 1);
    }
    Result<Json> amount = GpuAmount(value, where, !first);
    if (!amount.ok()) return amount.error();
    if (!amount->is_null()) quota[key] = *amount;
    first = false;
    if (comma == std::string::npos) break;
    rest = rest.substr(comma + 1);
  }
  return std::make_pair(flavor, quota);
}

// "max-replicas=8" -> {"max_replicas", 8}; "max-duration=2h" -> {"max_duration_s", 7200}.
Result<std::pair<std::string, Json>> ParseLimit(const std::string& text) {
  const std::string where = "--limit " + text;
  const size_t eq = text.find('=');
  std::string key = text.substr(0, eq);
  for (char& c : key) c = c == '_' ? '-' : c;
  if (eq == std::string::npos) return InvalidArgument(where + ": want KEY=VALUE");
  const std::string value = text.substr(eq + 1);
  if (key == "max-replicas" || key == "max-job-gpus") {
    Result<Json> n = GpuAmount(value == "none" ? "0" : value, where, false);
    if (!n.ok()) return n.error();
    if (key == "max-replicas" && !n->is_number_integer()) return InvalidArgument(where + ": a whole number");
    return std::make_pair(std::string(key == "max-replicas" ? "max_replicas" : "max_job_gpus"), *n);
  }
  if (key == "default-duration" || key == "max-duration") {
    Result<int64_t> seconds = value == "none" ? Result<int64_t>(0) : ParseDuration(value);
    if (!seconds.ok()) return InvalidArgument(where + ": " + seconds.error().message);
    return std::make_pair(std::string(key == "max-duration" ? "max_duration_s" : "default_duration_s"), Json(*seconds));
  }
  if (key == "max-pending-jobs") {
    const std::string n = value == "none" ? "0" : value;
    if (n.empty() || n.size() > 8 || n.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument(where + ": a whole number of jobs (none: no limit)");
    }
    return std::make_pair(std::string("max_pending_jobs"), Json(std::stoll(n)));
  }
  return InvalidArgument(where + ": the limits are max-replicas, max-job-gpus, default-duration, max-duration and "
                                 "max-pending-jobs");
}

}  // namespace

bool HasTenantFieldFlags(const Args& args) {
  return args.Has("weight") || args.Has("quota") || args.Has("limit") || args.Has("allow-gpu-cotenancy");
}

Result<Json> TenantFieldsFromArgs(const Args& args, const Json* current) {
  Json body = Json::object();
  if (args.Has("weight")) {
    Result<Json> w = GpuAmount(args.Str("weight", ""), "--weight", false);
    if (!w.ok()) return InvalidArgument("--weight must be a number, not '" + args.Str("weight", "") + "'");
    body["weight"] = *w;
  }
  if (args.Has("quota")) {
    Json quotas = current ? current->value("quotas", Json::object()) : Json::object();
    for (const std::string& text : args.All("quota")) {
      Result<std::pair<std::string, Json>> q = ParseQuota(text);
      if (!q.ok()) return q.error();
      if (q->second.is_null() && current == nullptr) return InvalidArgument("--quota " + text + ": a new tenant has no quota to remove");
      if (q->second.is_null()) {
        quotas.erase(q->first);
      } else {
        quotas[q->first] = q->second;
      }
    }
    body["quotas"] = quotas;
  }
  for (const std::string& text : args.All("limit")) {
    Result<std::pair<std::string, Json>> l = ParseLimit(text);
    if (!l.ok()) return l.error();
    body["limits"][l->first] = l->second;
  }
  if (args.Has("allow-gpu-cotenancy")) {
    const std::string v = args.Str("allow-gpu-cotenancy", "");
    if (v != "true" && v != "false") return InvalidArgument("--allow-gpu-cotenancy must be true or false");
    body["allow_gpu_cotenancy"] = v == "true";
  }
  return body;
}

Result<Json> TenantRequestFromYaml(const std::string& yaml_text) { return ObjectFromYaml(yaml_text, {"name"}); }

Json EditableTenant(const Json& view) {
  Json out = Json::object();
  for (const char* key : {"name", "weight", "quotas", "limits", "allow_gpu_cotenancy"}) {
    if (view.is_object() && view.contains(key)) out[key] = view[key];
  }
  return out;
}

Result<Json> TenantPatch(const Json& before, const Json& after) {
  if (!after.is_object()) return InvalidArgument("the tenant must be a mapping of its fields");
  Json patch = Json::object();
  for (const auto& [key, value] : after.items()) {
    if (!before.contains(key) || before[key] != value) patch[key] = value;
  }
  // A limit taken out means no limit: PATCH keeps the limits it is not sent.
  const Json old_limits = before.value("limits", Json::object());
  const Json new_limits = after.value("limits", Json::object());
  if (old_limits.is_object() && new_limits.is_object()) {
    for (const auto& [key, value] : old_limits.items()) {
      if (!new_limits.contains(key)) patch["limits"][key] = 0;
    }
  }
  return patch;
}

}  // namespace gpupool::cli
