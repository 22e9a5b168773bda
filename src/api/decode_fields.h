// The request decoders' shared field readers (decode.cc, decode_job.cc, decode_query.cc,
// decode_prices.cc): typed reads of JSON fields with the error messages DESIGN.md §10 shows,
// what each request needs when its body is empty, and label checks. Internal to src/api.
#pragma once

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/decode.h"

namespace gpupool::decode_internal {

using Json = nlohmann::json;

inline Status OnlyFields(const Json& j, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [k, v] : j.items()) {
    if (!allowed.count(k)) return InvalidArgument("unknown field '" + where + k + "'");
  }
  return Ok();
}

inline Result<std::string> Str(const Json& j, const char* key, const std::string& where, size_t max = 256) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument("missing field '" + where + key + "'");
  if (!it->is_string()) return InvalidArgument("'" + where + key + "' must be a string");
  std::string s = it->get<std::string>();
  if (s.empty() || s.size() > max) {
    return InvalidArgument("'" + where + key + "' must be 1.." + std::to_string(max) + " characters");
  }
  return s;
}

inline Result<int64_t> Int(const Json& j, const char* key, int64_t lo, int64_t hi, const std::string& where) {
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
inline constexpr const char* kJobNeeds =
    "a job needs 'tenant', 'name', 'resources' ({'flavor'} and one of 'gpus', 'mig_profile' or 'gpu_fraction') "
    "and 'command'";
inline constexpr const char* kTenantNeeds = "a tenant needs at least 'name' (and usually 'quotas')";
inline constexpr const char* kTenantPatchNeeds = "send the fields to change, e.g. {\"weight\": 2}";
inline constexpr const char* kClassNeeds = "a priority class needs 'name' and 'value'";
inline constexpr const char* kReservationNeeds =
    "a reservation needs 'tenant' (or 'maintenance': true), 'flavor', 'gpus', 'start' and 'end'";
inline constexpr const char* kPricesNeeds = "a price list needs 'flavors': {FLAVOR: {'per_gpu_hour': \"2.99\"}}";
inline constexpr const char* kTokenNeeds = "a token needs 'name' and 'role' (and 'tenant' for a tenant's roles)";

// `needs`: what the body must hold, said when it is empty.
inline Result<Json> ParseObject(std::string_view body, std::string_view needs = "") {
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

inline Result<bool> Bool(const Json& j, const char* key, const std::string& where) {
  const Json& v = j.at(key);
  if (!v.is_boolean()) return InvalidArgument("'" + where + key + "' must be a boolean");
  return v.get<bool>();
}

// A number of GPUs, exact in GpuEq units (1/7000 GPU).
inline Result<GpuEq> Gpus(const Json& j, const char* key, const std::string& where) {
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

inline bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
    if (!ok) return false;
  }
  return true;
}


inline bool LabelChar(char c, bool key) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || (key && c == '/');
}

// A label key (1..253 characters: letters, digits, '-', '_', '.', '/') or value (0..63, no '/').
inline Status CheckLabelPart(const std::string& s, bool key, const std::string& where) {
  const size_t max = key ? 253 : 63;
  if ((key && s.empty()) || s.size() > max || !std::all_of(s.begin(), s.end(), [key](char c) { return LabelChar(c, key); })) {
    return InvalidArgument(where + ": '" + s.substr(0, 64) + "' is not a label " + (key ? "key" : "value") +
                           " (letters, digits, '-', '_', '.'" + (key ? ", '/'" : "") + "; at most " +
                           std::to_string(max) + ")");
  }
  return Ok();
}

// A list of "key=value" labels, sorted.
inline Result<std::vector<std::string>> LabelList(const Json& j, const char* field) {
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

}  // namespace gpupool::decode_internal
