// Prices: exact decimal amounts per GPU-hour, and the price list's JSON.
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

}  // namespace gpupool
